"""Output files replaced whole, never left half written.

A run that stops (an error, Ctrl-C, a full disk) while writing ``--trace out.parquet``
must not leave a truncated file where a good one was, or an empty one. Every writer of
a user-visible output therefore writes to a temporary file in the same directory (same
file system, so the rename is atomic) with the same suffix (writers pick the format by
it), and renames it over the target only once it is complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path`` with its suffix; on success it replaces
    ``path`` (keeping an existing file's permission bits), on any exception it is removed
    and ``path`` is left as it was."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}"
    )
    os.close(fd)
    try:
        yield tmp
        with contextlib.suppress(OSError):
            os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
