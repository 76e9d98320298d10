"""The race detector's memos (per lane shape: the records an access covers, the newest
record it conflicts with) change no finding: random kernels — hand-written flags that
leave pipes unordered, tokens, barriers, valid regions that shrink the bytes an op
touches — give the same findings, in the same order, with the memos as with the plain
scan of every lane (``RaceDetector.memo = False``, as GM arrays are always checked)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_fuzz import _build, step

from sim.base.errors import UserError
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.engine.races import RaceDetector
from sim.target import load_target

TARGET = load_target("a2a3")


class _Plain(RaceDetector):
    memo = False


def _findings(kernel, detector) -> list:
    machine = Machine(TARGET, races=detector)
    stream = Interpreter(
        kernel.program(), TARGET, inputs=kernel.inputs, functional=False, track_accesses=True
    ).issue()
    machine.run(stream)
    return [(f.kind, f.message) for f in detector.finish()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(step, min_size=1, max_size=40),
    dtype=st.sampled_from(["f32", "f16"]),
    shape=st.sampled_from([(16, 64), (1, 64), (8, 128)]),
)
def test_memoised_detector_finds_what_the_plain_scan_finds(steps, dtype, shape):
    try:
        k = _build(steps, dtype, *shape)
        memo = _findings(k, RaceDetector())
        plain = _findings(k, _Plain())
    except UserError:
        return  # rejected or deadlocked: nothing to compare
    assert memo == plain


@pytest.mark.parametrize("n", [1, 5, 40])
def test_a_long_racy_loop_gives_the_same_findings_both_ways(n):
    """Two pipes that never sync, over many iterations (lanes past the prune threshold)."""
    steps = [
        ("TLOAD", i % 4, 0, 0, 1) if i % 3 else ("TADD", (i + 1) % 4, i % 4, 2, 1)
        for i in range(3 * n)
    ]
    k = _build(steps, "f32", 16, 64)
    memo, plain = _findings(k, RaceDetector()), _findings(k, _Plain())
    assert memo == plain
    assert memo  # unordered: there are races to name


@pytest.mark.parametrize("n", [5, 40])
def test_the_memo_starting_again_changes_no_finding(n, monkeypatch):
    """A memo that starts again every few shapes (an irregular program's ever new lane
    shapes) gives the plain scan's findings too."""
    import sim.engine.races as races

    steps = [
        (("TLOAD", "TADD", "TSUB", "TSTORE")[i % 4], i % 4, (i * 3) % 4, (i + 2) % 4, i % 7)
        for i in range(3 * n)
    ]
    k = _build(steps, "f32", 16, 64)
    plain = _findings(k, _Plain())
    monkeypatch.setattr(races, "_MAX_SHAPES", 3)
    assert _findings(k, RaceDetector()) == plain
