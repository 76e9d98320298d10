"""Output files replaced whole, never left half written.

A run that stops (an error, Ctrl-C, a full disk) while writing ``--trace out.parquet``
must not leave a truncated file where a good one was, or an empty one. Every writer of
a user-visible output therefore writes to a temporary file in the same directory (same
file system, so the rename is atomic) with the same suffix (writers pick the format by
it), and renames it over the target only once it is complete.

A write that fails for want of room or rights (a full disk, ``ulimit -f``, a read-only
folder, a name the file system will not take) is one ``UserError`` naming the file and
the reason, never a traceback; the temporary file is removed and an older file is left
as it was. ``probe`` does what the writer will do first (make its temporary file beside
the target) so that commands can refuse an output before any work starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from sim.base.errors import UserError

__all__ = ["atomic_path", "atomic_dir", "probe"]

_NAME_MAX = 255  # bytes of one file name on the common file systems (pathconf when known)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path`` with its suffix; on success it replaces
    ``path`` (keeping an existing file's permission bits), on any exception it is removed
    and ``path`` is left as it was."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temporary(target, target.parent)
    except OSError as e:
        raise _cannot(target, e) from None
    try:
        yield tmp
        with contextlib.suppress(OSError):
            os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _cannot(target, e) from None
        raise


@contextlib.contextmanager
def atomic_dir(path):
    """Yield a temporary directory next to ``path`` (absent or an empty directory); on
    success it becomes ``path``, on any exception it is removed with what it holds, so a
    folder of files appears whole or not at all."""
    import shutil

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stem = target.name if len(os.fsencode(target.name)) <= _NAME_MAX // 2 else ""
        tmp = tempfile.mkdtemp(dir=target.parent, prefix=f".{stem}.", suffix=".tmp")
    except OSError as e:
        raise _cannot(target, e) from None
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o777 & ~_umask())
        os.replace(tmp, target)  # over an empty directory too
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise _cannot(target, e) from None
        raise


def probe(path) -> None:
    """Raise the OSError the writer of ``path`` would meet first: a name too long, or no
    right to make its temporary file in the folder (the nearest existing one, when the
    writer has folders to create)."""
    target = Path(path)
    folder = target.parent.absolute()
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    for part in target.parts:
        if len(os.fsencode(part)) > _name_max(folder):
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), part)
    os.unlink(_temporary(target, folder))


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return _NAME_MAX


def _temporary(target: Path, folder: Path) -> str:
    """A new empty file in ``folder`` named after ``target`` (shortened so that its name
    fits wherever ``target``'s does) with its suffix: writers pick the format by it."""
    stem = target.stem if len(os.fsencode(target.name)) <= _NAME_MAX // 2 else ""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{stem}.", suffix=f".tmp{target.suffix}")
    os.close(fd)
    return tmp


def _cannot(target: Path, e: OSError) -> UserError:
    why = e.strerror or " ".join(str(e).split())
    kept = "the earlier file is left as it was" if target.exists() else "nothing was written"
    return UserError(f"{target}: cannot write: {why} ({kept})")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
