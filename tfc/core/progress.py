"""Progress display for long work (compiling many functions, calibration, training).

One place decides whether a bar is shown: on a terminal (stderr is a TTY) unless the
caller passes ``quiet=True`` or the environment sets ``TFC_QUIET=1``; never in a pipe,
a log file or CI, so captured output stays clean. The bar is tqdm's.
"""
from __future__ import annotations

import os
import sys


def enabled(quiet: bool = False) -> bool:
    """Whether a progress bar would be drawn now."""
    if quiet or os.environ.get("TFC_QUIET", "") not in ("", "0"):
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def progress(iterable, desc: str = "", total: int | None = None, unit: str = "it",
             quiet: bool = False, leave: bool = True):
    """Iterate over ``iterable``, drawing a bar on stderr where ``enabled(quiet)``.

    Yields the items unchanged; ``total`` defaults to ``len(iterable)`` where it has one.
    For a bar advanced by hand (with a loss in its postfix, say) use ``bar``.
    """
    if not enabled(quiet):
        yield from iterable
        return
    from tqdm import tqdm  # imported only when a bar is drawn

    with tqdm(iterable, desc=desc, total=total, unit=unit, leave=leave, file=sys.stderr,
              dynamic_ncols=True) as bar:
        yield from bar


def bar(desc: str = "", total: int | None = None, unit: str = "it", quiet: bool = False):
    """A bar advanced by hand (``.update(n)``, ``.set_postfix(...)``, ``.close()``).

    Where no bar is drawn it is a silent object with the same methods, so callers never
    test ``enabled`` themselves.
    """
    if not enabled(quiet):
        return _Silent()
    from tqdm import tqdm

    return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, dynamic_ncols=True)


class _Silent:
    """tqdm's methods that callers use, doing nothing (no terminal to draw on)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, *args, **kwargs) -> None:
        pass

    def set_description(self, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
