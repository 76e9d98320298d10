"""The ``ptosim`` argument parser: its commands, flags and help texts.

A mistake on the command line is a ``UserError`` (one line, exit 2), never argparse's
own exit. Every output flag is declared with ``flags.output_arg`` so that ``sim.cli.main``
checks the paths (suffix, directory, writable, not overwriting an input) before any work.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sim.base.errors import UserError
from sim.cli import flags
from sim.cli.commands import (
    cmd_calibrate,
    cmd_check,
    cmd_compare,
    cmd_op,
    cmd_print,
    cmd_run,
    cmd_sweep,
    cmd_validate,
)
from sim.cli.flags import declared_inputs, declared_outputs

__all__ = ["build_parser", "declared_outputs", "declared_inputs"]


_EPILOG = """\
A kernel is PTO IR text (KERNEL.pto, the MLIR form the PTO compiler reads and
prints) or a Python module (KERNEL.py) that defines build() returning a sim.Kernel
(or a sim Program). A .py kernel is executed as Python, with its own directory on
the import path: run only files you trust. --arg NAME=VALUE binds a .pto kernel's
scalar argument %NAME and is passed to a .py kernel as build(NAME=VALUE) (an int,
float or true/false when it parses as one, else the text). Example:

    import sim
    def build(rows=32, cols=64):
        k = sim.Kernel("vadd")
        ...
        return k
"""


class _Parser(argparse.ArgumentParser):
    # a callable giving the description, called when help is shown
    describe: Callable[[], str] | None = None

    def error(self, message):
        # a subcommand names itself ("ptosim run: ..."); the top level is the error's own
        # "ptosim: error:" prefix already
        raise UserError(f"{self.prog}: {message}" if " " in self.prog else message)

    def parse_known_args(self, args=None, namespace=None):
        # a subcommand refuses its own unknown flags: argparse would hand them up to the
        # top level, whose error does not say which command they were given to
        namespace, extra = super().parse_known_args(args, namespace)
        if extra and " " in self.prog:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return namespace, extra

    def format_help(self):
        if self.describe is not None:  # what it reads loads only for help
            self.description, self.describe = self.describe(), None
        return super().format_help()


def _op_description() -> str:
    # sim.studies (placement passes, pandas) loads only when this help is shown
    from sim.studies.ops import isolated_opcodes

    return (
        "Cost of one vector-pipe instruction with its operands resident in UB and every "
        "pipe idle (what a single-instruction measurement sees). Data movement (TLOAD, "
        "TSTORE, TMOV, TEXTRACT), the cube (TMATMUL*, TGEMV) and TASSIGN cost only inside "
        "a kernel: use ptosim run. Opcodes: " + " ".join(isolated_opcodes())
    )


def build_parser() -> argparse.ArgumentParser:
    from sim.base.version import __version__
    from sim.engine.mode import SYNC_MODES

    p = _Parser(
        prog="ptosim",
        description="Cycle-approximate simulator of the Ascend PTO tile ISA.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"ptosim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser(
        "run",
        help="simulate a kernel and print its cycle report",
        description="Simulate KERNEL.pto (PTO IR) or KERNEL.py (defines build() "
        "-> sim.Kernel) and print total, per-pipe and "
        "per-instruction cycles.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    flags.launch_flags(r)
    flags.ranks_flags(
        r,
        "the report gives the latest rank's cycles and the races across ranks, then each "
        "rank's (each stream's) report with its own race check; --trace writes one table "
        "with rank and launch columns, --plot one lane per rank and kernel",
    )
    r.add_argument(
        "--inputs",
        choices=("random", "plausible"),
        default="random",
        help="how unbound GM inputs are filled: seeded random data (default), or "
        "'plausible': integer arguments the kernel uses as indices or window offsets "
        "drawn inside the ranges it uses them in (a deterministic heuristic)",
    )
    flags.output_arg(
        r,
        "--output",
        action="append",
        metavar="NAME=FILE.npy",
        pairs=True,
        suffixes=(".npy",),
        help="write a GM pointer argument's final contents as a .npy array to exactly "
        "FILE, shaped like its --input array or its tensor view (repeatable); with "
        "--ranks a leading rank axis holds every rank's",
    )
    r.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: total_cycles, pipes {busy_cycles, utilization}, ...",
    )
    from sim.trace.export import SUFFIXES as trace_suffixes

    flags.output_arg(
        r,
        "--trace",
        metavar="FILE.{csv,json,parquet}",
        suffixes=trace_suffixes,
        help="write the timing trace (one row per instruction): CSV, Chrome Trace "
        "Event JSON for Perfetto / chrome://tracing, or Parquet, by suffix; with --ranks "
        "one table of every rank's rows, rank and launch first",
    )
    flags.output_arg(
        r,
        "--plot",
        metavar="FILE.png",
        suffixes=flags.plot_suffixes,
        help="write the pipeline-occupancy Gantt (format by suffix: .png, .svg, .pdf ...); "
        "with --ranks, every rank's timeline: a lane per rank and launched kernel, "
        "communication against compute",
    )
    r.add_argument(
        "--detail",
        choices=("op", "cce"),
        default="op",
        help="trace granularity: one row per PTO op (default) or also one row per "
        "lowered CCE instruction (kind 'cce'), showing why an op costs what it costs",
    )
    r.add_argument(
        "--trace-rows",
        choices=("full", "ops", "none"),
        default=None,
        help="trace rows kept: all, no sync rows, or none (totals only; fastest, "
        "for sweeps). Default: all when --trace or --plot writes them, else "
        "no sync rows (the report reads none of them)",
    )
    r.add_argument(
        "--rows",
        type=flags.count(0),
        default=40,
        help="instructions listed in the report (default 40)",
    )
    r.add_argument(
        "--sync",
        choices=SYNC_MODES,
        default=None,
        help="synchronisation mode. Default: a kernel with no set_flag / wait_flag / "
        "pipe_barrier / record_event / wait_event in any function runs in auto "
        "mode (sync inserted and unaddressed tiles placed as the toolchain's "
        "auto mode does); a kernel with explicit sync runs as written (manual), "
        "with a warning when it has races. 'ideal': the default mode's program "
        "with every wait satisfied at once (a lower bound)",
    )
    r.add_argument(
        "--no-races",
        action="store_true",
        help="do not check a kernel that synchronises by hand (manual mode) for "
        "races; by default such a run is checked and warns when it finds any "
        "(the report says whether races were checked); with --ranks, nor the races "
        "across ranks (checked by default whatever the mode: the signals are the kernel's)",
    )
    r.set_defaults(func=cmd_run)

    ch = sub.add_parser(
        "check",
        help="parse and verify a kernel without simulating it",
        description="Parse KERNEL.pto (or build KERNEL.py) and verify every "
        "tile instruction, inside loops and branches too, against "
        "the target's rules. Exit 0 when clean (warnings go to "
        "stderr), 2 with FILE:LINE:COL: error: ... otherwise.",
    )
    flags.kernel_target(ch)
    ch.add_argument(
        "--races",
        action="store_true",
        help="also run the kernel as written and report races: unordered cross-pipe "
        "accesses to the same bytes (RAW/WAR/WAW), event ids set again while "
        "pending, unmatched sets, deadlocks; exit 1 when any is found. The run is "
        "timing-only (as fast as run --timing-only) unless the kernel reads scalars "
        "out of data (load_scalar, tgetval)",
    )
    ch.add_argument(
        "--block-dim",
        type=flags.count(1),
        default=None,
        metavar="N",
        help="blocks the --races run launches, 1..65535 (default: a .py kernel's own "
        "block_dim, else 1; past the cores they run in waves); races across units and "
        "cores are found too",
    )
    ch.add_argument(
        "--timing-only",
        action="store_true",
        help="run the --races check timing-only even when the kernel reads scalars out of "
        "data (by default such a kernel's check computes the data: its loops, branches "
        "or addresses may follow it)",
    )
    flags.kernel_args(ch)
    ch.set_defaults(func=cmd_check)

    cp = sub.add_parser(
        "compare",
        help="manual vs auto placement and synchronisation",
        description="Run the kernel as written (manual mode) and as the "
        "toolchain's auto mode would: tiles placed by a liveness-based "
        "allocator, every set/wait flag inserted from the tile-byte "
        "dependencies. Prints total cycles, per-pipe busy cycles, "
        "set/wait pairs, barriers, peak bytes per buffer and races, "
        "side by side, then what run would warn of (a warning of one run only after its "
        "mode). Both runs take run's kernel and launch flags. "
        "A chip kernel's pipe rows are per unit (AIC, AIV0, AIV1: each has its own "
        "pipes and buffers; per core too with --block-dim); a kernel that places no "
        "tile by hand gets a first line saying so.",
    )
    flags.launch_flags(cp)
    flags.ranks_flags(
        cp,
        "both runs have N ranks: total_cycles is the latest rank's end, the other "
        "rows rank 0's, races counted in every rank and across ranks; --stream kernels "
        "run as written in the manual run and in auto mode in the auto run",
    )
    cp.add_argument(
        "--json",
        action="store_true",
        help='print {"manual": {...}, "auto": {...}} with total_cycles, syncs, '
        "barriers, peak_bytes, ...",
    )
    flags.output_arg(
        cp,
        "--plot",
        metavar="FILE.png",
        suffixes=flags.plot_suffixes,
        help="write the buffer occupancy maps and pipeline Gantts of both runs",
    )
    cp.set_defaults(func=cmd_compare)

    pr = sub.add_parser(
        "print",
        help="print a kernel as canonical PTO IR",
        description="Parse KERNEL.pto (or run KERNEL.py as Python and call its "
        "build()) and print it back as "
        "PTO IR in one canonical spelling (compact tile_buf types, "
        "printed sync form); the output parses to the same program.",
    )
    pr.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    pr.set_defaults(func=cmd_print)

    o = sub.add_parser("op", help="cycles of one tile instruction in isolation")
    o.describe = _op_description
    o.add_argument("opcode", help="opcode as the ISA spells it, e.g. TADD")
    o.add_argument(
        "--dtype",
        default="f32",
        help="f32 f16 bf16 i32 i16 i8 u32 u16 u8; TCVT takes SRC>DST, e.g. f32>f16",
    )
    o.add_argument("--shape", default="16x64", help="tile capacity ROWSxCOLS (default 16x64)")
    o.add_argument("--valid", help="valid region ROWSxCOLS (default: the whole tile)")
    o.add_argument("--scalar", type=float, default=2.0, help="scalar operand (default 2.0)")
    o.add_argument(
        "--scalar-first", action="store_true", help="scalar/tile form (TDIVS); not with --inplace"
    )
    o.add_argument(
        "--inplace",
        action="store_true",
        help="dst is the same tile as src0; not with --scalar-first",
    )
    o.add_argument("--target", default="a2a3", help="target name (a2a3, a5) or model directory")
    o.add_argument("--json", action="store_true", help='print {"op": ..., "cycles": int, ...}')
    o.set_defaults(func=cmd_op)

    v = sub.add_parser(
        "validate",
        help="predict measured single-instruction cases and score them",
        description="Predict every case of CASES.csv (columns op,dtype,rows,cols,"
        "valid_rows,valid_cols,variant,measured_cycles; variant is empty, "
        "tile_scalar, scalar_tile, inplace, binary or high_precision; TCVT dtype "
        "f32>f16) "
        "and print predicted, measured and accuracy = 1 - |p - m| / m, "
        "then the median and mean accuracy and the share within 15% per "
        "op family and overall. A case that cannot be predicted (tiles "
        "larger than the buffers) gets no prediction and a reason.",
    )
    v.add_argument("cases", metavar="CASES.csv")
    v.add_argument("--target", default="a2a3", help="target name (a2a3, a5) or model directory")
    v.add_argument(
        "--json",
        action="store_true",
        help='print {"cases": [...], "summary": {...}, "families": {...}, '
        '"median_accuracy": x, ...}',
    )
    v.add_argument(
        "--explain",
        action="store_true",
        help="under each case, the op's decomposition with a full latency after each "
        "barrier (timing-model.md §4 / §7), the reference's formula fit at the shape (or "
        "why it does not apply there) and which of the two the model follows for the op",
    )
    v.set_defaults(func=cmd_validate)

    c = sub.add_parser(
        "calibrate",
        help="fit the vector cost table to measurements",
        description="Fit start-up latency and per-repeat slope of every CCE vector "
        "instruction to MEASUREMENTS.csv (validate's format) by least "
        "squares and write a complete model directory usable with "
        "--target DIR. Prints validate's summary before and after.",
    )
    c.add_argument("measurements", metavar="MEASUREMENTS.csv")
    c.add_argument("--target", default="a2a3", help="model to start from (default a2a3)")
    flags.output_arg(c, "-o", "--output", required=True, metavar="NEW_MODEL_DIR", directory=True)
    c.add_argument("--json", action="store_true", help='print {"model", "before", "after"}')
    c.set_defaults(func=cmd_calibrate)

    sw = sub.add_parser(
        "sweep",
        help="run a kernel over every combination of parameters on Dask",
        description="Run KERNEL for every combination of the --param values "
        "(.py: build() parameters, .pto: scalar arguments), targets "
        "and sync modes, in parallel on Dask distributed, and write "
        "one row per configuration (parameters, target, sync, "
        "total_cycles, busy_cycles[PIPE], syncs, barriers, "
        "peak_bytes[BUFFER], races, warnings, error) to a Parquet file. Rows "
        "are journalled to OUT.journal as they finish; running the "
        "same command again skips the configurations done.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sw.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    sw.add_argument(
        "--param",
        action="append",
        metavar="NAME=V1,V2,...",
        help="values of one parameter (repeatable; the sweep is the cartesian product)",
    )
    sw.add_argument(
        "--target",
        nargs="+",
        action="extend",
        metavar="T",
        help="targets to run on (default: the kernel's own, else a2a3)",
    )
    sw.add_argument(
        "--block-dim",
        type=flags.counts(1),
        default=None,
        metavar="N,...",
        help="blocks per launch, one count or a list swept as one more axis (default: a .py "
        "kernel's own block_dim, else 1); blocks past the target's cores run in waves; "
        "the rows get a block_dim column",
    )
    sw.add_argument(
        "--sample-waves",
        type=flags.count(1),
        default=None,
        metavar="K",
        help="run every configuration as run --timing-only --sample-waves K does (the "
        "first K waves and the last simulated, the full waves between estimated): "
        "total_cycles is then the estimated device time, the other figures those of the "
        "blocks that ran, and a blocks_simulated column says how many did",
    )
    sw.add_argument(
        "--sync",
        default=None,
        metavar="MODE,...",
        help="sync modes: manual (as written), auto (placed and synchronised by "
        "the simulator), or both: manual,auto (default: run's rule, manual "
        "for a kernel with explicit sync, auto otherwise)",
    )
    flags.ranks_flags(
        sw,
        "every configuration runs on N ranks; total_cycles is the latest rank's end, races "
        "counted in every rank and across ranks",
    )
    sw.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="a running Dask scheduler, e.g. tcp://host:8786 (default: a local "
        "cluster of --workers processes)",
    )
    sw.add_argument(
        "--workers",
        type=flags.count(1),
        default=2,
        help="worker processes of the local cluster (default 2; at most the CPUs)",
    )
    flags.output_arg(
        sw, "-o", "--output", required=True, metavar="RESULTS.parquet", suffixes=(".parquet",)
    )
    sw.add_argument("--rows", type=flags.count(0), default=40, help="rows printed (default 40)")
    sw.set_defaults(func=cmd_sweep)
    return p
