"""tfc.core.progress: a bar on a terminal, nothing in a pipe or with quiet."""
import io
import sys

from tfc.core import progress as prog


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_pipe_is_quiet(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert list(prog.progress(range(5), desc="x")) == list(range(5))
    with prog.bar("y", total=3) as b:
        b.update(3)
    assert err.getvalue() == ""


def test_terminal_draws_and_quiet_wins(monkeypatch):
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.delenv("TFC_QUIET", raising=False)
    assert list(prog.progress(range(4), desc="calibrate")) == [0, 1, 2, 3]
    assert "calibrate" in err.getvalue() and "4/4" in err.getvalue()
    err.truncate(0)
    err.seek(0)
    assert list(prog.progress(range(4), desc="calibrate", quiet=True)) == [0, 1, 2, 3]
    monkeypatch.setenv("TFC_QUIET", "1")
    assert list(prog.progress(range(4), desc="calibrate")) == [0, 1, 2, 3]
    assert err.getvalue() == ""
