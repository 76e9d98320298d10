"""What the units of one chip share beyond SimPy.

Each unit has its own interpreter and pipes; they meet in the cross-unit flags of
``sim.engine.xunit`` (FIFO slots) and ``sim.engine.ffts`` (the FFTS counters of cross-core
flags and the all-core barrier), in the data queues of the cube<->vector FIFOs and in the
reserved buffers each function declares. ``Chip`` makes one ``ChipState`` per run.
"""

from __future__ import annotations

from collections import deque

from sim.engine.ffts import FftsChannels, FftsSet, FftsWait
from sim.engine.xunit import CrossFlags
from sim.isa.program import PipeOp, walk

__all__ = ["ChipState"]


class ChipState:
    """What the units of a chip share beyond SimPy: cross-unit flags (FIFO slots and the
    FFTS counters of ``sim.engine.ffts``), FIFO data, the reserved buffers of every
    function, the launched ``units`` ((core, unit) pairs)."""

    def __init__(self, env, target, units=((0, "AIV0"),), ideal_sync=False):
        self.flags = CrossFlags(env, target.sync.get("cross_core_flag_cycles", 0))
        self.units = tuple(units)
        # the units of each core (of each block: a block's units share its core index),
        # looked up by the flags of one core without a walk of the whole launch
        self._by_core: dict = {}
        for u in self.units:
            self._by_core.setdefault(u[0], []).append(u)
        self.ffts = FftsChannels(env, ideal=ideal_sync)
        self.flags.routes.update({FftsSet: self.ffts, FftsWait: self.ffts})
        self.data_path = target.chip.get("fifo_data_path", "gm")
        self.vector_units = int(target.units.get("AIV", {}).get("count", 2))
        self._queues: dict = {}
        self._reserved: dict = {}
        # a run with ranks (sim.engine.ranks): this chip's rank and the links every rank
        # reaches the others through (sim.engine.links); 0 and None on one chip
        self.rank = 0
        self.links = None
        self.sdma = None  # this rank's SDMA engines, made at its first async op (sim.engine.sdma)

    def of_core(self, core) -> tuple:
        """The launched (core, unit) pairs of ``core``, in launch order."""
        return tuple(self._by_core.get(core, ()))

    def queue(self, core, fifo, direction, sub) -> deque:
        q = self._queues.get((core, fifo, direction, sub))
        if q is None:
            q = self._queues[(core, fifo, direction, sub)] = deque()
        return q

    def reserved(self, program, func: str, name):
        """(base, size) of ``reserve_buffer {name}`` in function ``func``, or None."""
        key = (func, name)
        if key not in self._reserved:
            found = None
            try:
                fn = program.function(func)
            except KeyError:
                fn = None
            for st in walk(fn.body) if fn is not None else ():
                if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer":
                    a = dict(st.attrs)
                    if a.get("name") == name:
                        found = (int(a.get("base", 0) or 0), int(a.get("size", 0) or 0))
                        break
            self._reserved[key] = found
        return self._reserved[key]
