"""Parsed ``.pto`` files, kept per user so a file is parsed once, not once per process.

``ptosim run flash_attention.pto`` spent a tenth of its time in the parser: loading the
LALR tables (``sim.frontend.lark_cache``) and lowering 2 500 lines into a ``Program``, the
same work on every run of an unchanged file. ``parse_file`` therefore pickles the
``Program`` it built into the user's cache directory (the one the LALR tables use) and a
later process loads it from there: a few milliseconds instead of a fifth of a second.

A kept program is served only for the very text, file name and front end that built it:
the entry's name and its first line are a SHA-256 of the file name as given (it is in
every source location), the text, the source of the packages that turn text into a
``Program`` (``sim.frontend``, ``sim.isa``, ``sim.base``), the lark, numpy and Python
versions. One entry per file name: an edited file replaces its entry. Small files (under
``MIN_BYTES``) parse in a few milliseconds once the tables are loaded and are not kept,
and at most ``MAX_ENTRIES`` files are (the least recently used go first). Every failure
falls back to parsing: no directory, a read-only one, a missing, foreign or corrupt file.
Only a parse that succeeded is kept, with its warnings; a file with an error is parsed
(and reported) every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from functools import lru_cache
from pathlib import Path

import lark
import numpy as np

from sim.base.atomic import atomic_path
from sim.frontend.lark_cache import cache_dir

__all__ = ["entry", "load", "store", "MIN_BYTES", "MAX_ENTRIES"]

MIN_BYTES = 8 << 10
MAX_ENTRIES = 64
_SIM = Path(__file__).resolve().parent.parent
_FRONT_END = ("frontend", "isa", "base")


@lru_cache(maxsize=1)
def _front_end_digest() -> bytes:
    """A digest of the code that turns text into a Program (read once per process)."""
    h = hashlib.sha256()
    for pkg in _FRONT_END:
        for f in sorted((_SIM / pkg).iterdir()):
            if f.suffix in (".py", ".lark"):
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    # a Program holds numpy dtypes (sim.isa.dtypes): their pickles are numpy's
    h.update(f"{lark.__version__}\0{np.__version__}\0{sys.version_info[:2]}".encode())
    return h.digest()


def entry(filename: str, text: str) -> tuple[Path, bytes] | None:
    """(the entry's path, its digest line) for ``text`` read from ``filename``, or None
    when the cache is off or the file too small to be worth keeping: what ``load`` and
    ``store`` take."""
    where = cache_dir()
    if where is None or len(text) < MIN_BYTES:
        return None
    name = hashlib.sha256(filename.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    h = hashlib.sha256(_front_end_digest())
    h.update(
        filename.encode("utf-8", "surrogateescape") + b"\0" + text.encode("utf-8", "surrogatepass")
    )
    return where / "programs" / f"{name}.pickle", h.hexdigest().encode()


def load(entry):
    """The Program kept for an ``entry``, or None."""
    if entry is None:
        return None
    path, digest = entry
    try:
        with open(path, "rb") as f:
            if f.readline().rstrip(b"\n") != digest:
                return None
            program = pickle.load(f)
        os.utime(path)  # recently used: pruned last
        return program
    except Exception:  # noqa: BLE001 - missing, unreadable, truncated: parse it
        return None


def store(entry, program) -> None:
    """Keep ``program`` for an ``entry`` (quietly not, on failure)."""
    if entry is None:
        return
    path, digest = entry
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(digest + b"\n")
            pickle.dump(program, f, protocol=pickle.HIGHEST_PROTOCOL)
        _prune(path.parent)
    except (OSError, pickle.PicklingError, RecursionError):
        pass


def _prune(folder: Path) -> None:
    """Drop the least recently used entries beyond ``MAX_ENTRIES``."""
    entries = list(folder.glob("*.pickle"))
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
