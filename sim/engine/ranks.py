"""A run with ranks: N NPUs, each a whole chip, in one process (docs/concepts/ranks.md).

``run_ranks`` builds one SimPy environment, one ``Chip`` per rank (its own GM arrays, GM
model, cores and ``block_dim``, its own inputs) and one ``Links`` (``sim.engine.links``),
the only object through which ranks meet. Every rank's blocks start at cycle 0; when the
environment runs dry, a unit left unfinished on any rank is a deadlock naming the rank, and
for a ``TWAIT`` the signal, the comparison, the value waited for and the value it holds.

The result is a ``RanksResult``: one ``Result`` per rank and the run's time, that of the
latest rank.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import attrs
import numpy as np

from sim.base.errors import DeadlockError, UserError
from sim.engine.chip import Chip
from sim.engine.deadlock import describe_stuck
from sim.engine.launch import launch_cycles
from sim.engine.links import Links, RankMemory, SignalWait
from sim.engine.result import Result
from sim.engine.sdma import Sdma
from sim.engine.streams import first_cores, working_units
from sim.isa.comm import context_words

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import pandas as pd

    from sim.target.model import Target

__all__ = ["RanksResult", "run_ranks", "rank_inputs", "rank_seed"]


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank ``rank``'s random fills: rank 0 keeps the run's, so one rank fills
    as a run without ranks does; the others differ (their data is their own)."""
    return seed if rank == 0 else seed * 1_000_003 + rank


def rank_inputs(
    ranks: int, common: dict, per_rank: list | None, context: str | None = None
) -> list[dict]:
    """Each rank's inputs: ``common`` (the kernel's own data and ``inputs=`` as a dict) with
    the rank's dict of ``inputs=[...]`` over it, and its communication context in GM
    argument ``context`` (``sim.isa.comm.context_words``) when one is named."""
    if per_rank is None:
        per_rank = [{} for _ in range(ranks)]
    if len(per_rank) != ranks:
        raise UserError(
            f"inputs: a list gives one dict per rank: expected {ranks}, found {len(per_rank)}"
        )
    out = []
    for r, d in enumerate(per_rank):
        if not isinstance(d, dict):
            raise UserError(f"inputs[{r}]: expected a dict of arrays, found {type(d).__name__}")
        mine = {**common, **d}
        if context is not None:
            mine[context] = context_words(r, ranks)
        out.append(mine)
    return out


@attrs.frozen
class RanksResult:
    """The result of a run with ranks: ``ranks[r]`` is rank r's ``Result`` (its trace, its
    GM, its report) of the first kernel; ``streams[r][s]`` that of the s-th kernel launched on
    rank r (``simulate(..., streams=[...])``; the first is ``ranks[r]``); ``total_cycles`` the
    latest end."""

    ranks: tuple
    streams: tuple = ()
    # races across ranks (simulate(..., races=True), sim.engine.rankraces): one line each
    races: tuple = ()
    races_checked: bool = False  # whether races across ranks were checked

    @property
    def kernel(self) -> str:
        return self.ranks[0].kernel

    @property
    def target(self) -> Target:
        return self.ranks[0].target

    @property
    def mode(self) -> str:
        return self.ranks[0].mode

    @property
    def warnings(self) -> tuple:
        return tuple(dict.fromkeys(w for r in self.ranks for w in r.warnings))

    @property
    def total_cycles(self) -> int:
        return max(r.total_cycles for rs in self.streams or (self.ranks,) for r in rs)

    @property
    def trace(self) -> pd.DataFrame:
        """Every rank's trace in one DataFrame, ``rank`` and ``launch`` (the kernel's index
        among those launched on the rank) first: the timelines side by side."""
        import pandas as pd

        frames = []
        for i, rs in enumerate(self.streams or tuple((r,) for r in self.ranks)):
            for j, r in enumerate(rs):
                f = r.trace.copy()
                f.insert(0, "launch", j)
                f.insert(0, "rank", i)
                frames.append(f)
        return pd.concat(frames, ignore_index=True)

    def output(self, name: str, rank: int = 0) -> np.ndarray:
        """GM argument ``name`` of rank ``rank`` after the run."""
        return self.ranks[rank].output(name)

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "target": self.target.name,
            "ranks": len(self.ranks),
            "total_cycles": self.total_cycles,
            # across ranks (as a Result's "races", with the findings); each rank's own
            # (its chip's check) are in per_rank
            "races": {
                "checked": self.races_checked,
                "found": len(self.races),
                "findings": list(self.races),
            },
            "per_rank": [r.to_json() for r in self.ranks],
            # with streams: per rank, every launched kernel's (the first is per_rank's)
            **(
                {"per_stream": [[r.to_json() for r in rs] for rs in self.streams]}
                if self.streams
                else {}
            ),
        }

    def report(self, max_rows: int = 40) -> str:
        head = (
            f"{self.kernel} on {len(self.ranks)} ranks of {self.target.name}: "
            f"{self.total_cycles} cycles (the latest rank's end)"
        )
        parts = [head]
        if self.races:
            n = len(self.races)
            parts.append(f"races across ranks: {n}: " + "; ".join(self.races[:3]))
        elif self.races_checked:
            parts.append("races across ranks: checked, none found")
        for i, rs in enumerate(self.streams or tuple((r,) for r in self.ranks)):
            for j, r in enumerate(rs):
                what = f"rank {i}" + (f", stream {j} ({r.kernel})" if len(rs) > 1 else "")
                parts.append(f"\n=== {what}: {r.total_cycles} cycles ===\n{r.report(max_rows)}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.report()


def run_ranks(
    program,
    tgt,
    ranks: int,
    inputs: list[dict],
    *,
    block_dim: int,
    seed: int,
    warnings: tuple,
    mode: str,
    freed: frozenset,
    limits=None,
    streams: tuple = (),
    check_races: bool = False,
    chip_races: tuple = (),
    race_warning: Callable | None = None,
    **chip_opts: Any,
) -> RanksResult:
    """Run ``program`` (prepared) on ``ranks`` chips of ``tgt``; ``inputs`` one dict per rank.
    ``streams``: further (program, block_dim, mode) launched with it on every rank: each a
    chip of its own units sharing the rank's GM arrays, GM model and SDMA queues (the host's
    compute and communication streams, communication.md §7), on cores of its own
    (``sim.engine.streams.first_cores``: a launch that would share a core is refused).

    ``check_races``: the race check across ranks (``sim.engine.rankraces``);
    ``chip_races``: per launched kernel, whether each rank's chip checks its own races as a
    one-chip run does (first the proof over the dispatch logs, ``sim.engine.racefree``;
    where it does not go through, the whole run again with the detector);
    ``race_warning``: makes a chip's findings a warning of its result too (``run``'s
    manual-mode check, ``sim.engine.run.race_warning``)."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise UserError(f"ranks: expected a positive integer, found {ranks!r}")
    kernels = [(program, block_dim, mode), *streams]
    checked = tuple(chip_races) + (False,) * (len(kernels) - len(chip_races))
    firsts = first_cores([(p.main.name, b, working_units(p, tgt, b)) for p, b, _ in kernels], tgt)
    # the proof reads the order the flags impose, which ideal sync does not keep
    prove = any(checked) and not chip_opts.get("ideal_sync")
    # per rank and kernel: how its chip's races are checked ("" not at all)
    first = [("proof" if prove else "detector") if on else "" for on in checked]
    how = [first] * ranks
    per_rank, links = _launch(
        kernels, firsts, tgt, ranks, inputs, seed, freed, limits, check_races, how, chip_opts
    )
    if "proof" in first:  # where the proof does not go through, the detector's findings
        how = [
            ["detector" if h and not c.race_free() else h for c, h in zip(mine, hs, strict=True)]
            for mine, hs in zip(per_rank, how, strict=True)
        ]
        if any("detector" in hs for hs in how):  # in a run of its own, for those chips
            if limits is not None:
                limits.again()
            per_rank, links = _launch(
                kernels,
                firsts,
                tgt,
                ranks,
                inputs,
                seed,
                freed,
                limits,
                check_races,
                [[h if h == "detector" else "" for h in hs] for hs in how],
                chip_opts,
            )
    table = [
        tuple(
            _result(c, k, tgt, warnings, freed, chip_opts, h, race_warning)
            for c, k, h in zip(mine, kernels, hs, strict=True)
        )
        for mine, hs in zip(per_rank, how, strict=True)
    ]
    found = tuple(links.races.findings) if links.races is not None else ()
    return RanksResult(
        tuple(rs[0] for rs in table), tuple(table) if streams else (), found, check_races
    )


def _launch(
    kernels, firsts, tgt, ranks, inputs, seed, freed, limits, check_races, how, chip_opts
) -> tuple[list[list[Chip]], Links]:
    """Build every rank's chips and the links in one environment and run them dry; the
    chips by rank, and the links. ``how[r][k]``: "detector" runs the race detector in rank
    r's chip of kernel k, "proof" keeps its dispatch logs for the proof instead."""
    import simpy

    chips: list[Chip] = []
    env = limits.environment(lambda: max(c.now() for c in chips)) if limits else simpy.Environment()
    links = Links(env, tgt, ranks, races=check_races)
    per_rank: list[list[Chip]] = []
    sdma = bool(tgt.comm.get("sdma"))
    for r in range(ranks):
        mine: list[Chip] = []
        for (prog, bdim, _), first, h in zip(kernels, firsts, how[r], strict=True):
            chip = Chip(
                prog,
                tgt,
                block_dim=bdim,
                inputs=inputs[r],
                seed=rank_seed(seed, r),
                free=freed,
                limits=limits,
                env=env,
                rank=r,
                links=links,
                shared=(mine[0].gm_state, mine[0].gm) if mine else None,
                first_core=first,
                races=h == "detector",
                race_logs=h == "proof",
                **chip_opts,
            )
            if mine:  # one rank's SDMA queues serve all its streams
                chip.state.sdma = mine[0].state.sdma
            elif sdma:
                chip.state.sdma = Sdma(tgt)
            mine.append(chip)
        links.memories[r] = RankMemory(mine[0].gm_state, inputs[r], rank_seed(seed, r))
        chips += mine
        per_rank.append(mine)
    gc.freeze()
    try:
        with np.errstate(all="ignore"):
            for chip in chips:
                chip.waves.launch()
            env.run()
            while links.recheck():  # a signal a TSTORE wrote: its waiters go on
                env.run()
            if limits is not None:
                limits.check()  # a run shorter than one check interval, too
    finally:
        gc.unfreeze()
    _check(per_rank, links)
    return per_rank, links


def _result(chip, kernel, tgt, warnings, freed, chip_opts, how, race_warning) -> Result:
    """One chip's ``Result`` (as ``sim.engine.run.simulate`` makes it for one chip);
    ``how``: how its races were checked ("proof", "detector"), or falsy when they were not."""
    program, block_dim, mode = kernel
    recording = chip.recording()
    found = chip.races() if how else ()
    notes: tuple = ()
    if found and race_warning is not None:
        notes = (race_warning(found),)
    return Result(
        program.main.name,
        tgt,
        recording,
        dict(chip.gm_state[0]),
        (*warnings, *chip.warnings, *notes),
        found,
        mode=mode,
        races_checked=bool(how),
        races_by=how or "",
        block_dim=block_dim,
        memory=chip.gm.summary(recording.end) if chip.gm_used else {},
        functional=chip_opts.get("functional", True),
        blocks=tuple(chip.waves.table()),
        cores=chip.waves.cores,
        dispatch_cycles=chip.waves.latency,
        launch_cycles=launch_cycles(tgt, freed),
    )


def _check(per_rank: list[list[Chip]], links: Links) -> None:
    """A unit unfinished on any rank: a ``DeadlockError`` naming the ranks (and, for a
    ``TWAIT``, its signal, comparison, value and the value the signal holds); with
    streams, the kernel too."""
    parts: list[str] = []
    entries: list[dict] = []
    chips = [c for mine in per_rank for c in mine]
    for r, chip, several in (
        (r, c, len(mine) > 1) for r, mine in enumerate(per_rank) for c in mine
    ):
        for spec, m in chip.stuck():
            where = f"rank {r} {f'@{spec.function} ' if several else ''}core {m.core} {spec.unit}"
            items = m.stuck()
            blocked = m.dispatch_blocked
            key = blocked[0].flag if blocked is not None else None
            for s in items:
                s["rank"], s["core"], s["unit"] = r, m.core, spec.unit
            if isinstance(key, SignalWait):
                holds = links.values(key).reshape(-1)
                shown = ", ".join(str(int(v)) for v in holds[:8]) + (
                    " ..." if holds.size > 8 else ""
                )
                parts.append(
                    f"{where}: TWAIT ({blocked[0].label(blocked[1])}) waits for "
                    f"{key.text()} on rank {r}, which holds [{shown}] and no rank will "
                    f"write it any more"
                )
                others = [s for s in items if s["pipe"] != "PIPE_S (dispatch)"]
                if others:
                    parts.append(describe_stuck(others, where + " "))
            else:
                parts.append(describe_stuck(items, where + " "))
            entries += items
        left = chip.waves.unstarted()
        if left:
            parts.append(f"rank {r}: {left} of the {chip.waves.block_dim} blocks never started")
    if parts:
        now = max(c.now() for c in chips)
        raise DeadlockError(f"deadlock at cycle {now}: " + "; ".join(parts), entries)
