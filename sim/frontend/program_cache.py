"""Parsed ``.pto`` files, kept per user so a file is parsed once, not once per process.

``ptosim run flash_attention.pto`` spent a tenth of its time in the parser: loading the
LALR tables (``sim.frontend.lark_cache``) and lowering 2 500 lines into a ``Program``, the
same work on every run of an unchanged file. ``parse_file`` therefore pickles the
``Program`` it built into the user's private cache folder (``sim.frontend.user_cache``,
which the LALR tables use too) and a later process loads it from there: a few
milliseconds instead of a fifth of a second.

A kept program is served only for the very text, file name and front end that built it:
the entry's name and its first line are a SHA-256 of the file name as given (it is in
every source location), the text, the source of the packages that turn text into a
``Program`` (``sim.frontend``, ``sim.isa``, ``sim.base``), the lark, numpy and Python
versions. That digest is also sealed inside the entry with the user's key, so an entry
moved under another file's name, or planted by someone else, is never loaded; what
loads must be a ``Program``. One entry per file name: an edited file replaces its
entry, and only files named as this module names them (``<sha256>.pickle``) are loaded
or pruned, never another file in the folder. Small files (under
``MIN_BYTES``) parse in a few milliseconds once the tables are loaded and are not kept,
and at most ``MAX_ENTRIES`` files are (the least recently used go first). Every failure
falls back to parsing: no directory, a read-only one, a missing, foreign or corrupt file.
Only a parse that succeeded is kept, with its warnings; a file with an error is parsed
(and reported) every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pickle
import re
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim.frontend import user_cache
from sim.isa.program import Program

__all__ = ["entry", "load", "store", "MIN_BYTES", "MAX_ENTRIES"]

MIN_BYTES = 8 << 10
MAX_ENTRIES = 64
_SIM = Path(__file__).resolve().parent.parent
_FRONT_END = ("frontend", "isa", "base")
_OWN = re.compile(r"[0-9a-f]{64}\.pickle")  # the names entry() gives, and no other


@lru_cache(maxsize=1)
def _front_end_digest() -> bytes:
    """A digest of the code that turns text into a Program (read once per process)."""
    h = hashlib.sha256()
    for pkg in _FRONT_END:
        for f in sorted((_SIM / pkg).iterdir()):
            if f.suffix in (".py", ".lark"):
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    # a Program holds numpy dtypes (sim.isa.dtypes): their pickles are numpy's; lark's
    # version is in the source of its package's __init__, read without importing lark (a
    # cached program needs no parser, and lark takes a tenth of a second to import)
    h.update(_lark_init() + f"\0{np.__version__}\0{sys.version_info[:2]}".encode())
    return h.digest()


def _lark_init() -> bytes:
    spec = importlib.util.find_spec("lark")
    origin = spec.origin if spec is not None else None
    return Path(origin).read_bytes() if origin else b"no lark"


def entry(filename: str, text: str) -> tuple[Path, bytes] | None:
    """(the entry's path, its digest line) for ``text`` read from ``filename``, or None
    when the cache is off or the file too small to be worth keeping: what ``load`` and
    ``store`` take."""
    root = user_cache.cache_dir()
    if root is None or len(text) < MIN_BYTES:
        return None
    name = hashlib.sha256(filename.encode("utf-8", "surrogateescape")).hexdigest()
    h = hashlib.sha256(_front_end_digest())
    h.update(
        filename.encode("utf-8", "surrogateescape") + b"\0" + text.encode("utf-8", "surrogatepass")
    )
    return root / "programs" / f"{name}.pickle", h.hexdigest().encode()


def load(entry) -> Program | None:
    """The Program kept for an ``entry``, or None."""
    if entry is None:
        return None
    path, digest = entry
    try:
        payload = user_cache.read(path, digest)  # the user's own, sealed for this digest
        if payload is None:
            return None
        program = pickle.loads(payload)
        if not isinstance(program, Program):
            return None
        os.utime(path)  # recently used: pruned last
        return program
    except Exception:  # noqa: BLE001 - unreadable, truncated, an old IR class: parse it
        return None


def store(entry, program) -> None:
    """Keep ``program`` for an ``entry`` (quietly not, on failure)."""
    if entry is None:
        return
    path, digest = entry
    try:
        if user_cache.folder(path.parent.name) != path.parent:
            return  # no private folder to keep it in
        user_cache.write(path, digest, pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL))
        _prune(path.parent)
    except (OSError, pickle.PicklingError, RecursionError):
        pass


def _prune(folder: Path) -> None:
    """Drop the least recently used entries beyond ``MAX_ENTRIES`` (own entries only)."""
    entries = [p for p in folder.iterdir() if _OWN.fullmatch(p.name)]
    if len(entries) <= MAX_ENTRIES:
        return

    def used(p):
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    for old in sorted(entries, key=used)[: len(entries) - MAX_ENTRIES]:
        with contextlib.suppress(OSError):
            old.unlink()
