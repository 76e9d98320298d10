"""The ``ptosim`` command-line contract, run as a user runs it.

Every invocation is a subprocess started in a fresh temporary directory (cwd=tmp_path), so
the package and its bundled models must work from anywhere, not only from the checkout.
Two entry points: ``python -m sim`` and the installed console script ``ptosim``.

Hand-derived numbers (timing-model.md §2, §4, §5.1, §5.3; a2a3 constants):
* TADD f32 16x64: one vadd of 16 repeats: 24 + 2*16 = 56.
* TADD f32 16x64 valid 8x48: rows not contiguous, one repeat per capacity row -> row-repeat
  path: one masked vadd of 8 repeats (F-op: +16 floor) + 2 cfg: 2 + 24 + 2*8 + 16 = 58.
* TDIVS f32 16x64 in place: vmuls of 16 repeats: 26 + 16 = 42; out of place (either form):
  vector_dup (24 + 16) + barrier 1 + vdiv right after the barrier. a2a3 sets
  ``barrier_restart = "tail"``: the restarted vdiv pays tail 19 + 4*16 = 83 -> 124 (§4's
  "latency" arithmetic would re-pay head + tail: 30 + 64 -> 135).
* TCVT f32>f16 16x64: E = 256 / max(4, 2) = 64 lanes, 16 repeats of vconv: 27 + 16 = 43.
* examples/relu_sub.py: 8 chunks of 32x64 f32 (8192 B each). Transfers cost
  startup + floor(bytes / bytes_per_cycle) of their path, the figures read from
  models/a2a3/machine.toml (tests/dma_formula.py):
    TLOAD  = GM->UB 213.6 + floor(8192 / 143.45) = 213.6 + 57 = 270.6 -> 271 cycles,
             2 per chunk -> MTE2 busy 16*271 = 4336
    TSTORE = UB->GM 213.6 + floor(8192 / 109.38) = 213.6 + 74 = 287.6 -> 288 cycles,
             1 per chunk -> MTE3 busy 8*288 = 2304
    per chunk on V: TSUB waits for its loads with V idle -> cold, 24 + 2*32 = 88; TRELU and
      TMULS follow same-pipe tokens, i.e. pipe_barrier(PIPE_V) on a busy pipe -> restart
      ("tail" rule: tail + slope*rep, full mask so no floor): TRELU 13 + 32 = 45, TMULS
      15 + 32 = 47 -> 180 per chunk; V busy 8*180 = 1440
    MTE2 is the bottleneck (2 loads per chunk outlast V's 180 and one store): total =
    4336 (all loads) + 180 (last chunk) + 288 (last store) = 4804.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dma_formula import dma_cycles

from sim.trace.schema import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "relu_sub.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

_SCRIPT = shutil.which("ptosim", path=os.path.dirname(sys.executable))


def _env():
    # Keep the environment, but make sure nothing points Python at the checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    return env


def _module(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )


def _script(args, cwd):
    if _SCRIPT is None:
        pytest.skip("console script ptosim not installed next to this interpreter")
    return subprocess.run(
        [_SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=_env()
    )


def _concurrently(arg_lists, cwd):
    """Run several `python -m sim` invocations at once (they are independent)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda a: _module([str(x) for x in a], cwd), arg_lists))


@pytest.fixture(params=["module", "script"])
def ptosim(request, tmp_path):
    """Run the CLI from tmp_path, as `python -m sim` or as the console script."""
    runner = _module if request.param == "module" else _script
    return lambda *args: runner([str(a) for a in args], tmp_path)


def ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    assert "Traceback" not in p.stderr
    return p


def one_json(p):
    ok(p)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stdout
    return json.loads(lines[0])


# --- run ----------------------------------------------------------------------------------------

LOAD, STORE, V_CHUNK = dma_cycles("GM_UB", 8192), dma_cycles("UB_GM", 8192), 88 + 45 + 47
assert 2 * LOAD >= max(V_CHUNK, STORE)  # the derivation's MTE2-bound premise
TOTAL = 16 * LOAD + V_CHUNK + STORE


def test_run_json(ptosim):
    out = one_json(ptosim("run", EXAMPLE, "--json"))
    assert isinstance(out["total_cycles"], int)
    assert out["total_cycles"] == TOTAL
    busy = {"PIPE_MTE2": 16 * LOAD, "PIPE_V": 8 * V_CHUNK, "PIPE_MTE3": 8 * STORE}
    assert set(busy) <= set(out["pipes"])
    for pipe, cycles in busy.items():
        entry = out["pipes"][pipe]
        assert isinstance(entry["busy_cycles"], int)
        assert entry["busy_cycles"] == cycles
        assert isinstance(entry["utilization"], float)
        assert entry["utilization"] == pytest.approx(cycles / TOTAL, abs=1e-4)


def test_run_trace_and_plot(ptosim, tmp_path):
    trace, plot = tmp_path / "out" / "trace.csv", tmp_path / "out" / "occ.png"
    p = ok(ptosim("run", EXAMPLE, "--trace", trace, "--plot", plot))
    assert str(TOTAL) in p.stdout  # the text report
    import pandas as pd

    df = pd.read_csv(trace, keep_default_na=False)
    assert tuple(df.columns) == COLUMNS
    assert int(df["end_cycle"].max()) == TOTAL
    ops = df[df["kind"] == "op"]
    assert (ops["opcode"] == "TLOAD").sum() == 16 and (ops["opcode"] == "TSTORE").sum() == 8
    assert plot.read_bytes()[:8] == PNG_MAGIC


def test_run_relative_kernel_path_from_cwd(tmp_path):
    """A kernel file given relative to the working directory."""
    shutil.copy(EXAMPLE, tmp_path / "k.py")
    out = one_json(_module(["run", "k.py", "--json", "--timing-only"], tmp_path))
    assert out["total_cycles"] == TOTAL  # timing does not need the data


# --- op -----------------------------------------------------------------------------------------


def test_op_tadd_json(ptosim):
    out = one_json(ptosim("op", "TADD", "--dtype", "f32", "--shape", "16x64", "--json"))
    assert out["op"] == "TADD" and out["cycles"] == 56 and isinstance(out["cycles"], int)
    assert out["pipe"] == "PIPE_V" and out["repeats"] == 16
    assert "vadd" in out["cce"]


OP_VARIANTS = [
    (("TADD", "--valid", "8x48"), 2 + 24 + 2 * 8 + 16),
    (("TDIVS", "--inplace"), 26 + 16),
    (("TDIVS",), (24 + 16) + 1 + (19 + 4 * 16)),  # vdiv restarts: tail 19
    (("TDIVS", "--scalar-first"), (24 + 16) + 1 + (19 + 4 * 16)),
    (("TCVT", "--dtype", "f32>f16"), 27 + 16),
    (("TMULS", "--scalar", "0.5"), 26 + 16),
]


@pytest.fixture(scope="module")
def op_variant_runs(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("opvariants")
    return _concurrently([["op", *a, "--shape", "16x64", "--json"] for a, _ in OP_VARIANTS], cwd)


@pytest.mark.parametrize("i", range(len(OP_VARIANTS)), ids=[" ".join(a) for a, _ in OP_VARIANTS])
def test_op_variants(i, op_variant_runs):
    out = one_json(op_variant_runs[i])
    assert out["cycles"] == OP_VARIANTS[i][1], out
    if "--inplace" in OP_VARIANTS[i][0]:
        assert out["cce"] == "vmuls(rep=16)" and out["variant"] == "inplace"


def test_op_text_output(tmp_path):
    p = ok(_module(["op", "TADD"], tmp_path))
    assert "56 cycles" in p.stdout


# --- user errors --------------------------------------------------------------------------------

KERNELS = {
    "nobuild.py": "import sim\nX = 1\n",
    "raises.py": "import sim\n\ndef build():\n    raise ValueError('boom in the kernel')\n",
    "multiline.py": "def build():\n    raise ValueError('first line\\nsecond line')\n",
}


@pytest.fixture
def kernel_dir(tmp_path):
    for name, text in KERNELS.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def assert_user_error(p, *needles):
    assert p.returncode == 2, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    assert "Traceback" not in p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("ptosim: error:"), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])


USER_ERRORS = [
    (["op", "TFOO"], ["TFOO"]),
    (["op", "TADD", "--shape", "16by64"], ["16by64"]),
    (["op", "TADD", "--dtype", "f33"], ["f33"]),
    (["op", "TCVT", "--dtype", "f32>f99"], ["f99"]),
    (["op", "TADD", "--valid", "20x64"], ["20x64"]),
    (["op", "TADD", "--scalar-first"], ["TADD"]),
    (["op", "TADD", "--target", "nosuch"], ["nosuch"]),
    (["run", "missing_kernel.py"], ["missing_kernel.py"]),
    (["run", "nobuild.py"], ["nobuild.py", "build()"]),
    (["run", "raises.py"], ["raises.py", "ValueError", "boom in the kernel"]),
    (["run", EXAMPLE, "--target", "nosuch"], ["nosuch"]),
    (["run"], []),
    ([], []),
]


@pytest.fixture(scope="module")
def user_error_runs(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("usererrors")
    for name, text in KERNELS.items():
        (cwd / name).write_text(text)
    return _concurrently([args for args, _ in USER_ERRORS], cwd)


@pytest.mark.parametrize(
    "i", range(len(USER_ERRORS)), ids=[" ".join(a) or "no-args" for a, _ in USER_ERRORS]
)
def test_user_errors_exit_2_one_line(i, user_error_runs):
    assert_user_error(user_error_runs[i], *USER_ERRORS[i][1])


def test_user_error_via_console_script(kernel_dir):
    assert_user_error(_script(["run", "raises.py"], kernel_dir), "boom in the kernel")
    assert_user_error(_script(["op", "TFOO"], kernel_dir), "TFOO")


def test_kernel_exception_points_at_the_raising_line_absolute_path(kernel_dir):
    path = str(kernel_dir / "raises.py")
    assert_user_error(_module(["run", path], kernel_dir), f"{path}:4:", "boom in the kernel")


def test_kernel_exception_points_at_the_raising_line_relative_path(kernel_dir):
    assert_user_error(_module(["run", "raises.py"], kernel_dir), "raises.py:4:")


def test_kernel_exception_with_multiline_message_is_still_one_line(kernel_dir):
    assert_user_error(_module(["run", "multiline.py"], kernel_dir), "first line")


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["op", "--help"]])
def test_help_exits_0(args, tmp_path):
    p = ok(_module(args, tmp_path))
    assert "usage:" in p.stdout


def test_help_via_console_script(tmp_path):
    p = ok(_script(["--help"], tmp_path))
    assert "usage: ptosim" in p.stdout


def test_models_come_from_the_package_not_the_cwd(tmp_path):
    """A directory named models/ in the user's cwd must not replace the bundled targets."""
    bogus = tmp_path / "models" / "a2a3"
    bogus.mkdir(parents=True)
    (bogus / "machine.toml").write_text("this is = = not toml\n")
    out = one_json(_module(["op", "TADD", "--json"], tmp_path))
    assert out["cycles"] == 56


@pytest.mark.parametrize(
    "argv,said",
    [
        (["run", "k.pto", "--bogus"], "ptosim: error: ptosim run: unrecognized arguments: --bogus"),
        (
            ["compare", "k.pto", "--nope"],
            "ptosim: error: ptosim compare: unrecognized arguments: --nope",
        ),
        (["--nope", "run", "k.pto"], "ptosim: error: unrecognized arguments: --nope"),
        (["nocommand"], "ptosim: error: argument command: invalid choice: 'nocommand'"),
        (["run"], "ptosim: error: ptosim run: the following arguments are required"),
    ],
)
def test_an_argument_error_names_the_program_once(argv, said, capsys):
    """The top level's errors are not prefixed twice; a subcommand's name itself."""
    from sim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(said) and "error: ptosim:" not in err, err
