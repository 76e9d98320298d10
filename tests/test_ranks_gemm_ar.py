"""examples/comm/gemm_ar (.py host, .pto kernels), the GEMM + AllReduce at the public kernel's
structure (communication.md §8.3), at a small size: every rank's reduced output is the sum of
the ranks' f16 GEMMs (numpy), the ready queues hold the swizzled tile order, the subtile and
AG-summary counters end where the protocol puts them, the communication stream overlaps the
compute stream, and a communication kernel whose queues nobody fills deadlocks."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import DeadlockError

PATH = Path(__file__).resolve().parent.parent / "examples" / "comm" / "gemm_ar.py"
M, K, N = 256, 512, 512  # 2 x 2 tiles of 128 x 256
BLOCKS = 4


def _g():
    spec = importlib.util.spec_from_file_location("gemm_ar", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("n", [2, 4])
def test_every_rank_ends_with_the_sum_of_the_ranks_gemms(n):
    g = _g()
    rng = np.random.default_rng(n)
    b = (rng.standard_normal((K, N)) / 8).astype(np.float16)
    a = [(rng.standard_normal((M, K)) / 8).astype(np.float16) for _ in range(n)]
    r = sim.simulate(
        g.compute(n, M, K, N, BLOCKS),
        ranks=n,
        comm_context="ctx",
        streams=[g.comm(n, M, N, BLOCKS)],
        inputs=[{"a": x.reshape(-1), "b": b.reshape(-1)} for x in a],
    )
    # each rank's tile leaves the FIXPIPE as f16, the atomic adds sum in f16
    parts = [(x.astype(np.float32) @ b.astype(np.float32)).astype(np.float16) for x in a]
    want = np.sum([p.astype(np.float64) for p in parts], axis=0)
    tiles, own_max = 4, -(-4 // n)
    for p in range(n):
        got = r.output("reduced", p).reshape(want.shape).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=5e-3 * n)
        sig = r.output("sig", p)
        owned = 2 * len(range(p, tiles, n))  # this rank's subtiles
        # every rank's part of each owned subtile landed: N on each, nothing past them
        assert sig[:owned].tolist() == [n] * owned
        assert sig[owned : 2 * own_max].tolist() == [0] * (2 * own_max - owned)
        # summary[b] counts the parts of the subtiles whose AG block is b (reversed stripes)
        stripes = [sum(BLOCKS - 1 - s % BLOCKS == blk for s in range(owned)) for blk in range(4)]
        assert sig[2 * own_max :].tolist() == [n * c for c in stripes]
        # the queues: compute block b's tiles in the zig-zag order (row 1 right to left)
        q = r.output("queue", p)
        assert q[:BLOCKS].tolist() == [1, 1, 1, 1]
        assert q[BLOCKS:].tolist() == [0, 1, 3, 2]


def test_the_streams_overlap_and_empty_queues_deadlock():
    g = _g()
    quiet = dict(ranks=2, functional=False, trace="none", comm_context="ctx")
    alone = sim.simulate(g.compute(2, M, K, N, BLOCKS), **quiet)
    comm = sim.simulate(g.comm(2, M, N, BLOCKS, rung=True), **quiet)
    both = sim.simulate(g.compute(2, M, K, N, BLOCKS), streams=[g.comm(2, M, N, BLOCKS)], **quiet)
    assert max(alone.total_cycles, comm.total_cycles) < both.total_cycles
    assert both.total_cycles < alone.total_cycles + comm.total_cycles
    with pytest.raises(DeadlockError, match="queue"):
        sim.simulate(g.comm(2, M, N, BLOCKS), **quiet)  # no compute stream fills the queues


def test_the_swizzle_visits_every_tile_once_in_zig_zag_rows():
    g = _g()
    order = [g.swizzle(p, 6) for p in range(43 * 6)]
    assert sorted(order) == list(range(43 * 6))
    assert order[:12] == [0, 1, 2, 3, 4, 5, 11, 10, 9, 8, 7, 6]
    q = g.queues(g.grid(8, 5504, 1536))
    assert q[:24].sum() == 258 and q[:24].tolist() == [11] * 18 + [10] * 6
