"""Auto mode's static passes: tiles placed and synchronisation inserted as the toolchain does.

* ``to_auto(k, target)``   the program placed and synchronised by the simulator, as the
  compiler's auto mode does (the policy: ``sim.placement.auto``);
* ``plan_auto(k, target)`` the same with what the passes found (``AutoPlan``: placement,
  synchronisation statistics, notes).

The passes work on the IR alone (``ir`` reads accesses and FIFOs, ``inline`` inlines
calls, ``alloc`` places tiles by liveness, ``sync`` inserts flags and barriers,
``metrics`` measures a placed program): they import neither the engine nor SimPy. What
runs a kernel to judge a placement — ``compare``, the manual-mode checks — sits above
the engine, in ``sim.studies``.
"""

from sim.placement.auto import AutoPlan, plan_auto, to_auto

__all__ = ["to_auto", "plan_auto", "AutoPlan"]
