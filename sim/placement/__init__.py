"""Placement and synchronisation: manual-mode checks, auto mode, and the comparison of both.

* ``check_placement(k, target)``  hand placement against the buffer map (capacity, 32-byte
  alignment, reserved scratch) and unordered overlaps of different tiles;
* ``check_races(k, target)``      races, pending / unmatched flags and deadlocks of a run
  (``format_findings`` prints them);
* ``to_auto(k, target)``          the program placed and synchronised by the simulator, as
  the compiler's auto mode does (the policy: ``sim.placement.auto``);
* ``compare(k, target)``          manual vs auto as a DataFrame; ``compare_json``,
  ``compare_figure`` and ``format_compare`` give the same as JSON, a figure and text.

``k`` is a ``Program`` or a builder ``Kernel``. Everything but ``compare.py`` (and the
checks that run through it) works on the IR alone.
"""

from sim.placement.auto import AutoPlan, plan_auto, to_auto
from sim.placement.check import Finding, check_placement, check_races, format_findings
from sim.placement.compare import (Comparison, compare, compare_figure, compare_json,
                                   format_compare, run_comparison)

__all__ = ["to_auto", "plan_auto", "AutoPlan", "check_placement", "check_races", "Finding",
           "format_findings", "compare", "compare_json", "compare_figure", "format_compare",
           "run_comparison", "Comparison"]
