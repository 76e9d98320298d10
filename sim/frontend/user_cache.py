"""The user's cache folder of pto-sim, private by construction, and its sealed entries.

The front end keeps built LALR tables (``sim.frontend.lark_cache``) and parsed programs
(``sim.frontend.program_cache``) here as pickles, and a pickle runs code when it is
loaded. A cache entry is therefore only ever loaded when nobody but the user could have
written it, and when the user's own process wrote it for this very input:

* the folders are created ``0700`` and the entries ``0600`` whatever the umask; a folder
  owned by someone else is not used at all (the cache is off); one of the user's own that
  is group- or world-writable (made by an older version under ``umask 000``) is made
  ``0700`` before use, and what lies in it is checked entry by entry;
* an entry is opened without following a symbolic link and used only when it is a plain
  file owned by the user and not group- or world-writable;
* every entry is sealed: its first line is the public digest of what it was built from
  (the *binding*: the grammar, or the file name and text), its second an HMAC-SHA256 of
  the binding and the payload keyed by a per-user secret (``key``, 32 random bytes, ``0600``
  in the cache folder). The MAC is checked before a byte of the payload is unpickled, so a
  planted entry (its digest is computable from public data, its MAC is not) or one copied
  over from another input (its binding differs) is never unpickled.

Why a signed pickle rather than a format that cannot run code: a ``Program`` is a graph of
a few dozen IR classes holding numpy dtypes, and lark's tables are lark's own pickle; a
code-free serialisation of either would be a second copy of the IR to keep in step with
it. The MAC gives the same guarantee (only bytes this user's pto-sim wrote are loaded).

The folder is ``$PTOSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/pto-sim``, else
``~/.cache/pto-sim``; ``PTOSIM_CACHE_DIR=`` (empty) turns the cache off. Every failure
(a folder that cannot be made, a read-only one, a missing, foreign or corrupt entry)
only means the cache is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["cache_dir", "folder", "read", "write"]

_KEY = "key"
_KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def cache_dir() -> Path | None:
    """The user's cache directory of pto-sim, None when turned off."""
    env = os.environ.get("PTOSIM_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pto-sim"


def _uid() -> int:
    return os.getuid()


def _private_dir(path: Path) -> bool:
    """Make ``path`` (a folder) exist, be the user's and writable by nobody else."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != _uid():
        return False
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError:
            return False
    return True


def folder(*parts: str) -> Path | None:
    """The private cache folder ``cache_dir()/parts``, made if need be; None when the cache
    is off or the folder is not safely the user's."""
    root = cache_dir()
    if root is None:
        return None
    with contextlib.suppress(OSError):
        root.parent.mkdir(parents=True, exist_ok=True)
    where = root
    if not _private_dir(where):
        return None
    for part in parts:
        where = where / part
        if not _private_dir(where):
            return None
    return where


def _open_own(path: Path):
    """``path`` opened for reading, only when a plain file of the user's that nobody else
    may write (None otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != _uid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _key() -> bytes | None:
    """The user's secret of the cache (made on first use), None when it cannot be had."""
    where = folder()
    if where is None:
        return None
    path = where / _KEY
    f = _open_own(path)
    if f is None and not path.exists():
        _write_private(path, os.urandom(_KEY_BYTES), replace=False)
        f = _open_own(path)
    if f is None:
        return None
    with f:
        if os.fstat(f.fileno()).st_mode & 0o077:
            return None  # readable by others: not a secret
        key = f.read(_KEY_BYTES + 1)
    return key if len(key) == _KEY_BYTES else None


def _write_private(path: Path, data: bytes, replace: bool = True) -> None:
    """Write ``data`` to ``path`` whole, mode 0600 (a temporary file renamed over it; with
    ``replace=False`` an existing file is kept: two processes making the key agree)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(data)
        if replace:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _mac(key: bytes, binding: bytes, payload: bytes) -> bytes:
    return hmac.new(key, binding + b"\n" + payload, hashlib.sha256).hexdigest().encode()


def read(path: Path, binding: bytes) -> bytes | None:
    """The payload of the sealed entry at ``path`` when it is the user's own, private, was
    written for ``binding`` and carries the user's MAC, in a folder of the user's that
    nobody else may write; None otherwise."""
    try:
        st = os.stat(path.parent)
    except OSError:
        return None
    if st.st_uid != _uid() or st.st_mode & 0o022:
        return None
    f = _open_own(path)
    if f is None:
        return None
    with f:
        if f.readline().rstrip(b"\n") != binding:
            return None
        mac = f.readline().rstrip(b"\n")
        payload = f.read()
    key = _key()
    if key is None or not hmac.compare_digest(mac, _mac(key, binding, payload)):
        return None
    return payload


def write(path: Path, binding: bytes, payload: bytes) -> None:
    """Seal ``payload`` for ``binding`` into ``path`` (a file in a ``folder()``); raises
    OSError when it cannot."""
    key = _key()
    if key is None:
        raise PermissionError(f"{path.parent}: no private cache key")
    _write_private(path, binding + b"\n" + _mac(key, binding, payload) + b"\n" + payload)
