"""The LALR tables of the grammars, built once per user instead of once per process.

Building a lark LALR parser (the grammar analysis and its tables) costs about a third of
a second for ``grammar.lark``; a ``ptosim run`` of a ``.pto`` kernel paid it on every
start. The built parser is therefore pickled (lark's own ``save`` / ``load``) into the
user's private cache folder (``sim.frontend.user_cache``: the user's own, sealed with the
user's key, checked before anything is unpickled) and loaded from there by later processes.

A cached parser is used only for the very grammar and tools that built it: the file name
is a SHA-256 of the grammar text, the parser options, the lark version and the Python
version, and the same digest heads the file and is checked on load (a stale or foreign
file is never served). Only the grammar analysis is cached: the lexer class and the
transformer are this process's own, bound at load. Every failure falls back to building:
a cache directory that cannot be made or written (a read-only home), a missing, truncated
or corrupt file (it is rebuilt and replaced whole, never left half written).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from pathlib import Path

import lark
from lark import Lark

from sim.frontend.user_cache import cache_dir, folder, read, write

__all__ = ["cached_lark", "cache_dir"]  # cache_dir: sim.frontend.user_cache's

# options lark lets a loaded parser take from the caller (the rest come from the file)
_AT_LOAD = ("transformer", "postlex", "lexer_callbacks")


def _digest(text: str, options: dict) -> str:
    opts = "".join(f"{k}={_spell(v)};" for k, v in sorted(options.items()) if k not in _AT_LOAD)
    key = "\0".join((text, opts, lark.__version__, "{}.{}".format(*sys.version_info[:2])))
    return hashlib.sha256(key.encode()).hexdigest()


def _spell(value) -> str:
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def cached_lark(grammar: Path, **options) -> Lark:
    """``Lark(grammar's text, **options)``, loaded from the user cache when built before."""
    text = grammar.read_text()
    where = folder()
    if where is None:
        return Lark(text, **options)
    digest = _digest(text, options)
    path = where / f"{grammar.stem}-{digest[:40]}.lark.pickle"
    at_load = {k: v for k, v in options.items() if k in _AT_LOAD}
    try:
        payload = read(path, digest.encode())  # the user's own, sealed for this grammar
        if payload is not None:
            # lark's own cache loads this way (``Lark.load`` takes no transformer)
            return Lark.__new__(Lark)._load(pickle.loads(payload), **at_load)
    except Exception:  # noqa: BLE001 - truncated, an older lark's tables: build it
        pass
    parser = Lark(text, **options)
    try:
        buf = io.BytesIO()
        parser.save(buf, _AT_LOAD)
        write(path, digest.encode(), buf.getvalue())
    except OSError:  # a read-only or full cache directory: run without it
        pass
    return parser
