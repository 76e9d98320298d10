"""examples/comm/gemm_ar.py, the GEMM + AllReduce at the public kernel's structure, at a small
size: every rank's reduced output is the sum of the ranks' f16 GEMMs (numpy), the
communication stream overlaps the compute stream, and a missing doorbell is a deadlock."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import DeadlockError

PATH = Path(__file__).resolve().parent.parent / "examples" / "comm" / "gemm_ar.py"
SMALL = dict(m=256, n=512)  # 2 x 2 tiles of 128 x 256
K = 512


def _g():
    spec = importlib.util.spec_from_file_location("gemm_ar", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("n", [2, 4])
def test_every_rank_ends_with_the_sum_of_the_ranks_gemms(n):
    g = _g()
    rng = np.random.default_rng(n)
    b = (rng.standard_normal((K, SMALL["n"])) / 8).astype(np.float16)
    a = [(rng.standard_normal((SMALL["m"], K)) / 8).astype(np.float16) for _ in range(n)]
    r = sim.simulate(
        g.compute(n, k=K, **SMALL),
        ranks=n,
        streams=[g.comm(n, **SMALL)],
        inputs=[{"a": x, "b": b} for x in a],
    )
    # each rank's tile leaves the FIXPIPE as f16, the atomic adds sum in f16
    parts = [(x.astype(np.float32) @ b.astype(np.float32)).astype(np.float16) for x in a]
    want = np.sum([p.astype(np.float64) for p in parts], axis=0)
    for p in range(n):
        got = r.output("reduced", p).reshape(want.shape).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=5e-3 * n)
        assert r.output("rs_count", p).reshape(-1)[:4].tolist() == [
            n if t % n == p else 0 for t in range(4)
        ]


def test_the_streams_overlap_and_a_missing_doorbell_deadlocks():
    g = _g()
    quiet = dict(ranks=2, functional=False, trace="none")
    alone = sim.simulate(g.compute(2, k=K, **SMALL), **quiet)
    rung = {"ready": np.ones((1, 4), np.int32)}
    comm = sim.simulate(g.comm(2, **SMALL), inputs=rung, **quiet)
    both = sim.simulate(g.compute(2, k=K, **SMALL), streams=[g.comm(2, **SMALL)], **quiet)
    assert max(alone.total_cycles, comm.total_cycles) < both.total_cycles
    assert both.total_cycles < alone.total_cycles + comm.total_cycles
    with pytest.raises(DeadlockError, match="ready"):
        sim.simulate(g.comm(2, **SMALL), **quiet)  # no compute stream rings the doorbells
