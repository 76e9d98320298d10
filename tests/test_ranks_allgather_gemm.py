"""examples/comm/allgather_gemm (.py host, .pto kernels): AllGather + GEMM with chunk
streaming as communication.md §8.2 describes it, at small sizes: every rank's C is numpy's
A x B, every chunk arrives, the counters end where the reference's protocol puts them, the
host's rules (chunk size, communication blocks), the epoch, the round-robin work split and the
compute-only launch."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import DeadlockError

ROOT = Path(__file__).resolve().parent.parent
PATH = ROOT / "examples" / "comm" / "allgather_gemm.py"
LINKS = tomllib.loads((ROOT / "models" / "a2a3" / "machine.toml").read_text())["comm"]["links"]
K, N = 512, 256  # two 256-column K tiles per 128-row group, one 256-column tile of C


def _g():
    spec = importlib.util.spec_from_file_location("allgather_gemm", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(g, ranks, m, chunk=2, comm_blocks=2, epoch=0, blocks=4):
    mine, a, b = g.inputs(ranks, m, K, N, seed=ranks)
    r = sim.simulate(
        g.compute(ranks, m, K, N, chunk=chunk, blocks=blocks, epoch=epoch),
        ranks=ranks,
        comm_context="ctx",
        streams=[g.comm(ranks, m, K, chunk=chunk, blocks=comm_blocks, epoch=epoch)],
        inputs=mine,
    )
    return r, a, b


def _check(g, r, a, b, ranks, m, chunk, epoch=0):
    want = a.astype(np.float64) @ b.astype(np.float64)
    lay = g.layout(ranks, m, K, chunk)
    for p in range(ranks):
        got = r.output("c", p).reshape(m, N)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
        assert np.array_equal(r.output("a", p).reshape(a.shape), a), p  # every chunk arrived
        sig = r.output("sig", p)
        # one +1 per chunk from its source (its own block 0 for the local rows), summary
        # the chunk count on top of what earlier epochs left
        for s in range(ranks):
            assert [sig[lay.flag(s, c)] for c in range(lay.chunks)] == [epoch + 1] * lay.chunks
            assert sig[lay.summary(s)] == (epoch + 1) * lay.chunks


@pytest.mark.parametrize("ranks, comm_blocks", [(2, 2), (4, 2)])
def test_every_rank_computes_the_whole_product_from_streamed_chunks(ranks, comm_blocks):
    # 2 ranks: two blocks for the one destination, a chunk range each; 4 ranks: fewer blocks
    # than destinations, (destination, chunk) items round-robin
    g = _g()
    m = 512 * ranks // 2  # two 128-row groups per source, a chunk each
    r, a, b = _run(g, ranks, m, comm_blocks=comm_blocks)
    _check(g, r, a, b, ranks, m, 2)
    # phase 1 runs the local rows without waiting: rank 0's first load of A starts before
    # any remote signal can have crossed a link
    t = r.streams[0][0].trace
    assert t[t.opcode == "TLOAD"].start_cycle.min() < LINKS["latency_cycles"]
    # phase 2 polls the flags of each chunk with TTEST
    assert (t.opcode == "TTEST").sum() >= (ranks - 1) * 2


def test_the_epoch_keeps_the_counters_of_earlier_iterations():
    g = _g()
    r, a, b = _run(g, 2, 512, epoch=3)
    _check(g, r, a, b, 2, 512, 2, epoch=3)
    # with the epoch's counters but the epoch word of iteration 0, the compute kernel would
    # take the old flags for ready ones: here it must not even wait for the peer
    lay = g.layout(2, 512, K, 2)
    stale = g.signals(lay, epoch=3)
    stale[0] = 0
    mine, _, _ = g.inputs(2, 512, K, N, seed=2)
    early = sim.simulate(
        g.compute(2, 512, K, N, chunk=2, blocks=4),
        ranks=2,
        comm_context="ctx",
        inputs=[{**d, "sig": stale} for d in mine],
    )
    assert not np.array_equal(early.output("c", 0).reshape(512, N), a.astype(np.float32) @ b)


def test_the_compute_only_launch_needs_no_communication_kernel():
    g = _g()
    _, a, b = g.inputs(2, 512, K, N, seed=5)
    full = {"a": a.reshape(-1), "b": b.reshape(-1)}
    quiet = dict(ranks=2, comm_context="ctx", inputs=full)
    r = sim.simulate(g.compute(2, 512, K, N, chunk=2, blocks=4, ready=True), **quiet)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(r.output("c", 1).reshape(512, N), want, rtol=1e-3, atol=1e-3)
    with pytest.raises(DeadlockError, match="sig"):  # nobody streams the other rank's rows
        sim.simulate(g.compute(2, 512, K, N, chunk=2, blocks=4), **quiet)


def test_the_host_rules_of_the_reference():
    g = _g()
    # chunk size: 4 while that gives at most 128 chunks, else ceil(tiles / 128) rounded up
    # to a multiple of 4, capped at 64
    assert g.chunk_tiles(512) == 4
    assert g.chunk_tiles(513) == 8  # ceil(513 / 128) = 5 -> 8
    assert g.chunk_tiles(128 * 12) == 12
    assert g.chunk_tiles(128 * 64) == 64
    assert g.chunk_tiles(128 * 100) == 64
    # (N - 1) * max(1, 24 / (N - 1)) communication blocks
    assert [g.comm_blocks(n) for n in (2, 4, 8)] == [24, 24, 21]
    assert g.comm_blocks(30) == 29
    with pytest.raises(ValueError, match="whole 128-row groups"):
        g.layout(2, 512, 1024, chunk=2)  # 4 K tiles per row group
