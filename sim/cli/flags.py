"""The flags several ``ptosim`` commands share, and the argument types they use.

Each group adds the same flags with the same meaning wherever it is used: the kernel and
its target, its ``--arg`` values, the launch (``run`` and ``compare``), the run limits and
the ranks. An output flag is declared with ``output_arg`` so that ``sim.cli.main`` checks
its paths before any work (``declared_outputs``, ``declared_inputs``).
"""

from __future__ import annotations

import argparse

from sim.cli.commands import _pairs

__all__ = [
    "kernel_target",
    "kernel_args",
    "launch_flags",
    "count",
    "counts",
    "output_arg",
    "declared_outputs",
    "declared_inputs",
    "plot_suffixes",
    "limit_flags",
    "ranks_flags",
]


def kernel_target(p) -> None:
    """The kernel file and the target it runs on."""
    p.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    p.add_argument(
        "--target",
        default=None,
        help="target name (a2a3, a5) or model directory (default: the module's "
        "pto.target_arch / pto.device-spec, else a2a3)",
    )


def kernel_args(p) -> None:
    """--arg / --input: bind a kernel's scalar and GM pointer arguments."""
    p.add_argument(
        "--arg",
        action="append",
        metavar="NAME=VALUE",
        help="value of a .pto kernel's scalar argument %%NAME, or parameter NAME "
        "of a .py kernel's build() (repeatable)",
    )
    p.add_argument(
        "--input",
        action="append",
        metavar="NAME=FILE.npy",
        help="bind a GM pointer argument to a numpy array (repeatable; unbound "
        "pointers get seeded random data)",
    )


def launch_flags(p) -> None:
    """The kernel, which function of it runs, its arguments and how it is launched: one
    group shared by the commands that simulate a kernel (``run``, ``compare``), so each
    takes the same flags with the same meaning."""
    g = p.add_argument_group("kernel and launch")
    kernel_target(g)
    g.add_argument(
        "--func",
        dest="function",
        metavar="NAME",
        help="the function to run when the file has several (default: the one "
        "marked pto.entry, else the first public function nothing calls)",
    )
    kernel_args(g)
    g.add_argument(
        "--block-dim",
        type=count(1),
        default=None,
        metavar="N",
        help="blocks that run the kernel SPMD, 1..65535 (default: a .py kernel's own "
        "block_dim, else 1); blocks past the target's cores run in waves, each on the "
        "first free core; the report and --json add per core/unit figures and which "
        "block ran on which core",
    )
    g.add_argument(
        "--sample-waves",
        type=count(1),
        default=None,
        metavar="K",
        help="with --timing-only and more blocks than cores: simulate the launch's first K "
        "waves (K >= 1) and its last, partly filled one, and estimate the full waves "
        "between from the steady block time of wave K (with K >= 2 it leaves out the "
        "first touches only the first wave pays); the output says so, and its other "
        "figures are of the blocks that ran (a long launch of alike blocks in a fraction "
        "of the time, within a few per cent of the exact run)",
    )
    g.add_argument(
        "--seed", type=count(0), default=0, help="seed for unbound GM inputs (default 0)"
    )
    g.add_argument("--timing-only", action="store_true", help="skip the functional units")
    g.add_argument(
        "--free",
        action="append",
        default=None,
        metavar="MECHANISM",
        help="treat a shared mechanism of the chip as free (repeatable): gm_bandwidth (the "
        "shared HBM / L2 channels), gm_write_queue (the GM write ports), gm_first_touch (the "
        "page walk of a GM page's first touch), launch "
        "(the launch overhead reported beside device time); what each costs a kernel: "
        "sim.whatif",
    )
    limit_flags(g)


def count(minimum: int):
    """An argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, found {value}")
        return value

    parse.__name__ = "integer"
    return parse


def counts(minimum: int):
    """An argparse type: comma-separated integers, each >= ``minimum``."""
    one = count(minimum)

    def parse(text: str) -> list[int]:
        return [one(v.strip()) for v in text.split(",")]

    parse.__name__ = "list of integers"
    return parse


def output_arg(p, *flags, suffixes=(), directory=False, pairs=False, **kw) -> None:
    """Add an output argument and record it, so ``main`` checks every output path of the
    command (suffix, directory, permissions, not an input) before the command runs.
    ``suffixes``: the accepted suffixes, or a function giving them (looked up only when
    the argument is given).
    ``pairs``: the argument is a repeatable NAME=PATH (``run --output``)."""
    action = p.add_argument(*flags, **kw)
    known = p.get_default("_outputs") or ()
    p.set_defaults(_outputs=(*known, (action.dest, flags[-1], suffixes, directory, pairs)))


def declared_outputs(args) -> list:
    from sim.cli.outputs import Output

    out = []
    for dest, flag, suffixes, directory, pairs in getattr(args, "_outputs", ()):
        value = getattr(args, dest, None)
        if value is None:
            continue
        paths = [path for _, path in _pairs(value, flag)] if pairs else [value]
        suffixes = suffixes() if callable(suffixes) else suffixes
        out += [Output(flag, path, suffixes, directory) for path in paths]
    return out


def declared_inputs(args) -> list:
    """The files a command reads (an output must not overwrite them)."""
    files = [
        getattr(args, a) for a in ("kernel", "cases", "measurements") if getattr(args, a, None)
    ]
    return files + [path for _, path in _pairs(getattr(args, "input", None), "--input")]


def plot_suffixes() -> tuple:
    from matplotlib.backend_bases import FigureCanvasBase

    return tuple(f".{s}" for s in sorted(FigureCanvasBase.get_supported_filetypes()))


def limit_flags(p) -> None:
    """--max-cycles / --max-instructions / --quiet of a simulating command."""
    p.add_argument(
        "--max-cycles",
        type=count(1),
        metavar="N",
        help="stop with an error once the simulated time passes N cycles (the "
        "trace so far still goes to --trace)",
    )
    p.add_argument(
        "--max-instructions",
        type=count(1),
        metavar="N",
        help="stop with an error once the kernel has issued more than N "
        "instructions and sync statements",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line (shown on a terminal for runs over 2 s)",
    )


def ranks_flags(p, what: str) -> None:
    """--ranks N: the same flag with the same meaning on every command that runs a kernel."""
    p.add_argument(
        "--ranks",
        type=count(1),
        default=None,
        metavar="N",
        help="run N NPUs ('ranks'), each a whole chip running the kernel, joined by the "
        "target's [comm] link model; the kernel reads its rank id and the rank count "
        f"(docs: Concepts, Ranks); {what}",
    )
    p.add_argument(
        "--comm-context",
        metavar="NAME",
        default=None,
        help="with --ranks: GM argument NAME (int64) gets each rank's communication "
        "context (word 2: rank id | rank count << 32; word 4 + r: rank r's window), which "
        "the kernel reads to address its peers",
    )
    p.add_argument(
        "--stream",
        action="append",
        default=None,
        metavar="KERNEL[:FUNC]",
        help="with --ranks: launch this kernel too on every rank, beside KERNEL, as the "
        "host's second stream (a communication kernel beside a compute kernel), sharing "
        "the rank's GM, in the run's sync mode, on cores of its own (repeatable; kernels "
        "on the same units must fit the chip's cores together). FUNC: a .pto file's "
        "function, or a .py file's function called in place of build() with the --arg "
        "(sweep: --param) values it has parameters for",
    )
