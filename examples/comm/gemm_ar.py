"""GEMM + AllReduce at the structure of the public kernel (communication.md §8.3, pto-isa
``kernels/manual/a2a3/gemm_ar``): the host side; the two kernels are ``gemm_ar.pto``
(``@ar_compute``, ``@ar_comm``). At its public size by default: 8 ranks,
``C = sum_p A_p x B`` with ``M x K`` f16 A_p (M = 5416 padded to 5504), a ``K x N`` f16 B
(N = 1408 padded to 1536), K = 6144, f16 output; 128 x 256 output tiles (43 x 6 = 258), tile
t owned by rank t mod N, two 64-row subtiles per tile.

* **compute** (cube, 24 persistent blocks): block b walks positions b, b + 24, ... of the
  swizzled tile order (``swizzle``: zig-zag over the tile rows, so consecutive tiles share
  B's columns), per tile the K loop of ``examples/gemm.pto`` (L1 and L0 double-buffered, four
  64-deep K slices per L1 load), the FIXPIPE store (f32 -> f16) to ``gemm_out``, the release
  (``PIPE_ALL``), then its ready queue: the tile index into the next slot, ``count[b]`` + 1;
* **communication** (vector, 24 persistent blocks, one mixed loop each): block b polls queue
  b with ``TTEST(count >= head + 1)`` and reduce-scatters each new tile, subtile by subtile:
  a ``TLOAD`` into UB (ping / pong, the next subtile's load under this one's store) and a
  ``TSTORE`` with atomic add into the owner's ``reduced`` (a peer's window), then the release
  (``PIPE_ALL``, ``dsb``) and the owner's ``ready[subtile]`` and ``summary[AG block]`` bumped
  (reversed stripes: subtile s to block ``23 - s mod 24``); the same loop tests
  (``TTEST ready >= N``) the owner-side subtiles of its AG stripe and sends each complete one
  to every other rank (first peer rotated by the subtile id); with no progress it blocks with
  ``TWAIT`` on its queue count while RS work remains, else on its ``summary`` counter.

Simplifications against the public kernel: one queue per communication block (24 and 24, as
the public launch), the AG sends through ``TPUT`` (one per peer) rather than the hand-written
``TLOAD`` / ``TSTORE`` pair, and the acquire after each AG hit rather than once per pass.
``bench/bench_ranks.py`` (``gemm_ar_public``, ``--fidelity``) runs it against the public
figures (compute-only, sequential, pipelined).

    import sim, examples.comm.gemm_ar as g
    r = sim.simulate(g.compute(), ranks=8, streams=[g.comm()], comm_context="ctx",
                     functional=False, trace="none")

or from the command line (``build`` is the compute kernel, ``comm`` the second stream)::

    ptosim run examples/comm/gemm_ar.py --ranks 8 --stream examples/comm/gemm_ar.py:comm \
        --comm-context ctx --timing-only
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from sim.frontend import parse_file

PTO = Path(__file__).with_suffix(".pto")
BASE_M, BASE_N, SUB_M = 128, 256, 64
BLOCKS = 24  # AIC blocks for compute, AIV blocks for communication (communication.md §10.2)
M, K, N = 5504, 6144, 1536  # the public problem, padded (communication.md §10.2)


@attrs.frozen
class Grid:
    ranks: int
    m: int
    n: int
    cblocks: int = BLOCKS
    ablocks: int = BLOCKS

    @property
    def tn(self) -> int:
        return self.n // BASE_N

    @property
    def tiles(self) -> int:
        return (self.m // BASE_M) * self.tn

    @property
    def slots(self) -> int:  # queue slots per compute block
        return -(-self.tiles // self.cblocks)

    @property
    def own_max(self) -> int:  # tiles the busiest owner holds
        return -(-self.tiles // self.ranks)

    @property
    def signal_words(self) -> int:  # ready[2 * own_max], then summary[ablocks]
        return 2 * self.own_max + self.ablocks

    def summary(self, block: int) -> int:
        return 2 * self.own_max + block


def grid(ranks: int, m: int, n: int, blocks: int = BLOCKS) -> Grid:
    if m % BASE_M or n % BASE_N:
        raise ValueError(f"m={m}, n={n} must be multiples of {BASE_M} and {BASE_N}")
    return Grid(ranks, m, n, blocks, blocks)


def swizzle(position: int, tn: int) -> int:
    """The tile at ``position`` of the compute order: tile rows in turn, odd rows right to
    left (the zig-zag keeps consecutive tiles on shared columns of B)."""
    row, col = divmod(position, tn)
    return row * tn + (tn - 1 - col if row % 2 else col)


def queues(g: Grid) -> np.ndarray:
    """The ready queues as the compute kernel leaves them: ``count[b]`` then each block's
    slots (the sequential run's communication kernel starts from these)."""
    q = np.zeros(g.cblocks + g.cblocks * g.slots, np.int32)
    for b in range(g.cblocks):
        mine = [swizzle(p, g.tn) for p in range(b, g.tiles, g.cblocks)]
        q[b] = len(mine)
        q[g.cblocks + b * g.slots : g.cblocks + b * g.slots + len(mine)] = mine
    return q


@attrs.frozen
class Launch:
    """A kernel of ``gemm_ar.pto`` with its launch size and the inputs the host sets (what
    ``sim.simulate`` and ``ptosim run`` read of a ``sim.Kernel``)."""

    entry: str
    block_dim: int
    inputs: dict

    def program(self):
        return attrs.evolve(parse_file(str(PTO)), entry=self.entry)


def _scalars(g: Grid) -> dict:
    return {"m": g.m, "n": g.n, "cblocks": g.cblocks, "ablocks": g.ablocks}


def compute(ranks: int = 8, m: int = M, k: int = K, n: int = N, blocks: int = BLOCKS) -> Launch:
    if k % 512:
        raise ValueError(f"k={k} must be a multiple of 512 (two 256-deep L1 loads a step)")
    g = grid(ranks, m, n, blocks)
    host = {"queue": np.zeros(g.cblocks * (1 + g.slots), np.int32), "k": k, **_scalars(g)}
    return Launch("ar_compute", blocks, host)


def build(ranks: int = 8, m: int = M, k: int = K, n: int = N) -> Launch:
    """The compute kernel (``ptosim run`` builds this one; ``comm`` is its second stream)."""
    return compute(ranks, m, k, n)


def comm(
    ranks: int = 8, m: int = M, n: int = N, blocks: int = BLOCKS, rung: bool = False
) -> Launch:
    """The all-reduce; ``rung=True``: the queues full, as the compute kernel leaves them (the
    sequential run's communication launch)."""
    g = grid(ranks, m, n, blocks)
    host = {
        "queue": queues(g) if rung else np.zeros(g.cblocks * (1 + g.slots), np.int32),
        "sig": np.zeros(g.signal_words, np.int32),
        "done": np.zeros(g.ablocks * g.own_max, np.int32),
        "reduced": np.zeros(m * n, np.float16),
        **_scalars(g),
    }
    return Launch("ar_comm", blocks, host)
