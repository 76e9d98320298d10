"""Studies built on runs: what a user learns by running a kernel more than once.

* ``compare``    manual vs auto placement and synchronisation, side by side
  (``compare_json``, ``compare_figure``, ``format_compare``, ``run_comparison``);
* ``check``      manual-mode checks: hand placement against the buffer map, races;
* ``sweep``      a kernel over a grid of parameters, targets and sync modes on Dask
  (``sweep_plot`` draws one metric of it);
* ``scaling``    a multi-core kernel at several core counts;
* ``whatif``     bounds with ideal synchronisation and infinite bandwidth;
* ``ops``        one instruction costed in isolation (``simulate_op``);
* ``accuracy`` / ``calibrate``  predictions against measured single-op cases, and the
  fit of the vector cost tables to them.

Every module here runs the engine (``sim.engine.simulate``); nothing below imports them.
"""

from sim.studies.check import Finding, check_placement, check_races, format_findings
from sim.studies.compare import (
    Comparison,
    compare,
    compare_figure,
    compare_json,
    format_compare,
    run_comparison,
)

__all__ = [
    "check_placement",
    "check_races",
    "Finding",
    "format_findings",
    "compare",
    "compare_json",
    "compare_figure",
    "format_compare",
    "run_comparison",
    "Comparison",
]
