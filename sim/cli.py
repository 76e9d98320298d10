"""The ``ptosim`` command line.

User errors (a bad kernel, flag or file) print one line, ``ptosim: error: ...``, on
stderr and exit with code 2; they never show a traceback. Mistakes located in a ``.pto``
file print as a compiler does: ``FILE:LINE:COL: error: ...``, the source line and a caret.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path

from sim.errors import UserError
from sim.kernelfile import load_kernel, printable, scalar_value

__all__ = ["main"]

_EPILOG = """\
A kernel is PTO IR text (KERNEL.pto, the MLIR form the PTO compiler reads and
prints) or a Python module (KERNEL.py) that defines build() returning a sim.Kernel
(or a sim Program). A .py kernel is executed as Python, with its own directory on
the import path: run only files you trust. --arg NAME=VALUE binds a .pto kernel's scalar argument %NAME and
is passed to a .py kernel as build(NAME=VALUE) (an int, float or true/false when it
parses as one, else the text). Example:

    import sim
    def build(rows=32, cols=64):
        k = sim.Kernel("vadd")
        ...
        return k
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UserError(f"{self.prog}: {message}")


def _write_outputs(result, args) -> None:
    if args.trace:
        from sim.trace.export import write_trace
        Path(args.trace).parent.mkdir(parents=True, exist_ok=True)
        write_trace(result.trace, args.trace, kernel=result.kernel, target=result.target.name)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        from sim.trace.plot import gantt
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig = gantt(result.trace, title=f"{result.kernel} on {result.target.name}, "
                                        f"{result.mode} sync — {result.total_cycles} cycles")
        fig.savefig(args.plot, dpi=120)


def _program(kernel):
    return kernel.program() if hasattr(kernel, "program") else kernel


def _target_name(args, kernel) -> str:
    """--target > the module's pto.target_arch / pto.device-spec > a2a3."""
    from sim.frontend import resolve_target
    return resolve_target(_program(kernel), args.target, where=args.kernel)


def _pairs(items, flag: str) -> list[tuple[str, str]]:
    out = []
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip().removeprefix("%")
        if not sep or not name or not value:
            raise UserError(f"{flag} {item!r}: expected NAME=VALUE")
        out.append((name, value))
    return out


def _kernel_inputs(args, kernel) -> dict:
    """--arg scalars (a ``.py`` kernel's went to its build()) and --input GM arrays, by
    kernel argument name."""
    from sim.isa.program import GmPtr, Scalar
    fn_args = _program(kernel).main.args
    scalars = {a.name: a for a in fn_args if isinstance(a, Scalar)}
    pointers = {a.name: a for a in fn_args if isinstance(a, GmPtr)}
    inputs = {}
    py = Path(args.kernel).suffix == ".py"
    for name, text in _pairs(None if py else args.arg, "--arg"):
        if name not in scalars:
            known = ", ".join(f"%{n}: {a.type}" for n, a in scalars.items()) or "none"
            raise UserError(f"--arg {name}: the kernel has no scalar argument %{name} "
                            f"(scalar arguments: {known})")
        inputs[name] = scalar_value(name, text, scalars[name].type)
    for name, path in _pairs(args.input, "--input"):
        if name not in pointers:
            known = ", ".join(f"%{n}" for n in pointers) or "none"
            raise UserError(f"--input {name}: the kernel has no GM pointer argument %{name} "
                            f"(pointer arguments: {known})")
        inputs[name] = _load_array(path, f"--input {name}")
    for name, _ in _pairs(getattr(args, "output", None), "--output"):
        if name not in pointers:
            known = ", ".join(f"%{n}" for n in pointers) or "none"
            raise UserError(f"--output {name}: the kernel has no GM pointer argument %{name} "
                            f"(pointer arguments: {known})")
    return inputs


def _load_array(path: str, what: str):
    import numpy as np
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{what}: {path}: no such file") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{what}: {path}: not a .npy array ({e})") from None
    if not isinstance(arr, np.ndarray):
        raise UserError(f"{what}: {path}: expected one array (.npy), found an archive")
    return arr


def _save_outputs(args, result, kernel, inputs) -> None:
    """Each ``--output NAME=FILE`` as a .npy array written to exactly FILE, in the shape its
    ``--input`` array or its tensor view gave it (flat when none did)."""
    import numpy as np
    for name, path in _pairs(args.output, "--output"):
        try:
            arr = result.output(name)
        except KeyError:
            raise UserError(f"--output {name}: the kernel never touched %{name}") from None
        shape = _output_shape(_program(kernel), name, arr.size, inputs.get(name))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:          # np.save(name) would append .npy to the path
            np.save(f, arr.reshape(shape) if shape else arr)


def _output_shape(program, name: str, size: int, given) -> tuple | None:
    """The shape of GM argument ``name``: its --input array's, else that of the first
    tensor view of it whose dims are constants; None when neither holds ``size`` elements."""
    from sim.isa.program import Arith, Const, MakeTensorView, walk
    if given is not None and getattr(given, "size", None) == size:
        return given.shape
    for f in sorted(program.functions, key=lambda f: f is not program.main):
        body = list(walk(f.body))
        known = {st.result.name: st.operands[0].value for st in body
                 if isinstance(st, Arith) and st.op == "arith.constant"
                 and isinstance(st.operands[0], Const)}
        for st in body:
            if isinstance(st, MakeTensorView) and st.ptr.name == name:
                dims = [d.value if isinstance(d, Const) else known.get(getattr(d, "name", None), s)
                        for d, s in zip(st.shape, st.result.shape)]
                if all(type(d) is int for d in dims) and math.prod(dims) == size:
                    return tuple(dims)
    return None


def _print_json(obj) -> None:
    """One JSON object on stdout: numbers stay numbers (numpy ones too), NaN and inf become
    null, so every --json output parses with a strict reader."""
    print(json.dumps(_plain(obj), allow_nan=False))


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):     # numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _select_function(args, kernel):
    """The kernel with the function ``--func`` names as its entry; without --func, a note on
    stderr says which one runs when the file has several kernel functions."""
    program = _program(kernel)
    name = getattr(args, "function", None)
    if name is None:
        kernels = program.kernels()
        if len(kernels) > 1:
            print(f"ptosim: note: {args.kernel} has {len(kernels)} kernel functions ("
                  f"{', '.join('@' + k for k in kernels)}); running @{program.main.name} "
                  f"(pick one with --func NAME)", file=sys.stderr)
        return kernel
    name = name.removeprefix("@")
    names = [f.name for f in program.functions]
    if name not in names:
        raise UserError(f"--func {name}: {args.kernel} has no function @{name} (functions: "
                        f"{', '.join('@' + n for n in names)})")
    if program is not kernel:
        raise UserError("--func: a .py kernel picks its function in build()")
    import attrs
    return attrs.evolve(program, entry=name)


def _limits(args, label: str):
    """--max-cycles / --max-instructions and, on a terminal without --quiet, a progress
    line for runs over two seconds."""
    from sim.engine.limits import Limits
    progress = None
    if not args.quiet and sys.stderr.isatty():
        from sim.progress import Progress
        progress = Progress(label)
    return Limits(args.max_cycles, args.max_instructions, progress)


@contextlib.contextmanager
def _bounded(args, limits):
    """A run stopped by a limit or Ctrl-C writes the trace recorded so far to --trace."""
    try:
        yield
    except Exception as e:
        from sim.engine.limits import RunStopped
        if isinstance(e, RunStopped) and args.trace and e.trace is not None:
            from sim.trace.export import write_trace
            write_trace(e.trace, args.trace, kernel=args.kernel)
            raise RunStopped(f"{e}; the partial trace is in {args.trace}", e.cycle, e.items) from None
        raise
    except KeyboardInterrupt as e:
        trace = getattr(e, "trace", None)
        if trace is None:
            raise _Interrupted("interrupted") from None
        reached = int(trace["end_cycle"].max()) if len(trace) else 0
        kept = ""
        if args.trace:
            from sim.trace.export import write_trace
            write_trace(trace, args.trace, kernel=args.kernel)
            kept = f"; the partial trace is in {args.trace}"
        raise _Interrupted(f"interrupted at cycle {reached} ({len(trace)} trace rows "
                           f"recorded){kept}") from None
    finally:
        if limits.progress is not None:
            limits.progress.close()


class _Interrupted(Exception):
    """Ctrl-C, with the one line to print."""


def cmd_run(args) -> int:
    from sim.engine.run import simulate
    kernel = _select_function(args, load_kernel(args.kernel, _pairs(args.arg, "--arg")))
    target = _target_name(args, kernel)
    inputs = _kernel_inputs(args, kernel)
    if args.trace_rows == "none" and (args.trace or args.plot):
        raise UserError("--trace-rows none keeps no trace to write; drop --trace/--plot or "
                        "keep the rows (--trace-rows full or ops)")
    limits = _limits(args, Path(args.kernel).name)
    with _bounded(args, limits):
        result = simulate(kernel, target, inputs=inputs, functional=not args.timing_only,
                          seed=args.seed, detail=args.detail, trace=args.trace_rows,
                          sync=args.sync, races="manual", limits=limits,
                          block_dim=args.block_dim)
    _save_outputs(args, result, kernel, inputs)
    _write_outputs(result, args)
    if args.json:
        _print_json(result.to_json())
    else:
        print(result.report(max_rows=args.rows))
        for what, path in (("trace", args.trace), ("plot", args.plot)):
            if path:
                print(f"{what} written to {path}")
        for name, path in _pairs(args.output, "--output"):
            print(f"%{name} written to {path}")
    return 0


def cmd_check(args) -> int:
    from sim.frontend import check_program
    from sim.isa.program import Instr
    from sim.isa.program import walk
    from sim.target import load_target
    kernel = load_kernel(args.kernel, _pairs(args.arg, "--arg"))
    program = _program(kernel)
    target = load_target(_target_name(args, kernel))
    warnings = check_program(program, target)
    for w in warnings:
        print(w, file=sys.stderr)
    from sim.placement.check import static_findings
    placement = static_findings(program, target)
    if placement:
        raise UserError("placement check failed: " + "; ".join(f.message for f in placement))
    n = sum(isinstance(st, Instr) for f in program.functions for st in walk(f.body))
    funcs = len(program.functions)
    print(f"{args.kernel}: ok: {funcs} function{'s' * (funcs != 1)}, {n} tile instruction"
          f"{'s' * (n != 1)}, verified for {target.name}"
          + (f", {len(warnings)} warning{'s' * (len(warnings) != 1)}" if warnings else ""))
    if args.races:
        from sim.placement import check_races, format_findings
        findings = check_races(kernel, target, inputs=_kernel_inputs(args, kernel),
                               block_dim=args.block_dim)
        print(format_findings(findings, kernel=args.kernel))
        return 1 if findings else 0
    return 0


def cmd_print(args) -> int:
    from sim.frontend import print_program
    sys.stdout.write(print_program(_program(load_kernel(args.kernel))))
    return 0


def cmd_op(args) -> int:
    from sim.ops import simulate_op
    if args.inplace and args.scalar_first:
        raise UserError(f"op {args.opcode}: --inplace and --scalar-first together: the "
                        f"scalar/tile form has no tile source to write in place; give one")
    variant = "inplace" if args.inplace else ("scalar_tile" if args.scalar_first else "")
    r = simulate_op(args.opcode, args.dtype, args.shape, args.valid, variant=variant,
                    scalar=args.scalar, target=args.target)
    row = r.trace[r.trace["kind"] == "op"].iloc[-1]
    out = {"op": row["opcode"], "dtype": args.dtype, "shape": args.shape,
           "valid": args.valid or args.shape, "variant": variant, "target": r.target.name,
           "cycles": int(row["duration_cycles"]), "repeats": int(row["repeats"]),
           "pipe": row["pipe"], "cce": row["cce"]}
    if args.json:
        _print_json(out)
    else:
        print(f"{out['op']} {out['dtype']} {out['shape']} (valid {out['valid']}"
              f"{', ' + variant if variant else ''}) on {out['target']}: {out['cycles']} cycles")
        print(f"  {out['pipe']}: {out['cce']}")
    return 0


def cmd_validate(args) -> int:
    from sim.calibrate import format_validation, load_cases, validate
    report = validate(load_cases(args.cases), args.target)
    if args.json:
        _print_json(report)
    else:
        print(format_validation(report))
    return 0


def cmd_calibrate(args) -> int:
    from sim.calibrate import fit, format_validation, load_cases, validate, write_model
    cases = load_cases(args.measurements)
    before = validate(cases, args.target)
    out = write_model(args.target, fit(cases, args.target), args.output,
                      f"{len(cases)} cases of {args.measurements}")
    after = validate(cases, out)
    if args.json:
        _print_json({"model": str(out), "before": before, "after": after})
        return 0
    print(f"before ({before['target']}):")
    print(format_validation(before).splitlines()[-1])
    print(f"after ({out}):")
    print(format_validation(after).splitlines()[-1])
    shown = out if "/" in str(out) else f"./{out}"      # a bare name means a bundled target
    print(f"calibrated model written to {out}; use it with --target {shown}")
    return 0


def _kernel_target(p) -> None:
    """The kernel file and the target it runs on."""
    p.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    p.add_argument("--target", default=None,
                   help="target name (a2a3, a5) or model directory (default: the module's "
                        "pto.target_arch / pto.device-spec, else a2a3)")


def _kernel_args(p) -> None:
    """--arg / --input: bind a kernel's scalar and GM pointer arguments."""
    p.add_argument("--arg", action="append", metavar="NAME=VALUE",
                   help="value of a .pto kernel's scalar argument %%NAME, or parameter NAME "
                        "of a .py kernel's build() (repeatable)")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy",
                   help="bind a GM pointer argument to a numpy array (repeatable; unbound "
                        "pointers get seeded random data)")


def _count(minimum: int):
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


def _output_arg(p, *flags, suffixes=(), directory=False, pairs=False, **kw) -> None:
    """Add an output argument and record it, so ``main`` checks every output path of the
    command (suffix, directory, permissions, not an input) before the command runs.
    ``suffixes``: the accepted suffixes, or a function giving them (looked up only when
    the argument is given).
    ``pairs``: the argument is a repeatable NAME=PATH (``run --output``)."""
    action = p.add_argument(*flags, **kw)
    known = p.get_default("_outputs") or ()
    p.set_defaults(_outputs=(*known, (action.dest, flags[-1], suffixes, directory, pairs)))


def _declared_outputs(args) -> list:
    from sim.outputs import Output
    out = []
    for dest, flag, suffixes, directory, pairs in getattr(args, "_outputs", ()):
        value = getattr(args, dest, None)
        if value is None:
            continue
        paths = [path for _, path in _pairs(value, flag)] if pairs else [value]
        suffixes = suffixes() if callable(suffixes) else suffixes
        out += [Output(flag, path, suffixes, directory) for path in paths]
    return out


def _declared_inputs(args) -> list:
    """The files a command reads (an output must not overwrite them)."""
    files = [getattr(args, a) for a in ("kernel", "cases", "measurements") if getattr(args, a, None)]
    return files + [path for _, path in _pairs(getattr(args, "input", None), "--input")]


def _plot_suffixes() -> tuple:
    from matplotlib.backend_bases import FigureCanvasBase
    return tuple(f".{s}" for s in sorted(FigureCanvasBase.get_supported_filetypes()))


def _run_limits(p) -> None:
    """--max-cycles / --max-instructions / --quiet of a simulating command."""
    p.add_argument("--max-cycles", type=_count(1), metavar="N",
                   help="stop with an error once the simulated time passes N cycles (the "
                        "trace so far still goes to --trace)")
    p.add_argument("--max-instructions", type=_count(1), metavar="N",
                   help="stop with an error once the kernel has issued more than N "
                        "instructions and sync statements")
    p.add_argument("--quiet", action="store_true",
                   help="no progress line (shown on a terminal for runs over 2 s)")


def cmd_compare(args) -> int:
    from sim.placement import format_compare, run_comparison
    kernel = load_kernel(args.kernel, _pairs(args.arg, "--arg"))
    c = run_comparison(kernel, _target_name(args, kernel), inputs=_kernel_inputs(args, kernel),
                       seed=args.seed)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        c.figure().savefig(args.plot, dpi=110)
    if args.json:
        _print_json(c.to_json())
    else:
        if c.note:
            print(c.note)
        print(format_compare(c.frame()))
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def cmd_sweep(args) -> int:
    from sim.sweep import sweep
    params = {}
    for name, text in _pairs(args.param, "--param"):
        if name in params:
            raise UserError(f"--param {name}: given twice; list every value once: {name}=V1,V2,...")
        params[name] = [v.strip() for v in text.split(",")]
    modes = args.sync and [m.strip() for m in args.sync.split(",")]
    try:
        df = sweep(args.kernel, params, targets=args.target, sync=modes, scheduler=args.scheduler,
                   workers=args.workers, output=args.output)
    except KeyboardInterrupt:
        print(f"ptosim: interrupted: the configurations finished are in {args.output} and "
              f"{args.output}.journal; run the same command again to resume", file=sys.stderr)
        return 130
    failed = int(df["error"].notna().sum())
    shown = df.drop(columns=["config"]).head(args.rows).astype(object)
    print(shown.where(shown.notna(), "-").to_string(index=False, max_colwidth=60))
    if len(df) > len(shown):
        print(f"... {len(df) - len(shown)} more")
    print(f"{len(df)} configuration{'s' * (len(df) != 1)}, {failed} failed; "
          f"written to {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from sim import __version__
    from sim.engine.mode import SYNC_MODES
    p = _Parser(prog="ptosim", description="Cycle-approximate simulator of the Ascend PTO tile ISA.",
                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ptosim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="simulate a kernel and print its cycle report",
                       description="Simulate KERNEL.pto (PTO IR) or KERNEL.py (defines build() "
                                   "-> sim.Kernel) and print total, per-pipe and "
                                   "per-instruction cycles.",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _kernel_target(r)
    r.add_argument("--func", dest="function", metavar="NAME",
                   help="the function to run when the file has several (default: the one "
                        "marked pto.entry, else the first public function nothing calls)")
    _kernel_args(r)
    _output_arg(r, "--output", action="append", metavar="NAME=FILE.npy", pairs=True,
                help="write a GM pointer argument's final contents as a .npy array to exactly "
                     "FILE, shaped like its --input array or its tensor view (repeatable)")
    r.add_argument("--json", action="store_true",
                   help="print one JSON object: total_cycles, pipes {busy_cycles, utilization}, ...")
    from sim.trace.export import SUFFIXES as trace_suffixes
    _output_arg(r, "--trace", metavar="FILE.{csv,json,parquet}", suffixes=trace_suffixes,
                   help="write the timing trace (one row per instruction): CSV, Chrome Trace "
                        "Event JSON for Perfetto / chrome://tracing, or Parquet, by suffix")
    _output_arg(r, "--plot", metavar="FILE.png", suffixes=_plot_suffixes,
                help="write the pipeline-occupancy Gantt (format by suffix: .png, .svg, .pdf ...)")
    r.add_argument("--timing-only", action="store_true", help="skip the functional units")
    r.add_argument("--block-dim", type=_count(1), default=None, metavar="N",
                   help="physical cores that run the kernel SPMD (default: a .py kernel's own "
                        "block_dim, else 1); the report and --json add per core/unit figures")
    r.add_argument("--detail", choices=("op", "cce"), default="op",
                   help="trace granularity: one row per PTO op (default) or also one row per "
                        "lowered CCE instruction (kind 'cce'), showing why an op costs what it costs")
    r.add_argument("--seed", type=_count(0), default=0, help="seed for unbound GM inputs (default 0)")
    r.add_argument("--trace-rows", choices=("full", "ops", "none"), default="full",
                   help="trace rows kept: all (default), no sync rows, or none (totals only; "
                        "fastest, for sweeps)")
    r.add_argument("--rows", type=_count(0), default=40,
                   help="instructions listed in the report (default 40)")
    r.add_argument("--sync", choices=SYNC_MODES, default=None,
                   help="synchronisation mode. Default: a kernel with no set_flag / wait_flag / "
                        "pipe_barrier / record_event / wait_event in any function runs in auto "
                        "mode (sync inserted and unaddressed tiles placed as the toolchain's "
                        "auto mode does); a kernel with explicit sync runs as written (manual), "
                        "with a warning when it has races. 'ideal': the default mode's program "
                        "with every wait satisfied at once (a lower bound)")
    _run_limits(r)
    r.set_defaults(func=cmd_run)

    ch = sub.add_parser("check", help="parse and verify a kernel without simulating it",
                        description="Parse KERNEL.pto (or build KERNEL.py) and verify every "
                                    "tile instruction, inside loops and branches too, against "
                                    "the target's rules. Exit 0 when clean (warnings go to "
                                    "stderr), 2 with FILE:LINE:COL: error: ... otherwise.")
    _kernel_target(ch)
    ch.add_argument("--races", action="store_true",
                    help="also run the kernel as written and report races: unordered cross-pipe "
                         "accesses to the same bytes (RAW/WAR/WAW), event ids set again while "
                         "pending, unmatched sets, deadlocks; exit 1 when any is found")
    ch.add_argument("--block-dim", type=_count(1), default=None, metavar="N",
                    help="cores the --races run launches (default: a .py kernel's own "
                         "block_dim, else 1); races across units and cores are found too")
    _kernel_args(ch)
    ch.set_defaults(func=cmd_check)

    cp = sub.add_parser("compare", help="manual vs auto placement and synchronisation",
                        description="Run the kernel as written (manual mode) and as the "
                                    "toolchain's auto mode would: tiles placed by a liveness-based "
                                    "allocator, every set/wait flag inserted from the tile-byte "
                                    "dependencies. Prints total cycles, per-pipe busy cycles, "
                                    "set/wait pairs, barriers, peak bytes per buffer and races, "
                                    "side by side. A chip kernel runs on one core, its pipe rows "
                                    "per unit (AIC, AIV0, AIV1: each has its own pipes and "
                                    "buffers); a kernel that places no tile by hand gets a "
                                    "first line saying so.")
    _kernel_target(cp)
    _kernel_args(cp)
    cp.add_argument("--json", action="store_true",
                    help='print {"manual": {...}, "auto": {...}} with total_cycles, syncs, '
                         'barriers, peak_bytes, ...')
    _output_arg(cp, "--plot", metavar="FILE.png", suffixes=_plot_suffixes,
                    help="write the buffer occupancy maps and pipeline Gantts of both runs")
    cp.add_argument("--seed", type=_count(0), default=0, help="seed for unbound GM inputs (default 0)")
    cp.set_defaults(func=cmd_compare)

    pr = sub.add_parser("print", help="print a kernel as canonical PTO IR",
                        description="Parse KERNEL.pto (or run KERNEL.py as Python and call its "
                                    "build()) and print it back as "
                                    "PTO IR in one canonical spelling (compact tile_buf types, "
                                    "printed sync form); the output parses to the same program.")
    pr.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    pr.set_defaults(func=cmd_print)

    from sim.ops import isolated_opcodes
    o = sub.add_parser("op", help="cycles of one tile instruction in isolation",
                       description="Cost of one vector-pipe instruction with its operands resident "
                                   "in UB and every pipe idle (what a single-instruction "
                                   "measurement sees). Data movement (TLOAD, TSTORE, TMOV, "
                                   "TEXTRACT), the cube (TMATMUL*, TGEMV) and TASSIGN cost only "
                                   "inside a kernel: use ptosim run. Opcodes: "
                                   + " ".join(isolated_opcodes()))
    o.add_argument("opcode", help="opcode as the ISA spells it, e.g. TADD")
    o.add_argument("--dtype", default="f32",
                   help="f32 f16 bf16 i32 i16 i8 u32 u16 u8; TCVT takes SRC>DST, e.g. f32>f16")
    o.add_argument("--shape", default="16x64", help="tile capacity ROWSxCOLS (default 16x64)")
    o.add_argument("--valid", help="valid region ROWSxCOLS (default: the whole tile)")
    o.add_argument("--scalar", type=float, default=2.0, help="scalar operand (default 2.0)")
    o.add_argument("--scalar-first", action="store_true",
                   help="scalar/tile form (TDIVS); not with --inplace")
    o.add_argument("--inplace", action="store_true", help="dst is the same tile as src0; "
                                                          "not with --scalar-first")
    o.add_argument("--target", default="a2a3", help="target name (a2a3, a5) or model directory")
    o.add_argument("--json", action="store_true", help='print {"op": ..., "cycles": int, ...}')
    o.set_defaults(func=cmd_op)

    v = sub.add_parser("validate", help="predict measured single-instruction cases and score them",
                       description="Predict every case of CASES.csv (columns op,dtype,rows,cols,"
                                   "valid_rows,valid_cols,variant,measured_cycles; variant is empty, "
                                   "tile_scalar, scalar_tile, inplace or binary; TCVT dtype f32>f16) "
                                   "and print predicted, measured and accuracy = 1 - |p - m| / m, "
                                   "then the median and mean accuracy and the share within 15% per "
                                   "op family and overall. A case that cannot be predicted (tiles "
                                   "larger than the buffers) gets no prediction and a reason.")
    v.add_argument("cases", metavar="CASES.csv")
    v.add_argument("--target", default="a2a3", help="target name (a2a3, a5) or model directory")
    v.add_argument("--json", action="store_true",
                   help='print {"cases": [...], "summary": {...}, "families": {...}, "median_accuracy": x, ...}')
    v.set_defaults(func=cmd_validate)

    c = sub.add_parser("calibrate", help="fit the vector cost table to measurements",
                       description="Fit start-up latency and per-repeat slope of every CCE vector "
                                   "instruction to MEASUREMENTS.csv (validate's format) by least "
                                   "squares and write a complete model directory usable with "
                                   "--target DIR. Prints validate's summary before and after.")
    c.add_argument("measurements", metavar="MEASUREMENTS.csv")
    c.add_argument("--target", default="a2a3", help="model to start from (default a2a3)")
    _output_arg(c, "-o", "--output", required=True, metavar="NEW_MODEL_DIR", directory=True)
    c.add_argument("--json", action="store_true", help='print {"model", "before", "after"}')
    c.set_defaults(func=cmd_calibrate)

    sw = sub.add_parser("sweep", help="run a kernel over every combination of parameters on Dask",
                        description="Run KERNEL for every combination of the --param values "
                                    "(.py: build() parameters, .pto: scalar arguments), targets "
                                    "and sync modes, in parallel on Dask distributed, and write "
                                    "one row per configuration (parameters, target, sync, "
                                    "total_cycles, busy_cycles[PIPE], syncs, barriers, "
                                    "peak_bytes[BUFFER], races, error) to a Parquet file. Rows "
                                    "are journalled to OUT.journal as they finish; running the "
                                    "same command again skips the configurations done.",
                        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sw.add_argument("kernel", metavar="KERNEL.pto|KERNEL.py")
    sw.add_argument("--param", action="append", metavar="NAME=V1,V2,...",
                    help="values of one parameter (repeatable; the sweep is the cartesian "
                         "product)")
    sw.add_argument("--target", nargs="+", action="extend", metavar="T",
                    help="targets to run on (default: the kernel's own, else a2a3)")
    sw.add_argument("--sync", default=None, metavar="MODE,...",
                    help="sync modes: manual (as written), auto (placed and synchronised by "
                         "the simulator), or both: manual,auto (default: run's rule, manual "
                         "for a kernel with explicit sync, auto otherwise)")
    sw.add_argument("--scheduler", metavar="ADDR",
                    help="a running Dask scheduler, e.g. tcp://host:8786 (default: a local "
                         "cluster of --workers processes)")
    sw.add_argument("--workers", type=int, default=2,
                    help="worker processes of the local cluster (default 2)")
    _output_arg(sw, "-o", "--output", required=True, metavar="RESULTS.parquet",
                suffixes=(".parquet",))
    sw.add_argument("--rows", type=int, default=40, help="rows printed (default 40)")
    sw.set_defaults(func=cmd_sweep)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else [os.fspath(a) for a in argv]
    with _pipe_safe_stdout():
        try:
            parser = build_parser()
            if not argv:
                parser.print_help()
                raise UserError("no command given: ptosim COMMAND ... (the usage is above)")
            args = parser.parse_args(argv)
            from sim.outputs import check_outputs
            check_outputs(_declared_outputs(args), _declared_inputs(args))
            return args.func(args)
        except UserError as e:
            from sim.frontend import ParseError
            # a located diagnostic already reads FILE:LINE:COL: error: ...
            print(printable(str(e) if isinstance(e, ParseError) else f"ptosim: error: {e}"),
                  file=sys.stderr)
            return 2
        except MemoryError as e:        # numpy's, for absurd sizes (--arg n=2**40)
            print(printable(f"ptosim: error: out of memory: {' '.join(str(e).split())}: "
                             f"the kernel's sizes are too large to simulate (smaller --arg "
                             f"values, or --timing-only)"), file=sys.stderr)
            return 2
        except (KeyboardInterrupt, _Interrupted) as e:
            print(f"ptosim: {e or 'interrupted'}", file=sys.stderr)
            return 130


class _PipeSafe:
    """stdout that stops writing, silently, once its reader has gone (``ptosim ... | head``),
    so the command still ends with its own exit code; undecodable file-name bytes in the
    text print as U+FFFD."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:
                return self._stream.write(printable(text))
        except BrokenPipeError:
            self._detach()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._detach()

    def _detach(self):
        # nothing more reaches the reader; point the descriptor at /dev/null so the
        # interpreter's final flush does not complain either
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        self._stream = open(os.devnull, "w")

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _pipe_safe_stdout():
    real = sys.stdout
    sys.stdout = _PipeSafe(real)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = real


if __name__ == "__main__":
    sys.exit(main())
