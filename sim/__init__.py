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

import importlib

from sim.base.errors import DeadlockError, SimulationError, UserError, VerifyError
from sim.base.version import __version__ as __version__  # re-exported
from sim.isa.dtypes import dtype
from sim.isa.tile import TileType
from sim.kernel import Event, GlobalTensor, Kernel
from sim.target import load_target

__all__ = [
    "Kernel",
    "Event",
    "GlobalTensor",
    "TileType",
    "simulate",
    "simulate_op",
    "Result",
    "load_target",
    "dtype",
    "UserError",
    "VerifyError",
    "SimulationError",
    "DeadlockError",
    "trace",
    "whatif",
    "compare",
    "parse_file",
    "parse_text",
    "print_program",
    "sweep",
    "sweep_heatmap",
    "scaling",
    "scaling_plot",
]

# The rest is loaded on first use (module ``__getattr__``): the engine and its trace
# DataFrames import pandas and SimPy, the front end lark, the studies Dask and matplotlib,
# and a kernel that is only built, or a command that reads only a few of them, should not
# wait for all of them. name -> (module, attribute; None: the module itself)
_LAZY = {
    "simulate": ("sim.engine.run", "simulate"),
    "Result": ("sim.engine.result", "Result"),
    "parse_file": ("sim.frontend", "parse_file"),
    "parse_text": ("sim.frontend", "parse_text"),
    "print_program": ("sim.frontend", "print_program"),
    "compare": ("sim.studies", "compare"),
    "simulate_op": ("sim.studies.ops", "simulate_op"),
    "scaling": ("sim.studies.scaling", "scaling"),
    "scaling_plot": ("sim.studies.scaling", "scaling_plot"),
    "sweep": ("sim.studies.sweep", "sweep"),
    "sweep_heatmap": ("sim.studies.sweep_plot", "sweep_heatmap"),
    "whatif": ("sim.studies.whatif", "whatif"),
    "placement": ("sim.placement", None),
    "studies": ("sim.studies", None),
    "trace": ("sim.trace", None),
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    module = importlib.import_module(where[0])
    value = module if where[1] is None else getattr(module, where[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_LAZY))
