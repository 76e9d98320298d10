"""The report a run prints from its recording's arrays (``sim.engine.summary``) is the
report ``sim.trace.report`` makes from the trace DataFrame: same text, same figures.

Over a family of kernels: single units and chips (vector, cube, mixed, hand-synchronised
and auto-synchronised), both targets, trace modes ``full`` and ``ops``, row limits below
and above the instruction count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.kernel.files import load_kernel
from sim.trace.report import pipe_summary, text_report, unit_summary

ROOT = Path(__file__).resolve().parent.parent
# (file, core count, scalar arguments): each small enough for a quick run
CASES = [
    ("examples/relu_sub_db.pto", None, {"k": 3}),
    ("examples/row_softmax.pto", None, {}),
    ("examples/matmul.pto", None, {}),
    ("examples/tsub.pto", None, {}),
    (
        "examples/gemm.pto",
        3,
        {"m": 256, "k": 1024, "n": 512, "singleCoreM": 128, "singleCoreN": 256},
    ),
    (
        "examples/gemm.pto",
        4,
        {"m": 512, "k": 512, "n": 1536, "singleCoreM": 128, "singleCoreN": 256},
    ),
    ("examples/flash_attention.pto", 2, {"S1": 512, "S1_TILE": 0}),
    ("examples/flash_attention.pto", 3, {"S1": 256, "S1_TILE": 256}),
    ("examples/flash_attention.py", None, {}),
    ("examples/relu_sub.py", None, {}),
]


def _run(file, cores, args, target, trace):
    kernel = load_kernel(str(ROOT / file), [])
    return sim.simulate(
        kernel, target, functional=False, inputs=args or None, block_dim=cores, trace=trace
    )


@pytest.mark.parametrize("trace", ["full", "ops"])
@pytest.mark.parametrize("file,cores,args", CASES)
def test_report_from_the_arrays_is_the_report_from_the_frame(file, cores, args, trace):
    ran = 0
    for target in ("a2a3", "a5"):
        try:
            r = _run(file, cores, args, target, trace)
        except sim.UserError:  # a kernel the a5 cannot run (checked below: a2a3 can)
            continue
        ran += 1
        assert r.instructions > 0
        frame = r.trace
        total = r.total_cycles
        assert r.pipes == pipe_summary(frame, total)
        assert r.units == unit_summary(frame, total)
        assert r.instructions == int((frame["kind"] == "op").sum())
        for rows in (0, 3, 40, r.instructions + 1):
            text = r.report(max_rows=rows)
            want = text_report(
                frame,
                kernel=r.kernel,
                target=r.target.name,
                clock_hz=r.target.clock_hz,
                max_rows=rows,
                total=total,
                pipes=r.pipes,
            )
            # the report adds the sync mode, races and warnings after the first line
            head, _, rest = want.partition("\n")
            assert text.startswith(head + "\n")
            assert rest in text
            assert text.count("\n") >= want.count("\n")
    assert ran


def test_a_report_loads_no_pandas_and_the_trace_does():
    import subprocess
    import sys

    code = (
        "import sys, sim\n"
        "from sim.kernel.files import load_kernel\n"
        f"k = load_kernel({str(ROOT / 'examples/flash_attention.pto')!r}, [])\n"
        "r = sim.simulate(k, 'a2a3', functional=False, inputs={'S1': 256, 'S1_TILE': 0},"
        " block_dim=2, races='manual')\n"
        "r.report(); r.to_json()\n"
        "print('pandas' in sys.modules)\n"
        "r.trace\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert out == ["False", "True"]
