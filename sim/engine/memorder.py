"""The data barrier and the scalar data cache operations run (``sim.isa.memorder``).

Both are scalar-unit instructions (instructions-more.md §3.9; communication.md §5.2 lists
``dcci`` and ``dsb`` among TNOTIFY's scalar-unit steps): an item on PIPE_S that holds the
scalar unit, so every later instruction of the unit issues after it.

* ``dsb`` costs ``[sync] dsb_cycles``. What it orders is what the pipe barriers before it
  order (a ``pto.fence.barrier_all``'s drain): the simulator's GM writes are visible to
  every core and rank once their pipe item has ended, so the barrier adds only its latency.
* ``dcci`` costs ``[sync] dcci_line_cycles`` for one line, ``dcci_all_cycles`` for the
  whole cache. Its effect on data is none here: the simulator's scalar loads and stores
  read and write GM itself (no scalar data cache is modelled), so a scalar load after a
  ``TWAIT`` already sees what the peer wrote; only its time is charged.

The latencies are [silent] in the reference (communication.md §11); the targets' values
are ASSUMPTIONs stated in their machine.toml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.base.errors import UserError
from sim.engine.items import SCALAR, Issued
from sim.isa.memorder import CacheInvalid, Dsb
from sim.isa.program import PartView, TensorView

if TYPE_CHECKING:
    from sim.target.model import Target

__all__ = ["MemOrder"]


class MemOrder:
    """Mixin of ``Interpreter``: ``Dsb`` and ``CacheInvalid`` statements."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    target: Target
    seq: int
    views: dict[str, tuple]

    def _memorder_handlers(self) -> dict:
        return {Dsb: self._dsb, CacheInvalid: self._cacheinvalid}

    def _sync_cycles(self, key: str, what: str) -> int:
        v = self.target.sync.get(key)
        if v is None:
            raise UserError(
                f"{what}: the target {self.target.name} gives no [sync] {key} in its "
                f"machine.toml (the latency of this instruction)"
            )
        return int(v)

    def _dsb(self, st: Dsb) -> Issued:
        c = self._sync_cycles("dsb_cycles", f"dsb ({st.loc})")
        self.seq += 1
        text = f"DSB_{st.kind}" + (f" (fence {st.fence})" if st.fence else "")
        return Issued(SCALAR, "PIPE_S", "DSB", c, c, text=text, source=str(st.loc or ""))

    def _cacheinvalid(self, st: CacheInvalid) -> Issued:
        where = f"pto.cmo.cacheinvalid ({st.loc})"
        v = st.target
        if isinstance(v, (PartView, TensorView)) and v.name not in self.views:
            raise UserError(f"{where}: view %{v.name} is used before it is defined")
        key = "dcci_all_cycles" if v is None else "dcci_line_cycles"
        c = self._sync_cycles(key, where)
        self.seq += 1
        text = "ENTIRE_DATA_CACHE" if v is None else f"SINGLE_CACHE_LINE {v}"
        return Issued(SCALAR, "PIPE_S", "DCCI", c, c, text=text, source=str(st.loc or ""))
