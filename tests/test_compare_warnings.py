"""``ptosim compare`` says what ``ptosim run`` would warn of, in each run: a warning both
runs give once, one of a single run after its mode; ``--json`` has each run's list."""

from __future__ import annotations

import json
import subprocess
import sys

import attrs

import sim
from sim.studies import run_comparison

IDLE = """\
module {
  func.func @idle(%x: !pto.ptr<f32>) {
    return
  }
}
"""
NO_WORK = "warning: the kernel has no tile instruction: its cycles measure no work"


def _compare(path, *flags):
    return subprocess.run(
        [sys.executable, "-m", "sim", "compare", str(path), "--timing-only", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_warning_of_both_runs_is_printed_once(tmp_path):
    path = tmp_path / "idle.pto"
    path.write_text(IDLE)
    run = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(path), "--timing-only"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert NO_WORK in run.stdout  # what run says, compare says too
    p = _compare(path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count(NO_WORK) == 1
    assert p.stdout.index("races") < p.stdout.index(NO_WORK)  # after the table
    out = json.loads(_compare(path, "--json").stdout)
    assert out["manual"]["warnings"] == out["auto"]["warnings"] == [NO_WORK]


def test_a_warning_of_one_run_names_its_mode():
    k = sim.Kernel("one")
    a = k.tile("vec", "f32", 16, 64)
    k.TEXPANDS(a, 1.0)
    c = run_comparison(k, "a2a3", functional=False)
    assert c.warnings == () and c.manual.metrics()["warnings"] == []

    def warned(run, *extra):
        return attrs.evolve(run, result=attrs.evolve(run.result, warnings=extra))

    both = "warning: both"
    c = attrs.evolve(
        c,
        manual=warned(c.manual, "warning: manual only", both),
        auto=warned(c.auto, both, "warning: auto only"),
    )
    assert c.warnings == (
        "manual run: warning: manual only",
        both,
        "auto run: warning: auto only",
    )
    assert c.auto.metrics()["warnings"] == [both, "warning: auto only"]
