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

import json
import math
import os
from pathlib import Path

import attrs

from sim.base.atomic import atomic_path, probe
from sim.base.errors import UserError

__all__ = ["Output", "check_outputs", "print_json", "plain", "write_run_outputs"]


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
    seen: dict = {}
    for out in outputs:
        where = f"{out.flag} {out.path}"
        try:
            _check(out, where, protected, seen)
        except OSError as e:  # a name too long to even look up
            raise UserError(f"{where}: cannot write there: {e.strerror}") from None


def _check(out: Output, where: str, protected: dict, seen: dict) -> None:
    """Raise a UserError if ``out`` cannot be written as asked (``seen``: outputs so far)."""
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
    """Open an existing file for writing without changing it, and do what the writer does
    first (``sim.base.atomic``: a temporary file beside the target, in its nearest
    existing directory when the writer creates missing parents): permission bits alone do
    not tell (a read-only mount, ``/sys``, root), and an existing file in a read-only
    folder can be opened but not replaced."""
    try:
        if path.is_file():
            with open(path, "r+b"):
                pass
        probe(path)
    except NotADirectoryError as e:
        raise UserError(f"{where}: {e.filename} is not a directory") from None
    except OSError as e:
        raise UserError(f"{where}: cannot write there: {e.strerror}") from None


def print_json(obj) -> None:
    """One JSON object on stdout: numbers stay numbers (numpy ones too), NaN and inf become
    null, so every --json output parses with a strict reader."""
    print(json.dumps(plain(obj), allow_nan=False))


def plain(v):
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_run_outputs(result, args) -> None:
    """--trace and --plot; of a run with ranks, every rank's rows in one table (``rank``
    and ``launch`` first) and every rank's timeline."""
    if args.trace:
        from sim.trace.export import write_trace

        write_trace(result.trace, args.trace, kernel=result.kernel, target=result.target.name)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        title = (
            f"{result.kernel} on {result.target.name}, "
            f"{result.mode} sync — {result.total_cycles} cycles"
        )
        if hasattr(result, "ranks"):  # a RanksResult
            from sim.trace.plot_ranks import ranks_timeline

            title = f"{result.kernel} on {len(result.ranks)} ranks of " + title.split(" on ", 1)[1]
            fig = ranks_timeline(result.trace, title=title)
        else:
            from sim.trace.plot import gantt

            fig = gantt(result.trace, title=title)
        # a few lanes of ranks make a short figure: its title kept inside
        tight = "tight" if hasattr(result, "ranks") else None
        with atomic_path(args.plot) as tmp:
            fig.savefig(tmp, dpi=120, bbox_inches=tight)
