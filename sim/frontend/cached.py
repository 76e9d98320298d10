"""``parse_file``: a ``.pto`` file's program from the user's parse cache, parsed only on a
miss. A cached program needs neither lark nor the lowering modules, which the parser
(``sim.frontend.parse``) loads: a ``ptosim run`` of a kernel parsed before starts
without them."""

from __future__ import annotations

import os
from pathlib import Path

from sim.base.errors import UserError
from sim.frontend import program_cache
from sim.frontend.diagnostics import remember_source, unmarked
from sim.isa.program import Program

__all__ = ["parse_file"]


def parse_file(path: str | os.PathLike[str]) -> Program:
    """Parse the ``.pto`` file at ``path`` (diagnostics name it as given)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read: {e}") from None
    text, name = unmarked(text), str(path)
    entry = program_cache.entry(name, text)
    program = program_cache.load(entry)  # parsed by an earlier process
    if program is not None:
        remember_source(name, text)
        return program
    from sim.frontend.parse import parse_text

    program = parse_text(text, name)
    program_cache.store(entry, program)
    return program
