"""Manual-mode checks: hand placement against the target's buffer map, overlapping tiles,
and races.

``check_placement`` checks every constant ``TASSIGN`` / ``alloc_tile addr=`` against the
buffer of the tile's location: the tile must lie inside the buffer's capacity, start on
an ``alignment_bytes`` boundary (32 B, programming-model.md §5, §8) and stay out of the
target's reserved ranges (the A2/A3 TMP_UB_OFFSET scratch, §8). It then runs the program
with race detection: two *different* tiles whose bytes overlap and whose accesses no flag
or barrier orders are an error naming both tiles and both byte ranges; overlapping tiles
whose accesses are ordered are legal reuse (ping-pong, in-place views).

``check_races`` lists every race of a run: unordered cross-pipe accesses to overlapping
bytes (RAW / WAR / WAW, naming pipes, instructions and byte ranges), an event id set again
while still pending, a set never waited, and a deadlock (a wait that can never be
satisfied; the run stops there, so races after it are not seen).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from sim.base.errors import DeadlockError, VerifyError
from sim.placement.auto import program_of
from sim.target import load_target

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

    from sim.isa.program import Program
    from sim.kernel.builder import Kernel
    from sim.target.model import Target


__all__ = ["Finding", "check_placement", "check_races", "data_reads", "format_findings"]


@attrs.frozen
class Finding:
    """One problem: ``kind`` is capacity / alignment / reserved / overlap, or a race kind
    (RAW / WAR / WAW / pending_set / unmatched_set) or ``deadlock``."""

    kind: str
    message: str
    first: str = ""  # instruction or tile
    second: str = ""
    space: str = ""  # buffer name or GM:<arg>
    first_range: tuple = ()
    second_range: tuple = ()

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "first": self.first,
            "second": self.second,
            "space": self.space,
            "first_range": list(self.first_range),
            "second_range": list(self.second_range),
        }


_PAIR = re.compile(
    r"touch (%\S+) \[(0x[0-9a-f]+), (0x[0-9a-f]+)\) and (%\S+) "
    r"\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)"
)


def static_findings(prog, tgt, scalars=None) -> list[Finding]:
    """The shared static check (``sim.placement.bounds``): hand-placed constant addresses
    (alloc_tile addr=, TASSIGN, in every function) against the buffer map; with the
    scalar arguments ``scalars``, tensor views too large for 64-bit addresses and negative
    arguments that size or bound something."""
    from sim.placement.bounds import (
        address_problems,
        negative_arguments,
        placements,
        sized_arguments,
        view_spans,
    )

    out = []
    for st, tile, addr, how in placements(prog):
        buf = tgt.buffer(tile.loc.buffer)
        where = f"{st.loc}: " if st.loc else ""
        rng = (addr, addr + tile.type.nbytes)
        reserved = iter(r for r in buf.reserved if addr < r[2] and r[1] < rng[1])
        for rule, text in address_problems(tile, addr, tgt):
            extra = {}
            if rule == "reserved":
                name, lo, hi = next(reserved)
                extra = {"second": name, "second_range": (lo, hi)}
            out.append(
                Finding(
                    rule,
                    f"{where}{how} places {text}",
                    f"%{tile.name}",
                    space=buf.name,
                    first_range=rng,
                    **extra,
                )
            )
    if scalars:  # the order run reports them in (sim.engine.run)
        found = view_spans(prog, scalars) + negative_arguments(sized_arguments(prog), scalars)
        out += [Finding(rule, text, f"%{name}") for rule, name, text in found]
    return out


def _run(prog, target, inputs, block_dim=None, functional=True):
    from sim.studies.compare import run_checked

    return run_checked(prog, target, inputs=inputs, block_dim=block_dim, functional=functional)


def _inputs(program_or_kernel, inputs):
    if hasattr(program_or_kernel, "inputs") and hasattr(program_or_kernel, "program"):
        return {**program_or_kernel.inputs, **(inputs or {})}
    return inputs


def check_placement(
    program_or_kernel: Program | Kernel,
    target: str | Path | Target = "a2a3",
    *,
    inputs: dict[str, Any] | None = None,
    raise_errors: bool = True,
) -> list[Finding]:
    """Placement findings of a manually placed program; raises ``VerifyError`` listing
    them all when there is any and ``raise_errors`` is true."""
    prog = program_of(program_or_kernel)
    tgt = load_target(target)
    findings = static_findings(prog, tgt)
    if not findings:
        try:
            result = _run(prog, tgt, _inputs(program_or_kernel, inputs))
        except DeadlockError as e:
            findings.append(Finding("deadlock", f"overlap analysis incomplete: {e}"))
        else:
            seen = set()
            for race in result.races:
                m = _PAIR.search(race.message)
                if m is None or race.space.startswith("GM:"):
                    continue
                a, b = m.group(1), m.group(4)
                ra = (int(m.group(2), 16), int(m.group(3), 16))
                rb = (int(m.group(5), 16), int(m.group(6), 16))
                key = tuple(sorted((a, b)))
                if key in seen:
                    continue
                seen.add(key)
                findings.append(
                    Finding(
                        "overlap",
                        f"tiles {a} [{ra[0]:#x}, {ra[1]:#x}) and {b} [{rb[0]:#x}, {rb[1]:#x}) "
                        f"overlap in {race.space} and nothing orders their accesses: {race.first} "
                        f"and {race.second} ({race.kind}); order them with a flag or barrier, or "
                        f"move one tile",
                        a,
                        b,
                        race.space,
                        ra,
                        rb,
                    )
                )
    if findings and raise_errors:
        raise VerifyError(
            "placement check failed:\n" + "\n".join(f"  {f.message}" for f in findings)
        )
    return findings


# Scalar statements whose result is data (a GM element, a tile element): in a timing-only
# run tiles hold no computed values, so a loop bound, branch or address taken from one may
# differ from the functional run's.
_DATA_READS = ("pto.load_scalar", "pto.tgetval")


def data_reads(program_or_kernel) -> list[str]:
    """Where the program reads a scalar out of data (``load_scalar``, ``tgetval``), as
    ``op (location)``: what it then does may depend on values only a functional run
    computes."""
    from sim.isa.program import ScalarOp, walk

    prog = program_of(program_or_kernel)
    return [
        f"{st.op.removeprefix('pto.')}" + (f" ({st.loc})" if st.loc else "")
        for f in prog.functions
        for st in walk(f.body)
        if isinstance(st, ScalarOp) and st.op in _DATA_READS
    ]


def check_races(
    program_or_kernel: Program | Kernel,
    target: str | Path | Target = "a2a3",
    *,
    inputs: dict[str, Any] | None = None,
    block_dim: int | None = None,
    functional: bool | None = None,
) -> list[Finding]:
    """Every race of a run of the program as written on ``block_dim`` cores (default: a
    builder kernel's own, else 1) — across units and cores too — and a deadlock if it
    has one.

    The accesses a race check compares are addresses and byte ranges, which tile values do
    not change: by default (``functional=None``) the run is timing-only, as fast as
    ``simulate(..., functional=False)``, unless the program reads scalars out of data
    (``data_reads``), whose loops, branches or addresses may then depend on computed
    values: such a program runs functionally."""
    prog = program_of(program_or_kernel)
    if block_dim is None:
        block_dim = getattr(program_or_kernel, "block_dim", None)
    if functional is None:
        functional = bool(data_reads(prog))
    try:
        result = _run(
            prog,
            load_target(target),
            _inputs(program_or_kernel, inputs),
            block_dim,
            functional,
        )
    except DeadlockError as e:
        return [Finding("deadlock", str(e))]
    return [
        Finding(
            r.kind,
            r.message,
            r.first,
            r.second,
            r.space,
            tuple(r.first_range),
            tuple(r.second_range),
        )
        for r in result.races
    ]


def format_findings(findings: Sequence[Finding], *, kernel: str = "") -> str:
    """The findings as text, one per line, then a count (``clean`` when there is none)."""
    who = f"{kernel}: " if kernel else ""
    if not findings:
        return f"{who}clean: no races, no deadlock"
    lines = [f"{f.kind}: {f.message}" for f in findings]
    n = len(findings)
    lines.append(f"{who}{n} finding{'s' if n != 1 else ''}")
    return "\n".join(lines)
