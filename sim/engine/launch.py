"""Launch overhead, and the shared mechanisms a run can make free.

A kernel's **device time** is what its units take from the first block's start to the last
block's end: ``Result.total_cycles`` (``device_cycles``). Public on-board figures are
taken around it: a host timer around a call ("with launch") also counts the runtime's
launch of the kernel and the device's start and end of the task (argument and code
fetch, the first block's pipeline fill, the last block's drain and completion report).
``[chip.launch] overhead_us`` of the target is that fixed part, one per launch: the run
reports it as ``Result.launch_cycles`` and ``with_launch_cycles = device + launch``,
never inside ``total_cycles`` (a single unit's figure stays its device time, the figure
the single-op calibration data measure).

``free`` names shared mechanisms a run treats as free, so a user sees what each costs
(``sim.whatif``): ``MECHANISMS`` lists them with what each is.
"""

from __future__ import annotations

from collections.abc import Iterable

from sim.base.errors import UserError
from sim.engine.gm import MECHANISMS as GM_MECHANISMS

__all__ = ["MECHANISMS", "free_set", "launch_cycles"]

MECHANISMS = {
    **GM_MECHANISMS,
    "launch": "the fixed launch overhead of a call ([chip.launch]; reported apart from "
    "device time)",
}


def free_set(free: Iterable[str] | str | None) -> frozenset:
    """The mechanism names of ``free`` (a name or several), checked against ``MECHANISMS``."""
    if free is None:
        return frozenset()
    names = (free,) if isinstance(free, str) else tuple(free)
    for n in names:
        if n not in MECHANISMS:
            raise UserError(
                f"free: no shared mechanism {n!r}; expected one of {', '.join(MECHANISMS)}"
            )
    return frozenset(names)


def launch_cycles(target, free: frozenset = frozenset()) -> int:
    """Cycles of the fixed launch overhead of one call on ``target`` (0 when free or the
    target has no ``[chip.launch]``)."""
    if "launch" in free:
        return 0
    us = float(target.chip.get("launch", {}).get("overhead_us", 0.0))
    return int(round(us * 1e-6 * target.clock_hz))
