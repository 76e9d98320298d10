"""The .pto twins of the communication examples (ring all-gather, GEMM + AllReduce), peers
addressed through the communication context: the same data as the .py versions on the same
inputs, and numpy's. The AllGather + GEMM kernels are PTO IR only (the .py is their host):
tests/test_ranks_allgather_gemm.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import attrs
import numpy as np
import pytest

import sim
from sim.frontend import parse_file, parse_text
from sim.frontend.printer import print_program

COMM = Path(__file__).resolve().parent.parent / "examples" / "comm"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, COMM / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pto(name: str, entry: str | None = None):
    prog = parse_file(str(COMM / f"{name}.pto"))
    return prog if entry is None else attrs.evolve(prog, entry=entry)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_allgather_pto_is_the_py_ring(n):
    ag = _example("allgather")
    rng = np.random.default_rng(n)
    srcs = [rng.standard_normal((16, 64)).astype(np.float32) for _ in range(n)]
    zeros = {"out": np.zeros(16 * 64 * n, np.float32), "step": np.zeros(n - 1, np.int32)}
    pto = sim.simulate(
        _pto("allgather_ring"),
        ranks=n,
        comm_context="ctx",
        inputs=[{"src": s, **zeros} for s in srcs],
    )
    py = sim.simulate(ag.build(n, 16, 64, ring=True), ranks=n, inputs=[{"src": s} for s in srcs])
    want = np.concatenate(srcs)
    for r in range(n):
        assert np.array_equal(pto.output("out", r).reshape(want.shape), want), r
        assert np.array_equal(py.output("out", r).reshape(want.shape), want), r
        assert pto.output("step", r).tolist() == [1] * (n - 1)  # every step's flag, once


@pytest.mark.parametrize("n", [2, 4])
def test_gemm_allreduce_pto_is_the_py_version(n):
    g = _example("gemm_allreduce")
    rng = np.random.default_rng(n)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    a = [rng.standard_normal((128, 64)).astype(np.float16) for _ in range(n)]

    def zeros():
        z = {k: np.zeros(c, np.int32) for k, c in (("ready", 4), ("rs_count", 4), ("ag_done", 1))}
        return {**z, "reduced": np.zeros(128 * 128, np.float32)}

    pto = sim.simulate(
        _pto("gemm_allreduce", "gemm"),
        ranks=n,
        block_dim=4,
        streams=[_pto("gemm_allreduce", "allreduce")],
        comm_context="ctx",
        inputs=[{"a": a[p], "b": b, **zeros()} for p in range(n)],
    )
    py = sim.simulate(
        g.compute(n), ranks=n, streams=[g.comm(n)], inputs=[{"a": a[p], "b": b} for p in range(n)]
    )
    want = sum(x.astype(np.float64) @ b.astype(np.float64) for x in a)
    for r in range(n):
        got = pto.output("reduced", r).reshape(128, 128)
        assert np.array_equal(got, py.output("reduced", r).reshape(got.shape)), r
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        assert pto.output("rs_count", r).tolist() == [n] * 4


@pytest.mark.parametrize("name", ["allgather_ring", "gemm_allreduce", "allgather_gemm"])
def test_comm_examples_print_back_as_they_parse(name):
    text = print_program(_pto(name))
    assert "pto.comm.tput(" in text and "pto.comm.twait(" in text
    assert print_program(parse_text(text)) == text


def test_plausible_inputs_zero_the_signal_words_a_wait_reads():
    # with random signal words a wait on "count >= ranks" may never or falsely hold; the
    # plausible fill gives the signals zeros, as the host does before a launch
    from sim.engine.plausible import index_bounds

    program = _pto("allgather")
    bounds = index_bounds(program)
    assert bounds.get("arrived") == 1 and "src" not in bounds and "out" not in bounds
    src = np.arange(4 * 16 * 64, dtype=np.float32).reshape(4, 16, 64)
    r = sim.simulate(
        program,
        ranks=4,
        comm_context="ctx",
        fill="plausible",
        inputs=[{"src": src[i]} for i in range(4)],
    )
    for rank in range(4):
        assert np.array_equal(r.output("out", rank).reshape(64, 64), src.reshape(64, 64)), rank
    # without it, the seeded random words make the wait's outcome a matter of chance
    with pytest.raises(sim.SimulationError):
        sim.simulate(program, ranks=4, comm_context="ctx", inputs=[{"src": s} for s in src])
