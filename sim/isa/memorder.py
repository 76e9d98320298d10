"""Memory-ordering statements around GM that other cores and ranks share: the data
barrier and the scalar data cache operations (instructions-more.md §3.9,
communication.md §6).

* ``Dsb`` — ``pto.dsb "DDR" | "UB" | "ALL" | "SEQ"`` (C++ ``dsb(DSB_DDR)`` ...): a data
  barrier of the scalar unit for the named memory; earlier accesses of that memory are
  done before anything later. ``pto.fence.barrier_all #pto.fence_scope<gm|all>`` lowers
  to its pipe barriers then ``dsb(DSB_DDR)``: such a ``Dsb`` carries the fence's scope in
  ``fence`` (it prints as part of the fence).
* ``CacheInvalid`` — ``pto.cmo.cacheinvalid %v single_cache_line`` (C++ ``dcci(addr,
  SINGLE_CACHE_LINE)``) and ``pto.cmo.cacheinvalid all #pto.address_space<gm>``
  (``dcci(0, ENTIRE_DATA_CACHE)``): clean and invalidate the scalar data cache's line of
  ``%v`` (a GM view or pointer), or the whole cache, so that earlier scalar stores reach GM
  and later scalar loads see what other cores and ranks wrote (§6 rules 2-4: the writer's
  ``dcci`` before its fence, the reader's after its ``TWAIT``).

Both are scalar-unit work; their latencies are [silent] in the reference
(communication.md §11): the engine takes them from the target's ``[sync]`` table.
"""

from __future__ import annotations

import attrs

from sim.isa.program import SourceLoc

__all__ = ["DSB_KINDS", "CACHE_LINE", "Dsb", "CacheInvalid"]

DSB_KINDS = ("DDR", "UB", "ALL", "SEQ")  # the census's pto.dsb operands (§2.5)
CACHE_LINE = "single_cache_line"  # the one-line form's keyword (dcci SINGLE_CACHE_LINE)


def _loc_field():
    return attrs.field(default=None, eq=False, repr=False, kw_only=True)


@attrs.frozen
class Dsb:
    """``dsb(kind)``: a data barrier on the scalar unit. ``fence`` is the scope of the
    ``pto.fence.barrier_all`` it comes from ("" for a ``pto.dsb`` of its own)."""

    kind: str = "DDR"
    fence: str = ""
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class CacheInvalid:
    """``dcci``: clean + invalidate the scalar data cache's line holding ``target`` (a
    ``PartView`` or ``GmPtr`` operand), or, with ``target`` None, the entire cache of the
    address space ``space``."""

    target: object = None
    space: str = "gm"
    loc: SourceLoc | None = _loc_field()
