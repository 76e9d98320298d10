"""pto-sim: a cycle-approximate simulator of the Ascend PTO tile ISA.

Three lines from import to a cycle count::

    import sim
    r = sim.simulate_op("TADD", "f32", (16, 64))
    print(r.total_cycles)

Build kernels with ``sim.Kernel`` (the C++ intrinsics as methods), simulate them with
``sim.simulate`` and read ``Result.trace`` (a pandas DataFrame, one row per instruction).
``sim.placement`` has auto mode's passes and ``sim.studies`` what is built on runs;
``sim.trace`` reads, writes, analyses and plots traces (Gantt, stalls, critical path);
``sim.whatif`` bounds the speedup with ideal synchronisation and infinite bandwidth.
``sim.parse_file`` reads PTO IR text into the same program IR the builder makes;
``sim.print_program`` writes it back; ``sim.compare`` runs manual vs auto placement;
``sim.sweep`` runs a kernel over a grid of parameters, targets and sync modes on Dask
(a DataFrame; ``sim.sweep_heatmap`` draws one metric of it over two axes);
``sim.scaling`` runs a multi-core kernel at several core counts (``sim.scaling_plot``:
cycles, per-engine busy ratios, GM bandwidth against the HBM peak).
"""

from sim import placement, studies, trace
from sim.base.errors import DeadlockError, SimulationError, UserError, VerifyError
from sim.base.version import __version__
from sim.engine.result import Result
from sim.engine.run import simulate
from sim.frontend import parse_file, parse_text, print_program
from sim.isa.dtypes import dtype
from sim.isa.tile import TileType
from sim.kernel import Event, GlobalTensor, Kernel
from sim.studies import compare
from sim.studies.ops import simulate_op
from sim.studies.scaling import scaling, scaling_plot
from sim.studies.sweep import sweep
from sim.studies.sweep_plot import sweep_heatmap
from sim.studies.whatif import whatif
from sim.target import load_target

__all__ = ["Kernel", "Event", "GlobalTensor", "TileType", "simulate", "simulate_op", "Result",
           "load_target", "dtype", "UserError", "VerifyError", "SimulationError", "DeadlockError",
           "trace", "whatif", "compare", "parse_file", "parse_text", "print_program", "sweep",
           "sweep_heatmap", "scaling", "scaling_plot"]
