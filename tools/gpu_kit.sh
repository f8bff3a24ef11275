#!/usr/bin/env bash
# The GPU machine kit (docs/gpu-runtime.md): fills .whl/ (gitignored) with the
# cp312 wheels that a GPU machine without internet needs to run `make gpu-check`
# (Python 3.12 with numpy, pytest, torch, cupy and cuda-bindings already there):
#   - xdsl 0.74.0 and its dependencies (immutabledict, ordered-set);
#   - pycuda 2026.1, built here (PyPI has only its sdist) with a Python 3.12
#     against a stub libcuda.so (this machine has the CUDA toolkit, no driver):
#     the wheel links libcuda.so.1 by name and the real driver resolves it there;
#   - pycuda's run-time dependencies (pytools, platformdirs, mako, siphash24).
# About 7 MB. The pycuda build takes ~6-8 minutes of CPU and is skipped when its
# wheel is already in .whl/.
#
# usage: tools/gpu_kit.sh            (env: PIP_PYTHON: the Python whose pip downloads;
#                                      PY312: the Python 3.12 that builds pycuda;
#                                      CUDA_ROOT: the toolkit with include/cuda.h)
set -euo pipefail
cd "$(dirname "$0")/.."
WHL="$PWD/.whl"
PIP_PYTHON=${PIP_PYTHON:-$(if [ -x .venv/bin/python ]; then echo .venv/bin/python; else echo python3; fi)}
if [ -z "${PY312:-}" ]; then  # the first Python 3.12 that runs (pyenv's shims may not)
    for c in /root/.pyenv/versions/3.12*/bin/python python3.12; do
        if "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then PY312=$c; break; fi
    done
fi
PY312=${PY312:-python3.12}
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
PYCUDA=2026.1
mkdir -p "$WHL"

download() {
    "$PIP_PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHL" "$@"
}

echo "gpu_kit: xdsl and pycuda's dependencies"
download xdsl==0.74.0 immutabledict==4.3.1 ordered-set==4.1.0 \
    pytools==2026.1.1 platformdirs==4.14.5 mako==1.4.3 siphash24==1.9

if ls "$WHL"/pycuda-$PYCUDA-cp312-*.whl >/dev/null 2>&1; then
    echo "gpu_kit: pycuda wheel already built"
else
    "$PY312" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
        || { echo "gpu_kit: PY312=$PY312 is not a Python 3.12" >&2; exit 1; }
    test -f "$CUDA_ROOT/include/cuda.h" || { echo "gpu_kit: no $CUDA_ROOT/include/cuda.h" >&2; exit 1; }
    B=$(mktemp -d)
    trap 'rm -rf "$B"' EXIT
    echo "gpu_kit: building pycuda $PYCUDA for Python 3.12 in $B (several minutes)"
    "$PIP_PYTHON" -m pip download -q pycuda==$PYCUDA --no-binary pycuda --no-deps -d "$B"
    # a link-time libcuda.so (SONAME libcuda.so.1) defining every cu* function of
    # cuda.h; never loaded at run time on the GPU machine, where the driver's is
    mkdir -p "$B/stub"
    printf '#include <cuda.h>\n#include <cudaProfiler.h>\n' \
        | gcc -E -P -I"$CUDA_ROOT/include" -x c - \
        | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u > "$B/stub/syms.txt"
    {
        echo 'static const char m[]="CUDA driver stub library (no NVIDIA driver installed)";'
        echo 'int cuGetErrorString(int e,const char**p){if(p)*p=m;return 0;}'
        echo 'int cuGetErrorName(int e,const char**p){if(p)*p="CUDA_ERROR_STUB_LIBRARY";return 0;}'
        grep -vxE 'cuGetErrorString|cuGetErrorName' "$B/stub/syms.txt" | while read -r s; do
            echo "int $s(void){return 34;}"
        done
    } > "$B/stub/stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$B/stub/libcuda.so" "$B/stub/stub.c"
    ln -sf libcuda.so "$B/stub/libcuda.so.1"
    (
        cd "$B" && tar xzf pycuda-$PYCUDA.tar.gz && cd pycuda-$PYCUDA
        # no curand (the pip-built toolkit has no curand.h); CUDA_ROOT given, so
        # the nvcc on PATH is not consulted
        PATH="$CUDA_ROOT/bin:$PATH" "$PY312" configure.py --cuda-root="$CUDA_ROOT" \
            --no-cuda-enable-curand --cudadrv-lib-dir="$B/stub" >/dev/null
        PATH="$CUDA_ROOT/bin:$PATH" nice -n 19 "$PY312" -m pip wheel -q . --no-deps -w "$WHL"
    )
fi
ls -la "$WHL"
du -sh "$WHL"
