"""lit configuration: `%tfc-opt` runs `python -m tfc.cli opt` with the
interpreter running lit and this checkout on PYTHONPATH, so the tests work
without installing tfc (Makefile venv, or any venv with lit and filecheck)."""
import os
import shlex
import sys

import lit.formats

config.name = "tfc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py"]

root = os.path.dirname(config.test_source_root)
bin_dir = os.path.dirname(sys.executable)  # the venv's bin: filecheck lives there
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in [root, os.environ.get("PYTHONPATH", "")] if p)
config.substitutions.append(("%tfc-opt", f"{shlex.quote(sys.executable)} -m tfc.cli opt"))
config.substitutions.append(("%tfc", f"{shlex.quote(sys.executable)} -m tfc.cli"))
