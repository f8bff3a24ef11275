"""Writing a file whole or not at all (the CLI's -o, the compile report, generated
docs): an error never leaves an empty or partial file behind."""
from __future__ import annotations

import errno
import os
import stat
import tempfile


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file in
    the same directory, renamed over ``path`` once complete (so ``-o`` may name
    the input, and an error never leaves an empty or partial file). A symbolic
    link stays one: its target is replaced. A file keeps its mode and owner
    (where the process may set them); one the user may not write is refused.
    Anything but a regular file (a device, a FIFO, /dev/stdout) is written
    directly: renaming over it would replace the node."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):  # before realpath: /dev/stdout -> pipe:[N]
        with open(path, "w") as f:
            f.write(text)
        return
    path = os.path.realpath(path)
    if st is not None and not os.access(path, os.W_OK):  # the rename would ignore the file's mode
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        if st is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        else:
            mode = st.st_mode & 0o7777
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except PermissionError:  # only root may give a file away
                    pass
        os.chmod(tmp, mode)  # after chown, which clears set-id bits
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
