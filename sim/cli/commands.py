"""What each ``ptosim`` command does, and the helpers they share: kernel arguments and
inputs, output files, the limits and progress line of a long run, JSON output.

``sim.cli.parser`` maps the command line onto these ``cmd_*`` functions; each takes the
parsed arguments and returns the exit code.
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path
from typing import Any

from sim.base.atomic import atomic_path
from sim.base.errors import UserError
from sim.cli.outputs import print_json as _print_json
from sim.cli.outputs import write_run_outputs
from sim.kernel.files import load_kernel, load_stream, scalar_value

__all__ = [
    "cmd_run",
    "cmd_check",
    "cmd_print",
    "cmd_op",
    "cmd_validate",
    "cmd_calibrate",
    "cmd_compare",
    "cmd_sweep",
]


def _program(kernel):
    return kernel.program() if hasattr(kernel, "program") else kernel


def _target_name(args, kernel) -> str:
    """--target > the module's pto.target_arch / pto.device-spec > a2a3 (attributes that
    disagree are an error, or a warning under --target)."""
    from sim.frontend import resolve_target
    from sim.frontend.targets import target_conflict

    program = _program(kernel)
    conflict = args.target and target_conflict(getattr(program, "attrs", ()))
    if conflict:
        print(
            f"ptosim: warning: {args.kernel}: {conflict}; running --target {args.target}",
            file=sys.stderr,
        )
    return resolve_target(program, args.target, where=args.kernel)


def _pairs(items, flag: str) -> list[tuple[str, str]]:
    """NAME=VALUE items of a repeatable flag; a NAME given twice is an error (the last
    one would silently win)."""
    out = []
    seen: dict = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip().removeprefix("%")
        if not sep or not name or not value:
            raise UserError(f"{flag} {item!r}: expected NAME=VALUE")
        if name in seen:
            raise UserError(
                f"{flag} {name}: given twice ({flag} {seen[name]} and {flag} "
                f"{item}); give each name once"
            )
        seen[name] = item
        out.append((name, value))
    return out


def _kernel_inputs(args, kernel, streams=()) -> dict:
    """--arg scalars (a ``.py`` kernel's went to its build()) and --input GM arrays, by
    kernel argument name (of the kernel or of a ``--stream`` beside it: a rank's kernels
    share its GM)."""
    from sim.engine.placement import root_functions
    from sim.isa.program import GmPtr, Scalar

    # the functions the run starts units in: the entry and, in the two-function cube +
    # vector form, its peer (each binds the arguments it declares, by name)
    fn_args = [a for k in (kernel, *streams) for fn in root_functions(_program(k)) for a in fn.args]
    scalars = {a.name: a for a in fn_args if isinstance(a, Scalar)}
    pointers = {a.name: a for a in fn_args if isinstance(a, GmPtr)}
    inputs = {}
    py = Path(args.kernel).suffix == ".py"
    for name, text in _pairs(None if py else args.arg, "--arg"):
        if name not in scalars:
            known = ", ".join(f"%{n}: {a.type}" for n, a in scalars.items()) or "none"
            raise UserError(
                f"--arg {name}: the kernel has no scalar argument %{name} "
                f"(scalar arguments: {known})"
            )
        inputs[name] = scalar_value(name, text, scalars[name].type)
    for name, path in _pairs(args.input, "--input"):
        if name not in pointers:
            known = ", ".join(f"%{n}" for n in pointers) or "none"
            raise UserError(
                f"--input {name}: the kernel has no GM pointer argument %{name} "
                f"(pointer arguments: {known})"
            )
        inputs[name] = _load_array(path, f"--input {name}")
    for name, _ in _pairs(getattr(args, "output", None), "--output"):
        if name not in pointers:
            known = ", ".join(f"%{n}" for n in pointers) or "none"
            raise UserError(
                f"--output {name}: the kernel has no GM pointer argument %{name} "
                f"(pointer arguments: {known})"
            )
    return inputs


def _load_array(path: str, what: str):
    import numpy as np

    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{what}: {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{what}: {path}: is a directory, expected a .npy file") from None
    except PermissionError as e:
        raise UserError(f"{what}: {path}: cannot read: {e.strerror}") from None
    except (OSError, ValueError) as e:
        # numpy's text for an object array suggests allow_pickle: never load pickles
        why = (
            "holds Python objects (a pickle), not numbers"
            if "pickle" in str(e).lower()
            else " ".join(str(e).split())
        )
        raise UserError(
            f"{what}: {path}: not a numeric .npy array ({why}); save one with numpy.save"
        ) from None
    if not isinstance(arr, np.ndarray):
        raise UserError(f"{what}: {path}: expected one array (.npy), found an archive")
    return arr


def _save_outputs(args, result, kernel, inputs) -> None:
    """Each ``--output NAME=FILE`` as a .npy array written to exactly FILE, in the shape its
    ``--input`` array or its tensor view gave it (flat when none did). A run with ranks has
    a GM per rank: the array gets a leading rank axis, rank ``r``'s GM at index ``r``."""
    import numpy as np

    ranks = len(result.ranks) if args.ranks else 0
    for name, path in _pairs(args.output, "--output"):
        try:
            if ranks:
                per_rank = [result.output(name, r) for r in range(ranks)]
            else:
                per_rank = [result.output(name)]
        except KeyError:
            raise UserError(f"--output {name}: the kernel never touched %{name}") from None
        shape = _output_shape(_program(kernel), name, per_rank[0].size, inputs.get(name))
        arrs = [a.reshape(shape) if shape else a for a in per_rank]
        with atomic_path(path) as tmp, open(tmp, "wb") as f:  # np.save(name) would add .npy
            np.save(f, np.stack(arrs) if ranks else arrs[0])


def _output_shape(program, name: str, size: int, given) -> tuple | None:
    """The shape of GM argument ``name``: its --input array's, else that of the first
    tensor view of it whose dims are constants; None when neither holds ``size`` elements."""
    from sim.isa.program import Arith, Const, MakeTensorView, walk

    if given is not None and getattr(given, "size", None) == size:
        return given.shape
    for f in sorted(program.functions, key=lambda f: f is not program.main):
        body = list(walk(f.body))
        known: dict[Any, Any] = {
            st.result.name: st.operands[0].value
            for st in body
            if isinstance(st, Arith)
            and st.op == "arith.constant"
            and isinstance(st.operands[0], Const)
        }
        for st in body:
            if isinstance(st, MakeTensorView) and st.ptr.name == name:
                dims: list[Any] = [
                    d.value if isinstance(d, Const) else known.get(getattr(d, "name", None), s)
                    for d, s in zip(st.shape, st.result.shape, strict=True)
                ]
                if all(type(d) is int for d in dims) and math.prod(dims) == size:
                    return tuple(dims)
    return None


def _select_function(args, kernel):
    """The kernel with the function ``--func`` names as its entry (without --func, the run's
    warnings say which one runs when the file has several kernel functions)."""
    program = _program(kernel)
    name = getattr(args, "function", None)
    if name is None:  # the run's warnings say which of several kernel functions runs
        return kernel
    name = name.removeprefix("@")
    names = [f.name for f in program.functions]
    if name not in names:
        raise UserError(
            f"--func {name}: {args.kernel} has no function @{name} (functions: "
            f"{', '.join('@' + n for n in names)})"
        )
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
        from sim.cli.progress import Progress

        progress = Progress(label)
    return Limits(args.max_cycles, args.max_instructions, progress)


@contextlib.contextmanager
def _bounded(args, limits):
    """A run stopped by a limit or Ctrl-C writes the trace recorded so far to --trace."""
    try:
        yield
    except Exception as e:
        from sim.engine.limits import RunStopped

        trace = getattr(args, "trace", None)  # compare writes no trace
        if isinstance(e, RunStopped) and trace and e.trace is not None:
            from sim.trace.export import write_trace

            write_trace(e.trace, trace, kernel=args.kernel)
            raise RunStopped(f"{e}; the partial trace is in {trace}", e.cycle, e.items) from None
        raise
    except KeyboardInterrupt as e:
        from sim.engine.limits import RunInterrupted

        if not isinstance(e, RunInterrupted):
            raise _Interrupted("interrupted") from None
        kept = ""
        if getattr(args, "trace", None):  # the partial trace, built for it only
            from sim.trace.export import write_trace

            write_trace(e.trace, args.trace, kernel=args.kernel)
            kept = f" ({len(e.trace)} trace rows recorded); the partial trace is in {args.trace}"
        raise _Interrupted(f"interrupted at cycle {e.cycle}{kept}") from None
    finally:
        if limits.progress is not None:
            limits.progress.close()


class _Interrupted(Exception):
    """Ctrl-C, with the one line to print."""


def _needs_ranks(args) -> None:
    given = [f for f in ("stream", "comm_context") if getattr(args, f, None)]
    if args.ranks is None and given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise UserError(f"{flags}: a run with these needs --ranks N (the ranks they address)")


def cmd_run(args) -> int:
    from sim.engine.run import simulate

    kernel = _select_function(args, load_kernel(args.kernel, _pairs(args.arg, "--arg")))
    target = _target_name(args, kernel)
    _needs_ranks(args)
    streams = [load_stream(spec, _pairs(args.arg, "--arg")) for spec in args.stream or ()]
    inputs = _kernel_inputs(args, kernel, streams)
    if args.timing_only and args.output:
        raise UserError(
            "--output with --timing-only: a timing-only run computes no data "
            "(the arrays would be zeros); drop --timing-only to write outputs"
        )
    if args.trace_rows is None:  # the report reads no sync row; a written trace does
        args.trace_rows = "full" if args.trace or args.plot else "ops"
    if args.trace_rows == "none" and (args.trace or args.plot):
        raise UserError(
            "--trace-rows none keeps no trace to write; drop --trace/--plot or "
            "keep the rows (--trace-rows full or ops)"
        )
    limits = _limits(args, Path(args.kernel).name)
    with _bounded(args, limits):
        result = simulate(
            kernel,
            target,
            inputs=inputs,
            functional=not args.timing_only,
            seed=args.seed,
            fill=args.inputs,
            detail=args.detail,
            trace=args.trace_rows,
            sync=args.sync,
            races=False if args.no_races else "manual",
            limits=limits,
            block_dim=args.block_dim,
            free=args.free,
            ranks=args.ranks,
            comm_context=args.comm_context,
            streams=streams,
            sample_waves=args.sample_waves,
        )
    _save_outputs(args, result, kernel, inputs)
    write_run_outputs(result, args)
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
    from sim.isa.program import Instr, walk
    from sim.target import load_target

    kernel = load_kernel(args.kernel, _pairs(args.arg, "--arg"))
    program = _program(kernel)
    target = load_target(_target_name(args, kernel))
    warnings = check_program(program, target)
    for w in warnings:
        print(w, file=sys.stderr)
    from sim.studies.check import static_findings

    scalars = (
        {}
        if Path(args.kernel).suffix == ".py"
        else {n: v for n, v in _kernel_inputs(args, kernel).items() if type(v) is int}
    )
    placement = static_findings(program, target, scalars)
    if placement:
        what = (
            "placement"
            if all(f.kind in ("capacity", "alignment", "reserved") for f in placement)
            else "static"
        )
        raise UserError(f"{what} check failed: " + "; ".join(f.message for f in placement))
    _placement_check(program, target)
    n = sum(isinstance(st, Instr) for f in program.functions for st in walk(f.body))
    funcs = len(program.functions)
    print(
        f"{args.kernel}: ok: {funcs} function{'s' * (funcs != 1)}, {n} tile instruction"
        f"{'s' * (n != 1)}, verified for {target.name}"
        + (f", {len(warnings)} warning{'s' * (len(warnings) != 1)}" if warnings else "")
    )
    if args.races:
        from sim.studies import check_races, format_findings
        from sim.studies.check import data_reads

        reads = [] if args.timing_only else data_reads(program)
        if reads:  # the race check is timing-only otherwise (check_races)
            print(
                f"ptosim: note: {args.kernel} reads scalars out of data ({reads[0]}"
                f"{f' and {len(reads) - 1} more' if len(reads) > 1 else ''}): its loops, "
                f"branches or addresses may follow the values, so the race check computes "
                f"them (a functional run, slower; --timing-only skips it)",
                file=sys.stderr,
            )
        findings = check_races(
            kernel,
            target,
            inputs=_kernel_inputs(args, kernel),
            block_dim=args.block_dim,
            functional=bool(reads),
        )
        print(format_findings(findings, kernel=args.kernel))
        return 1 if findings else 0
    return 0


def _placement_check(program, target) -> None:
    """Place the tiles as a default run would (auto mode's passes for a kernel without
    sync, liveness placement of the unaddressed tiles of one with sync), so that a kernel
    whose tiles do not fit — or fit only by sharing bytes its flags do not order — fails
    ``check`` exactly as it fails ``run``."""
    from sim.engine.placement import place_tiles
    from sim.engine.run import prepared

    try:
        place_tiles(prepared(program, target).program, target)
    except UserError as e:
        raise UserError(f"placement check failed: {e}") from None


def cmd_print(args) -> int:
    from sim.frontend import print_program

    sys.stdout.write(print_program(_program(load_kernel(args.kernel))))
    return 0


def cmd_op(args) -> int:
    from sim.studies.ops import simulate_case

    if args.inplace and args.scalar_first:
        raise UserError(
            f"op {args.opcode}: --inplace and --scalar-first together: the "
            f"scalar/tile form has no tile source to write in place; give one"
        )
    variant = "inplace" if args.inplace else ("scalar_tile" if args.scalar_first else "")
    run = simulate_case(
        args.opcode,
        args.dtype,
        args.shape,
        args.valid,
        variant=variant,
        scalar=args.scalar,
        target=args.target,
    )
    r, variant = run.value, run.case.variant
    row = r.trace[r.trace["kind"] == "op"].iloc[-1]
    out = {
        "op": row["opcode"],
        "dtype": args.dtype,
        "shape": args.shape,
        "valid": args.valid or args.shape,
        "variant": variant,
        "target": r.target.name,
        "cycles": int(row["duration_cycles"]),
        "repeats": int(row["repeats"]),
        "pipe": row["pipe"],
        "cce": row["cce"],
    }
    if run.in_place_reason:
        out["note"] = run.in_place_reason
    if args.json:
        _print_json(out)
    else:
        print(
            f"{out['op']} {out['dtype']} {out['shape']} (valid {out['valid']}"
            f"{', ' + variant if variant else ''}) on {out['target']}: {out['cycles']} cycles"
        )
        print(f"  {out['pipe']}: {out['cce']}")
        if run.in_place_reason:
            print(f"  note: {run.in_place_reason}")
    return 0


def cmd_validate(args) -> int:
    from sim.studies.accuracy import format_report as format_validation
    from sim.studies.calibrate import load_cases, validate

    report = validate(load_cases(args.cases), args.target, explain=args.explain)
    if args.json:
        _print_json(report)
    else:
        print(format_validation(report))
    return 0


def cmd_calibrate(args) -> int:
    from sim.studies.accuracy import format_report as format_validation
    from sim.studies.calibrate import fit, load_cases, validate, write_model

    cases = load_cases(args.measurements)
    before = validate(cases, args.target)
    out = write_model(
        args.target,
        fit(cases, args.target),
        args.output,
        f"{len(cases)} cases of {args.measurements}",
    )
    after = validate(cases, out)
    if args.json:
        _print_json({"model": str(out), "before": before, "after": after})
        return 0
    print(f"before ({before['target']}):")
    print(format_validation(before).splitlines()[-1])
    print(f"after ({out}):")
    print(format_validation(after).splitlines()[-1])
    shown = out if "/" in str(out) else f"./{out}"  # a bare name means a bundled target
    print(f"calibrated model written to {out}; use it with --target {shown}")
    return 0


def cmd_compare(args) -> int:
    from sim.studies import format_compare, run_comparison

    _needs_ranks(args)
    kernel = _select_function(args, load_kernel(args.kernel, _pairs(args.arg, "--arg")))
    target = _target_name(args, kernel)
    streams = [load_stream(spec, _pairs(args.arg, "--arg")) for spec in args.stream or ()]
    inputs = _kernel_inputs(args, kernel, streams)
    limits = _limits(args, Path(args.kernel).name)
    with _bounded(args, limits):
        c = run_comparison(
            kernel,
            target,
            inputs=inputs,
            seed=args.seed,
            functional=not args.timing_only,
            block_dim=args.block_dim,
            limits=limits if limits.active else None,
            free=args.free,
            ranks=args.ranks,
            comm_context=args.comm_context,
            streams=streams,
            sample_waves=args.sample_waves,
        )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        with atomic_path(args.plot) as tmp:
            c.figure().savefig(tmp, dpi=110)
    if args.json:
        _print_json(c.to_json())
    else:
        if c.note:
            print(c.note)
        print(format_compare(c.frame()))
        if c.sampled:
            print(c.sampled)
        if c.warnings:
            print("\n" + "\n".join(c.warnings))
        if args.plot:
            print(f"plot written to {args.plot}")
    stuck = [(run.mode, run.deadlock) for run in (c.manual, c.auto) if run.deadlock]
    if stuck:  # the table shows what ran; the exit code must not say all went well
        mode, why = stuck[0]
        print(
            f"ptosim: error: the {mode} run deadlocked, so its column is empty: "
            f"{' '.join(why.split())}",
            file=sys.stderr,
        )
        return 2
    return 0


def cmd_sweep(args) -> int:
    from sim.studies.sweep import sweep

    _needs_ranks(args)
    params = {}
    for name, text in _pairs(args.param, "--param"):
        if name in params:
            raise UserError(f"--param {name}: given twice; list every value once: {name}=V1,V2,...")
        values = [v.strip() for v in text.split(",")]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise UserError(
                f"--param {name}: value{'s' * (len(twice) > 1)} "
                f"{', '.join(twice)} listed twice; list every value once"
            )
        params[name] = values
    modes = args.sync and [m.strip() for m in args.sync.split(",")]
    try:
        df = sweep(
            args.kernel,
            params,
            targets=args.target,
            sync=modes,
            scheduler=args.scheduler,
            workers=args.workers,
            output=args.output,
            ranks=args.ranks,
            comm_context=args.comm_context,
            streams=args.stream or (),
            block_dim=args.block_dim,
            sample_waves=args.sample_waves,
        )
    except KeyboardInterrupt as e:
        if getattr(e, "rows", None) == 0:
            print(
                f"ptosim: interrupted before any configuration finished; nothing was "
                f"written to {args.output}",
                file=sys.stderr,
            )
        else:
            print(
                f"ptosim: interrupted: the configurations finished are in {args.output} and "
                f"{args.output}.journal; run the same command again to resume",
                file=sys.stderr,
            )
        return 130
    failed = int(df["error"].notna().sum())
    shown = df.drop(columns=["config"]).head(args.rows).astype(object)
    print(shown.where(shown.notna(), "-").to_string(index=False, max_colwidth=60))
    if len(df) > len(shown):
        print(f"... {len(df) - len(shown)} more")
    print(
        f"{len(df)} configuration{'s' * (len(df) != 1)}, {failed} failed; written to {args.output}"
    )
    return 0
