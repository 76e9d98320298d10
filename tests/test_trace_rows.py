"""Trace recording modes: ``trace="full" | "ops" | "none"`` and ``ptosim run --trace-rows``.

The lighter modes drop rows, never change timing: every mode gives the cycles and per-pipe
totals of the full trace, "ops" keeps exactly the full trace's instruction rows (with their
waits / records), and "none" keeps no rows at all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import sim
from sim.trace.schema import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.suffix in (".py", ".pto"))
SYNC = ("set_flag", "wait_flag", "barrier")
ARGS = {
    "dyn_valid.pto": {"vr": 5, "vc": 40},
    "relu_sub_db.pto": {"k": 4},  # scalar arguments
    "tfmods.pto": {"divisor": 3.0},
    "trelu.pto": {"n": 32},
    "gemm.pto": {"m": 128, "k": 512, "n": 256, "singleCoreM": 128, "singleCoreN": 256},
    "flash_attention.pto": {"S1": 256, "S1_TILE": 0},
}


def _program(path: Path):
    if path.suffix == ".pto":
        return sim.parse_file(path)
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns["build"]()


def _text(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({c: str for c in df.columns if df[c].dtype == "category"}).reset_index(
        drop=True
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_modes_agree_with_the_full_trace(path):
    kernel, args = _program(path), ARGS.get(path.name, {})
    full = sim.simulate(kernel, inputs=args)
    ops = sim.simulate(kernel, inputs=args, trace="ops")
    none = sim.simulate(kernel, inputs=args, trace="none")
    for r in (ops, none):
        assert r.total_cycles == full.total_cycles
        assert r.pipes == full.pipes
        assert r.to_json() == full.to_json()
    expected = full.trace[~full.trace["kind"].isin(SYNC)]
    pd.testing.assert_frame_equal(_text(ops.trace), _text(expected))
    assert list(none.trace.columns) == list(COLUMNS) and len(none.trace) == 0


def test_unknown_mode_is_a_user_error():
    with pytest.raises(sim.UserError, match="trace: expected one of full, ops, none, found 'all'"):
        sim.simulate(_program(ROOT / "examples" / "relu_sub.py"), trace="all")


def test_cli_trace_rows(tmp_path):
    kernel = str(ROOT / "examples" / "relu_sub.py")
    run = [sys.executable, "-m", "sim", "run", kernel]
    full = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    none = subprocess.run(
        run + ["--trace-rows", "none"], capture_output=True, text=True, cwd=tmp_path
    )
    assert full.returncode == 0 and none.returncode == 0, none.stderr
    head = full.stdout.split("\n\nopcode")[0]  # title, total cycles, per-pipe table
    assert "total cycles: " in head and none.stdout.strip() == head.strip()
    p = subprocess.run(
        run + ["--trace-rows", "none", "--trace", "t.csv"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 2 and p.stderr.startswith("ptosim: error: --trace-rows none")
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "kernel,args",
    [
        ("relu_sub_db.pto", ["--arg", "k=4"]),
        (
            "gemm.pto",
            [
                "--block-dim",
                "2",
                "--arg",
                "m=512",
                "--arg",
                "k=512",
                "--arg",
                "n=512",
                "--arg",
                "singleCoreM=256",
                "--arg",
                "singleCoreN=256",
            ],
        ),
        ("flash_attention.pto", ["--block-dim", "2", "--arg", "S1=512", "--arg", "S1_TILE=128"]),
    ],
)
@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_cli_default_rows_give_the_report_of_every_row(tmp_path, kernel, args, fmt):
    """Without --trace / --plot, ``run`` keeps no sync rows (the report reads none): the
    text report and --json are those of a run that keeps every row."""
    run = [
        sys.executable,
        "-m",
        "sim",
        "run",
        str(ROOT / "examples" / kernel),
        "--timing-only",
        *args,
        *fmt,
    ]
    default = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    full = subprocess.run(
        run + ["--trace-rows", "full"], capture_output=True, text=True, cwd=tmp_path
    )
    assert default.returncode == 0 and full.returncode == 0, default.stderr + full.stderr
    assert "total" in default.stdout and default.stdout == full.stdout
