"""Output paths, checked before any work starts.

A simulation can run for minutes; finding only afterwards that ``--trace out.txt`` has a
suffix no writer knows, that ``--plot`` names a directory, or that ``/sys/x.csv`` cannot
be written wastes the run and may leave other outputs half written. Every command
therefore lists its outputs as ``Output`` values (the flag, the path, the suffixes its
writer accepts) and ``check_outputs`` refuses the lot, with one clear line, before
anything is simulated or written. It also refuses an output that would overwrite one of
the command's inputs (the kernel, an ``--input`` array) or another output.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import attrs

from sim.base.errors import UserError

__all__ = ["Output", "check_outputs"]


@attrs.frozen
class Output:
    """One output of a command: ``flag`` (for the message), its ``path``, the ``suffixes``
    its writer accepts (empty: any) and whether it is a ``directory`` the writer creates."""

    flag: str
    path: Path = attrs.field(converter=Path)
    suffixes: tuple = attrs.field(default=(), converter=tuple)
    directory: bool = False


def check_outputs(outputs, inputs=()) -> None:
    """Raise a UserError naming the first output that cannot be written as asked."""
    protected = {_same(p): str(p) for p in inputs}
    seen = {}
    for out in outputs:
        where = f"{out.flag} {out.path}"
        key = _same(out.path)
        if key in protected:
            raise UserError(f"{where}: would overwrite the input {protected[key]}")
        if out.suffixes and out.path.suffix.lower() not in out.suffixes:
            raise UserError(
                f"{where}: unknown suffix {out.path.suffix or '(none)'!r}, "
                f"expected one of {', '.join(out.suffixes)}"
            )
        _check_kind(out, where)
        _check_writable(out.path, where)
        if key in seen:
            raise UserError(f"{where}: also written by {seen[key]}")
        seen[key] = where


def _same(path) -> str:
    return os.path.realpath(os.fspath(path))


def _check_kind(out: Output, where: str) -> None:
    p = out.path
    if out.directory:
        if p.exists() and not p.is_dir():
            raise UserError(f"{where}: exists and is not a directory")
        if p.is_dir() and any(p.iterdir()):
            raise UserError(f"{where}: output directory exists and is not empty")
    elif p.is_dir():
        raise UserError(f"{where}: is a directory, expected a file name")
    elif p.exists() and not p.is_file():
        raise UserError(f"{where}: exists and is not a regular file")


def _check_writable(path: Path, where: str) -> None:
    """Open the file for writing without changing it, or create and remove a scratch file
    in its nearest existing directory (the writers create missing parents): permission
    bits alone do not tell (a read-only mount, ``/sys``, root)."""
    try:
        if path.is_file():
            with open(path, "r+b"):
                return
        parent = path.parent.absolute()
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise UserError(f"{where}: {parent} is not a directory")
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as e:
        raise UserError(f"{where}: cannot write there: {e.strerror}") from None
