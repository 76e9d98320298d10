"""Hostile input to ``ptosim``: one clear line and exit 2 for every user error,
outputs checked before any work, bounded and interruptible runs, safe target names, the
rules of ``.py`` kernels and consistent ``--json``.

Most cases call ``sim.cli.main(argv)`` in-process from a temporary directory (fast); a few
run the installed console script the way a user does (pipes, undecodable file names).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_fixtures import one_line_error
from dma_formula import dma_cycles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_placement import RACY  # a kernel with cross-pipe races (check --races: exit 1)

from sim.cli import main
from sim.frontend.diagnostics import MAX_SHOWN, render
from sim.frontend.parse import MAX_NESTING

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RELU = str(EXAMPLES / "relu_sub.py")  # RELU_CYCLES (tests/test_cli.py derives it)
RELU_CYCLES = 16 * dma_cycles("GM_UB", 8192) + 180 + dma_cycles("UB_GM", 8192)
TSUB = str(EXAMPLES / "tsub.pto")  # %po: a 32x64 f32 tensor view
SCRIPT = shutil.which("ptosim", path=os.path.dirname(sys.executable))
HEADER = "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n"

SIZED = textwrap.dedent("""\
    import sim

    def build(n=16):
        k = sim.Kernel("sized")
        x = k.gm("x", "f32", (n, 64))
        t = k.tile("vec", "f32", 16, 64)
        k.TLOAD(t, x[n - 16:n, :])
        return k
    """)


def located_error(code, err, *needles):
    assert code == 2 and "Traceback" not in err, err
    head = err.splitlines()[0]
    assert ": error: " in head, head
    for n in needles:
        assert n in head, (n, head)


def nested_loops(depth: int) -> str:
    opens = "".join(f"scf.for %i{d} = %c0 to %c1 step %c1 {{\n" for d in range(depth))
    return (
        "module {\n  func.func @k() {\n    %c0 = arith.constant 0 : index\n"
        "    %c1 = arith.constant 1 : index\n" + opens + "}\n" * depth + "    return\n  }\n}\n"
    )


# --- no traceback for user input -------------------------------------------------------


def test_nesting_past_the_limit_is_a_located_error(cli, tmp_path):
    (tmp_path / "deep.pto").write_text(nested_loops(500))
    for command in ("check", "run", "print"):
        code, _, err = cli(command, "deep.pto")
        located_error(
            code, err, "deep.pto:", f"nested {MAX_NESTING + 1} deep", f"at most {MAX_NESTING}"
        )


def test_nesting_at_the_limit_runs(cli, tmp_path):
    (tmp_path / "ok.pto").write_text(nested_loops(MAX_NESTING))
    code, out, err = cli("check", "ok.pto")
    assert code == 0 and "ok:" in out, err
    code, out, err = cli("run", "ok.pto", "--json")
    assert code == 0, err
    assert json.loads(out)["total_cycles"] >= 0


@pytest.mark.parametrize(
    "text, chain",
    [
        ("module {\n func.func @k() {\n func.call @k() : () -> ()\n return\n }\n}\n", "@k -> @k"),
        (
            "module {\n func.func private @b() {\n func.call @a() : () -> ()\n return\n }\n"
            " func.func private @a() {\n func.call @b() : () -> ()\n return\n }\n"
            " func.func @k() {\n func.call @a() : () -> ()\n return\n }\n}\n",
            "@b",
        ),
    ],
)
def test_recursion_is_rejected_by_check_and_run(cli, tmp_path, text, chain):
    (tmp_path / "rec.pto").write_text(text)
    code, out, err = cli("check", "rec.pto")
    located_error(code, err, "rec.pto:", "recursive call", chain)
    assert "ok" not in out
    code, _, err = cli("run", "rec.pto")
    one_line_error(code, err, "recursive call")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--seed", "-1"], "--seed"),
        (["--rows", "-5"], "--rows"),
        (["--max-cycles", "0"], "--max-cycles"),
        (["--max-instructions", "x"], "--max-instructions"),
    ],
)
def test_bad_counts_are_argument_errors(cli, args, needle):
    one_line_error(*cli("run", RELU, *args)[::2], needle)


def test_negative_and_absurd_sizes(cli, tmp_path):
    (tmp_path / "sized.py").write_text(SIZED)
    code, _, err = cli("run", "sized.py", "--arg", "n=-16")
    one_line_error(code, err, "-16")
    code, _, err = cli("run", "sized.py", "--arg", f"n={2**40}")
    one_line_error(code, err, "too large")


def test_unwritable_and_unknown_outputs(cli, tmp_path):
    (tmp_path / "file.txt").write_text("x")
    for flag, path, needle in [
        ("--trace", "file.txt/sub/t.csv", "not a directory"),
        ("--plot", "occupancy.png2", "'.png2'"),
        ("--trace", "t.txt", "'.txt'"),
        ("--plot", ".", "(none)"),
    ]:
        code, _, err = cli("run", RELU, flag, path)
        one_line_error(code, err, flag, needle)


def test_a_read_only_mount_is_refused(cli):
    if not os.path.isdir("/sys/kernel"):
        pytest.skip("no /sys")
    code, _, err = cli("run", RELU, "--trace", "/sys/kernel/t.csv")
    one_line_error(code, err, "--trace /sys/kernel/t.csv", "cannot write")


def test_kernel_file_names(cli, tmp_path):
    one_line_error(*cli("run", "a" * 300 + ".py")[::2], "too long")
    one_line_error(*cli("run", str(tmp_path))[::2], "is a directory")
    bad = os.fsdecode(b"\xff\xfe.pto")
    (tmp_path / bad).write_bytes(b"module {\n func.func @k() {\n return\n }\n}\n")
    for command in ("check", "run", "print"):
        one_line_error(*cli(command, bad)[::2], "not valid UTF-8")


def test_undecodable_kernel_name_from_the_console_script(tmp_path):
    if SCRIPT is None:
        pytest.skip("console script not installed")
    p = subprocess.run(
        [SCRIPT.encode(), b"run", b"\xff\xfe.pto"], cwd=tmp_path, capture_output=True, timeout=120
    )
    assert p.returncode == 2 and b"Traceback" not in p.stderr
    assert p.stderr.count(b"\n") == 1 and b"not valid UTF-8" in p.stderr


@pytest.mark.parametrize(
    "rows, needle",
    [
        ("", "no cases"),
        ("TADD,f32,16,64,16,64,,nan\n", "'nan'"),
        ("TADD,f32,16,64,16,64,,inf\n", "'inf'"),
        ("TADD,f32,16,64,16,64,,1e30\n", "'1e30'"),
        ("TADD,f32,16,64,16,64,,-3\n", "'-3'"),
    ],
)
def test_bad_case_files(cli, tmp_path, rows, needle):
    (tmp_path / "c.csv").write_text(HEADER + rows)
    for command in (["validate", "c.csv"], ["calibrate", "c.csv", "-o", "m"]):
        one_line_error(*cli(*command)[::2], "c.csv", needle)
    assert not (tmp_path / "m").exists()  # nothing written for a refused file


def test_a_case_that_cannot_run_alone_is_reported_not_fatal(cli, tmp_path):
    # validate never aborts a file for one case; calibrate has nothing to fit
    (tmp_path / "c.csv").write_text(
        HEADER + "TLOAD,f32,16,64,16,64,,56\nTADD,f32,16,64,16,64,,56\n"
    )
    code, out, err = cli("validate", "c.csv", "--json")
    assert code == 0, err
    load, add = json.loads(out)["cases"]
    assert (
        load["predicted"] is None and "TLOAD" in load["reason"] and "ptosim run" in load["reason"]
    )
    assert add["predicted"] is not None
    (tmp_path / "t.csv").write_text(HEADER + "TLOAD,f32,16,64,16,64,,56\n")
    one_line_error(*cli("calibrate", "t.csv", "-o", "m")[::2], "nothing to calibrate")
    assert not (tmp_path / "m").exists()


def test_binary_and_bom_case_files(cli, tmp_path):
    (tmp_path / "b.csv").write_bytes(bytes(range(256)) * 4)
    one_line_error(*cli("validate", "b.csv")[::2], "not a UTF-8")
    (tmp_path / "bom.csv").write_text(HEADER + "TADD,f32,16,64,16,64,,56\n", encoding="utf-8-sig")
    code, out, err = cli("validate", "bom.csv", "--json")
    assert code == 0, err
    assert json.loads(out)["cases"][0]["predicted"] == 56


def test_calibrate_refuses_an_existing_file_as_its_model_directory(cli, tmp_path):
    (tmp_path / "c.csv").write_text(HEADER + "TADD,f32,16,64,16,64,,56\n")
    (tmp_path / "taken").write_text("keep me")
    one_line_error(*cli("calibrate", "c.csv", "-o", "taken")[::2], "taken", "not a directory")
    assert (tmp_path / "taken").read_text() == "keep me"


@pytest.mark.parametrize("op", ["TLOAD", "TSTORE", "TMATMUL", "TASSIGN"])
def test_op_names_what_it_supports(cli, op):
    code, _, err = cli("op", op)
    one_line_error(code, err, op, "ptosim run", "TADD")
    assert "bin/" not in err and ".py:" not in err  # names the op, not a script


def test_op_help_text(capsys):
    with pytest.raises(SystemExit):
        main(["op", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "TADD" in out and "TROWSUM" in out and "TLOAD" in out and "ptosim run" in out


def test_op_inplace_and_scalar_first_conflict(cli):
    one_line_error(
        *cli("op", "TDIVS", "--inplace", "--scalar-first")[::2], "--inplace", "--scalar-first"
    )


# --- outputs -----------------------------------------------------------------------------


def test_outputs_are_checked_before_anything_is_written(cli, tmp_path):
    code, _, err = cli("run", TSUB, "--output", "po=o.npy", "--trace", "t.txt")
    one_line_error(code, err, "--trace t.txt")
    assert not (tmp_path / "o.npy").exists()


def test_output_writes_exactly_the_path_in_the_views_shape(cli, tmp_path):
    a = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    b = np.ones((32, 64), np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    code, out, err = cli(
        "run", TSUB, "--input", "pa=a.npy", "--input", "pb=b.npy", "--output", "po=sub/q.npy"
    )
    assert code == 0, err
    assert (tmp_path / "sub" / "q.npy").exists() and not (tmp_path / "sub" / "q.npy.npy").exists()
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["q.npy"]  # no temporary left
    got = np.load(tmp_path / "sub" / "q.npy")
    assert got.shape == (32, 64)
    np.testing.assert_array_equal(got, a - b)
    assert "q.npy" in out


def test_output_never_overwrites_an_input_or_the_kernel(cli, tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((32, 64), np.float32))
    one_line_error(
        *cli("run", TSUB, "--input", "pa=a.npy", "--output", "pa=a.npy")[::2], "would overwrite"
    )
    one_line_error(*cli("run", TSUB, "--output", f"po={TSUB}")[::2], "would overwrite")
    one_line_error(
        *cli("run", TSUB, "--output", "po=x.npy", "--output", "pb=x.npy")[::2], "also written"
    )


def test_plot_to_a_directory_is_an_error(cli, tmp_path):
    (tmp_path / "d.png").mkdir()
    one_line_error(*cli("run", RELU, "--plot", "d.png")[::2], "is a directory")
    one_line_error(*cli("compare", RELU, "--plot", "d.png")[::2], "is a directory")
    assert not any((tmp_path / "d.png").iterdir())


# --- bounded, visible runs ------------------------------------------------------------------


def test_max_instructions_stops_and_keeps_the_partial_trace(cli, tmp_path):
    code, _, err = cli("run", RELU, "--max-instructions", "20", "--trace", "t.csv")
    one_line_error(code, err, "--max-instructions 20", "cycle", "t.csv")
    assert (tmp_path / "t.csv").exists()


def test_max_cycles_stops_and_keeps_the_partial_trace(cli, tmp_path):
    code, _, err = cli("run", RELU, "--max-cycles", "1000", "--trace", "t.csv")
    one_line_error(code, err, "--max-cycles 1000", "cycle")
    import pandas as pd

    trace = pd.read_csv(tmp_path / "t.csv")
    assert len(trace) > 0 and trace["end_cycle"].max() > 1000


def test_limits_above_the_run_change_nothing(cli):
    code, out, err = cli(
        "run", RELU, "--json", "--max-cycles", str(RELU_CYCLES), "--max-instructions", "100000"
    )
    assert code == 0, err
    assert json.loads(out)["total_cycles"] == RELU_CYCLES


def test_ctrl_c_exits_130_with_one_line_and_the_partial_trace(cli, tmp_path, monkeypatch):
    from sim.engine.limits import Limits

    def interrupt(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Limits, "check", interrupt)
    code, out, err = cli("run", RELU, "--max-cycles", "10000000", "--trace", "t.csv")
    assert code == 130 and "Traceback" not in err
    assert len(err.splitlines()) == 1 and "interrupted at cycle" in err and "t.csv" in err
    assert (tmp_path / "t.csv").exists()


def test_an_interrupted_run_builds_its_partial_trace_only_when_read(monkeypatch):
    # a chip's partial trace took seconds to build (check --races of the 24-core GEMM:
    # 3 s from Ctrl-C to the message), for a check that never reads it
    import sim
    from sim.engine.chip import ChipRecording
    from sim.engine.limits import Limits, RunInterrupted
    from sim.kernel.files import load_kernel

    built = []
    frame = ChipRecording.frame
    monkeypatch.setattr(ChipRecording, "frame", lambda self: built.append(1) or frame(self))

    def interrupt(self):
        if self.cycle > 2000:  # some rows recorded first
            raise KeyboardInterrupt

    monkeypatch.setattr(Limits, "check", interrupt)
    gemm = load_kernel(str(EXAMPLES / "gemm.py"), [])
    with pytest.raises(KeyboardInterrupt) as e:
        sim.simulate(gemm, block_dim=2, limits=Limits(10**9, every=16), functional=False)
    assert isinstance(e.value, RunInterrupted) and not built
    trace = e.value.trace
    assert len(built) == 1 and len(trace) > 0 and e.value.trace is trace
    assert e.value.cycle == int(trace["end_cycle"].max())


def test_ctrl_c_of_the_command_line_process_ends_it_at_once(tmp_path, monkeypatch, capsys):
    # the ptosim process itself (main() reading sys.argv) leaves through os._exit after the
    # message: freeing what a long run built took seconds after a Ctrl-C (check --races
    # of 10^5 iterations: 3 s); a caller of main(argv) gets the code back
    import sim.cli as cli_module
    from sim.engine.limits import Limits

    def interrupt(self):
        raise KeyboardInterrupt

    class Left(Exception):
        pass

    said = []

    def leave(code):
        said.append(capsys.readouterr().err)  # what was written before the process goes
        raise Left(code)

    monkeypatch.setattr(Limits, "check", interrupt)
    monkeypatch.setattr(cli_module.os, "_exit", leave)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ptosim", "run", RELU, "--max-cycles", "10000000"])
    with pytest.raises(Left) as e:
        cli_module.main()
    assert e.value.args == (130,) and said[0].startswith("ptosim: interrupted")
    assert cli_module.main(["run", RELU, "--max-cycles", "10000000"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_limits_report_progress_from_both_hooks():
    import sim
    from sim.engine.limits import Limits

    seen = []
    limits = Limits(progress=lambda items, cycle: seen.append((items, cycle)), every=8)
    r = sim.simulate(_kernel(), "a2a3", limits=limits)
    assert seen and seen[-1] == (limits.items, r.total_cycles)
    assert [c for _, c in seen] == sorted(c for _, c in seen)
    assert limits.items == len(r.trace)


def _kernel():
    import importlib.util

    spec = importlib.util.spec_from_file_location("relu_example", RELU)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def test_progress_line_shows_items_and_cycle():
    import io

    from sim.cli.progress import Progress

    buf = io.StringIO()
    p = Progress("k.pto", delay_s=0, file=buf)
    p(100, 12345)
    p._bar.refresh()
    p.close()
    text = buf.getvalue()
    assert "k.pto" in text and "100" in text and "12,345" in text


def test_auto_modes_passes_report_progress_before_the_run():
    """A kernel without sync spends most of a first run in auto mode's passes, before any
    item issues: a progress object with ``preparing`` hears how far they are."""
    import sim
    from sim.engine.limits import Limits

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import kernels

    class Seen:
        def __init__(self):
            self.prepared, self.items = [], []

        def __call__(self, items, cycle):
            self.items.append(items)

        def preparing(self, n):
            assert not self.items  # before the run's first report
            self.prepared.append(n)

    auto, manual = Seen(), Seen()
    assert (
        sim.simulate(
            kernels.build("auto", 9000), functional=False, limits=Limits(progress=auto)
        ).mode
        == "auto"
    )
    assert auto.prepared == [4096, 8192] and auto.items
    sim.simulate(kernels.build("vector", 9000), functional=False, limits=Limits(progress=manual))
    assert manual.prepared == [] and manual.items


def test_progress_line_shows_auto_modes_passes():
    import io

    from sim.cli.progress import Progress

    buf = io.StringIO()
    p = Progress("k.py", delay_s=0, file=buf)
    p.preparing(40960)
    p._bar.refresh()
    p.close()
    assert "k.py" in buf.getvalue() and "auto mode: sync for 40,960 instructions" in buf.getvalue()


def test_no_progress_without_a_terminal_or_with_quiet(tmp_path):
    if SCRIPT is None:
        pytest.skip("console script not installed")
    p = subprocess.run(
        [SCRIPT, "run", RELU, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0 and p.stderr == ""


# --- targets ---------------------------------------------------------------------------


def test_a_target_name_means_the_bundled_model(cli, tmp_path):
    (tmp_path / "a2a3").mkdir()
    (tmp_path / "a2a3" / "machine.toml").write_text("this is not toml [")
    code, out, err = cli("op", "TADD", "--json")
    assert code == 0 and json.loads(out)["cycles"] == 56, err
    code, out, err = cli("op", "TADD", "--target", "a2a3", "--json")
    assert code == 0 and json.loads(out)["cycles"] == 56, err
    code, _, err = cli("op", "TADD", "--target", "./a2a3")
    one_line_error(code, err, "machine.toml")
    one_line_error(*cli("op", "TADD", "--target", "nosuchdir/")[::2], "nosuchdir")


# --- .py kernels --------------------------------------------------------------------------


def test_sys_exit_in_build_is_an_error(cli, tmp_path):
    (tmp_path / "k.py").write_text("import sys\n\ndef build():\n    sys.exit(0)\n")
    one_line_error(*cli("run", "k.py")[::2], "k.py", "sys.exit")
    (tmp_path / "m.py").write_text("import sys\nsys.exit(3)\n")
    one_line_error(*cli("check", "m.py")[::2], "m.py", "sys.exit")


def test_sibling_modules_import(tmp_path):
    (tmp_path / "kern").mkdir()
    (tmp_path / "kern" / "shapes_h12.py").write_text("ROWS = 16\n")
    (tmp_path / "kern" / "k.py").write_text(
        textwrap.dedent("""\
        import sim
        from shapes_h12 import ROWS

        def build():
            k = sim.Kernel("sib")
            x = k.gm("x", "f32", (ROWS, 64))
            t = k.tile("vec", "f32", ROWS, 64)
            k.TLOAD(t, x)
            return k
        """)
    )
    if SCRIPT is None:
        pytest.skip("console script not installed")
    p = subprocess.run(
        [SCRIPT, "run", "kern/k.py", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["instructions"] == 1


def test_help_says_py_kernels_are_executed(capsys):
    for command in ("run", "print"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "as Python" in out, command


# --- consistency ----------------------------------------------------------------------------


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_json_is_strict_across_commands(cli, tmp_path):
    (tmp_path / "c.csv").write_text(HEADER + "TADD,f32,16,64,16,64,,56\n")
    shapes = {}
    for command in (["run", RELU], ["compare", RELU], ["validate", "c.csv"], ["op", "TADD"]):
        code, out, err = cli(*command, "--json")
        assert code == 0, err
        shapes[command[0]] = _strict(out)
    run = shapes["run"]
    assert isinstance(run["total_cycles"], int)
    assert all(isinstance(v["busy_cycles"], int) for v in run["pipes"].values())
    for mode in ("manual", "auto"):
        assert isinstance(shapes["compare"][mode]["total_cycles"], int)


def test_json_turns_nan_into_null(capsys):
    from sim.cli.commands import _print_json

    _print_json({"a": float("nan"), "b": [np.float64(math.inf), np.int64(3)], "c": 1.5})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [None, 3], "c": 1.5}


def test_a_closed_pipe_keeps_the_exit_code(tmp_path, monkeypatch, capsys):
    (tmp_path / "racy.py").write_text(RACY)

    class Closed:
        def write(self, text):
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["check", "--races", str(tmp_path / "racy.py")]) == 1


def test_check_races_piped_to_head_exits_1(tmp_path):
    if SCRIPT is None:
        pytest.skip("console script not installed")
    (tmp_path / "racy.py").write_text(RACY)
    p = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"'{SCRIPT}' check --races racy.py | head -c1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr and "Exception" not in p.stderr


def test_long_source_lines_are_cut_around_the_caret():
    line = "x" * 700 + "BAD" + "y" * 700
    text = render("k.pto", 1, 701, "boom", text=line)
    head, src, caret = text.splitlines()
    assert len(src) <= MAX_SHOWN + 8 and "BAD" in src
    assert src[len(caret) - 1] == "B"
    short = render("k.pto", 1, 3, "boom", text="abcdef").splitlines()
    assert short[1] == "abcdef" and short[2] == "  ^"


def test_no_arguments_prints_usage(cli):
    code, out, err = cli()
    assert code == 2 and "usage: ptosim" in out
    one_line_error(code, err)


# --- random argument vectors -----------------------------------------------------------

_WORDS = [
    "run",
    "check",
    "compare",
    "print",
    "op",
    "validate",
    "calibrate",
    "TADD",
    "TLOAD",
    "--json",
    "--trace",
    "--plot",
    "--output",
    "--input",
    "--arg",
    "--seed",
    "--rows",
    "--target",
    "--max-cycles",
    "--max-instructions",
    "--quiet",
    "--timing-only",
    "--shape",
    "--dtype",
    "--inplace",
    "--scalar-first",
    "-o",
    "--races",
    "a2a3",
    "./a2a3",
    "t.csv",
    "t.txt",
    "p.png",
    "d",
    "x=o.npy",
    "pa=o.npy",
    "n=-1",
    "-5",
    "0",
    "3",
    "16x64",
    "f32",
    "nan",
    "",
    "\u00e9",
    "c.csv",
    "k.py",
    "k.pto",
    str(EXAMPLES / "trelu.pto"),
    "=",
    "%",
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(_WORDS), max_size=6))
def test_random_argument_vectors_never_trace_back(tmp_path, capsys, argv):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "k.py").write_text("def build(n=1):\n    return n\n")
        (tmp_path / "k.pto").write_text("module {\n func.func @k() {\n return\n }\n}\n")
        (tmp_path / "c.csv").write_text(HEADER + "TADD,f32,16,64,16,64,,56\n")
        try:
            code = main(argv)
        except SystemExit as e:  # --help / --version
            code = e.code
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
