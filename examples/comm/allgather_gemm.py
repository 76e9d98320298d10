"""AllGather + GEMM with chunk streaming on two streams: the host side of the public kernel
(communication.md §8.2, pto-isa ``kernels/manual/a2a3/allgather_gemm``); the two kernels are
``allgather_gemm.pto`` (``@ag_comm``, ``@ag_gemm_compute``).

``C = A x B`` on every rank: rank p holds rows ``[p m/N, (p+1) m/N)`` of A (f16) in its window
buffer ``a`` and receives the others from their owners, B (f16) is the same on every rank,
each rank computes all of C (f32). What the host decides, as ``main.cpp`` does:

* **tiles and chunks**: A in tiles of 128 rows x 256 K-columns; a chunk is ``chunk_size``
  consecutive tiles of one source (``chunk_size``: the reference's rule, ``chunk_tiles``);
* **communication blocks**: ``(N - 1) * max(1, COMM_BLOCK_NUM / (N - 1))`` AIV blocks
  (``comm_blocks``), 24 cube blocks for the compute kernel;
* **metadata** in the window (``sig``): a 16-word header whose word 0 is the epoch, the
  ``flags[src][chunk]`` matrix (rows padded to 16 words), the ``summary[src]`` counters; the
  counters only grow, so iteration e of a run that keeps them waits for ``e + 1`` (flags) and
  ``e * chunks + ...`` (summary) instead of resetting them (``signals``);
* the launch: both kernels on their own stream (``simulate(compute(...), ranks=N,
  streams=[comm(...)], comm_context="ctx")``); the compute-only run marks every chunk ready
  from the host (``signals(..., ready=True)``) and gives every rank the whole of A.

The builder has no run-time branches, and phase 2 of the compute kernel (scan the chunk flags
with ``TTEST``, run the chunks that are ready) needs them: the kernels are PTO IR, and
``compute`` / ``comm`` return them with their launch size and host-set inputs (what ``ptosim
run`` and ``sim.simulate`` take where a ``sim.Kernel`` goes)::

    import sim, examples.comm.allgather_gemm as g
    mine, a, b = g.inputs(4, m=1024, k=512, n=256)
    r = sim.simulate(g.compute(4, m=1024, k=512, n=256), ranks=4, comm_context="ctx",
                     streams=[g.comm(4, m=1024, k=512)], inputs=mine)

    ptosim run examples/comm/allgather_gemm.py --ranks 4 --arg ranks=4 \
        --stream examples/comm/allgather_gemm.py:comm --comm-context ctx --timing-only

The default size (``M = 4096, K = 1024, N = 4096``, f16) is this project's choice: the
reference's README gives no problem size for this kernel.
"""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import numpy as np

from sim.frontend import parse_file

PTO = Path(__file__).with_suffix(".pto")
BASE_M, BASE_K = 128, 256  # a tile of A: G_BASE_M rows x G_BASE_N K-columns
COMM_BLOCK_NUM = 24  # the 910B's AIV blocks for communication (communication.md §7 item 8)
COMPUTE_BLOCKS = 24  # the cube cores
HEADER_WORDS = 16
M, K, N = 4096, 1024, 4096  # the default problem (no size is public for this kernel)


def chunk_tiles(tiles: int) -> int:
    """Tiles per chunk for a source of ``tiles`` tiles (communication.md §8.2): 4, or if that
    gives more than 128 chunks ``ceil(tiles / 128)`` rounded up to a multiple of 4, at most
    64 (the code's rule; the README's 64-128 target range is not enforced)."""
    if math.ceil(tiles / 4) <= 128:
        return 4
    return min(64, 4 * math.ceil(math.ceil(tiles / 128) / 4))


def comm_blocks(ranks: int, comm_block_num: int = COMM_BLOCK_NUM) -> int:
    """``(N - 1) * max(1, COMM_BLOCK_NUM / (N - 1))``: the same number of blocks for every
    destination."""
    return max(1, ranks - 1) * max(1, comm_block_num // max(1, ranks - 1))


@attrs.frozen
class Layout:
    """The problem as the kernels cut it."""

    ranks: int
    m: int
    k: int
    chunk: int  # tiles per chunk

    @property
    def row_groups(self) -> int:  # 128-row groups per source
        return self.m // self.ranks // BASE_M

    @property
    def k_tiles(self) -> int:
        return self.k // BASE_K

    @property
    def tiles(self) -> int:  # per source
        return self.row_groups * self.k_tiles

    @property
    def chunks(self) -> int:  # per source
        return -(-self.tiles // self.chunk)

    @property
    def row(self) -> int:  # a source's flag row, padded to 16 words
        return -(-self.chunks // 16) * 16

    def flag(self, src: int, chunk: int) -> int:
        return HEADER_WORDS + src * self.row + chunk

    def summary(self, src: int) -> int:
        return HEADER_WORDS + self.ranks * self.row + src

    @property
    def words(self) -> int:
        return HEADER_WORDS + self.ranks * self.row + self.ranks


def layout(ranks: int, m: int, k: int, chunk: int | None = None) -> Layout:
    if ranks < 1 or m % (ranks * BASE_M) or k % 512:
        raise ValueError(
            f"m={m} must be a multiple of ranks * {BASE_M} = {ranks * BASE_M} and k={k} of 512"
        )
    lay = Layout(ranks, m, k, 1)
    size = chunk_tiles(lay.tiles) if chunk is None else chunk
    if size < 1 or size % lay.k_tiles:
        raise ValueError(
            f"a chunk of {size} tiles does not cover whole 128-row groups of {lay.k_tiles} "
            f"tiles (k={k}): the compute kernel runs a chunk's rows over the whole K"
        )
    return attrs.evolve(lay, chunk=size)


def signals(lay: Layout, epoch: int = 0, ready: bool = False) -> np.ndarray:
    """The metadata words as the host leaves them before a launch in ``epoch``: the
    counters as ``epoch`` earlier iterations left them (or, ``ready=True``, every chunk of
    every source already there: the compute-only run)."""
    sig = np.zeros(lay.words, np.int32)
    sig[0] = epoch
    done = epoch + 1 if ready else epoch
    for s in range(lay.ranks):
        for c in range(lay.chunks):
            sig[lay.flag(s, c)] = done
        sig[lay.summary(s)] = done * lay.chunks
    return sig


@attrs.frozen
class Launch:
    """A kernel of ``allgather_gemm.pto`` with its launch size and the inputs the host
    sets (what ``sim.simulate`` and ``ptosim run`` read of a ``sim.Kernel``)."""

    entry: str
    block_dim: int
    inputs: dict

    def program(self):
        return attrs.evolve(parse_file(str(PTO)), entry=self.entry)


def _scalars(lay: Layout, n: int | None = None) -> dict:
    out = {"m": lay.m, "k": lay.k, "chunk_tiles": lay.chunk}
    return out if n is None else {**out, "n": n}


def compute(
    ranks: int = 4,
    m: int = M,
    k: int = K,
    n: int = N,
    chunk: int | None = None,
    blocks: int = COMPUTE_BLOCKS,
    epoch: int = 0,
    ready: bool = False,
) -> Launch:
    """The GEMM (cube): ``ready=True`` is the compute-only launch (every chunk marked ready
    by the host)."""
    if n % 256:
        raise ValueError(f"n={n} must be a multiple of 256")
    lay = layout(ranks, m, k, chunk)
    host = {
        "sig": signals(lay, epoch, ready),
        "done": np.zeros(blocks * ranks * lay.row, np.int32),
        **_scalars(lay, n),
    }
    return Launch("ag_gemm_compute", blocks, host)


def build(ranks: int = 4, m: int = M, k: int = K, n: int = N) -> Launch:
    """The compute kernel (``ptosim run`` builds this one; ``comm`` is its second stream)."""
    return compute(ranks, m, k, n)


def comm(
    ranks: int = 4,
    m: int = M,
    k: int = K,
    chunk: int | None = None,
    blocks: int | None = None,
    epoch: int = 0,
) -> Launch:
    """The all-gather (vector), ``comm_blocks(ranks)`` blocks unless ``blocks`` says."""
    lay = layout(ranks, m, k, chunk)
    host = {"sig": signals(lay, epoch), **_scalars(lay)}
    return Launch("ag_comm", comm_blocks(ranks) if blocks is None else blocks, host)


def inputs(ranks: int = 4, m: int = M, k: int = K, n: int = N, seed: int = 0) -> tuple:
    """(per-rank inputs, the whole A, B): rank p's ``a`` holds only its own rows."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, k)) / 8).astype(np.float16)
    b = (rng.standard_normal((k, n)) / 8).astype(np.float16)
    rows = m // ranks
    mine = []
    for p in range(ranks):
        ap = np.zeros_like(a)
        ap[p * rows : (p + 1) * rows] = a[p * rows : (p + 1) * rows]
        mine.append({"a": ap.reshape(-1), "b": b.reshape(-1)})
    return mine, a, b
