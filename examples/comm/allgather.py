"""All-gather across ranks with the synchronous TPUT: every rank ends with every rank's block.

Each rank holds a ``rows x cols`` f32 block ``src``; after the kernel, ``out`` on every rank
holds the blocks of ranks 0 .. N-1 stacked by rows (rank r's at rows ``[r rows, (r+1) rows)``).
Two algorithms (communication.md §8.1 runs them with the async SDMA form; here the UB-staged
TPUT of §5.1 moves the data):

* **full mesh** (default): each rank pushes its block to every rank (its own copy is a local
  TPUT), then publishes with the release pattern of §6 — ``pipe_barrier(PIPE_ALL)``, then a
  ``TNOTIFY atomic_add 1`` on every rank's ``arrived`` counter — and waits until its own
  counter reaches N;
* **ring** (``ring=True``): N - 1 steps; at step s each rank forwards the block it received at
  step s - 1 (its own at step 0) to the next rank, then sets that rank's ``step[s]`` flag, and
  waits for its own ``step[s]`` before the next step.

``ranks`` must be the run's rank count. Run it::

    ptosim run examples/comm/allgather.py --ranks 8
    ptosim run examples/comm/allgather.py --ranks 4 --arg ranks=4 --arg ring=true
"""

import numpy as np

import sim


def build(ranks: int = 8, rows: int = 16, cols: int = 256, ring: bool = False) -> sim.Kernel:
    n = int(ranks)
    k = sim.Kernel("allgather_ring" if ring else "allgather")
    me = k.rank_idx
    src = k.gm("src", "f32", (rows, cols))  # each rank's own data (seeded per rank)
    out = k.gm("out", "f32", (n * rows, cols), np.zeros((n * rows, cols), np.float32))
    stage = k.tile("vec", "f32", rows, cols)
    if not ring:
        arrived = k.gm("arrived", "i32", (1, 1), np.zeros((1, 1), np.int32))
        for p in range(n):
            k.TPUT(out.view(rows, cols, row=me * rows), src, stage, peer=p)
        k.pipe_barrier("PIPE_ALL")  # the payload has left the core before the signal
        for p in range(n):
            k.TNOTIFY(arrived, 1, op="atomic_add", peer=p)
        k.TWAIT(arrived, n, cmp="ge")
        return k
    step = k.gm("step", "i32", (1, max(1, n - 1)), np.zeros((1, max(1, n - 1)), np.int32))
    nxt = (me + 1) % n
    k.TPUT(out.view(rows, cols, row=me * rows), src, stage)  # my own block, locally
    for s in range(n - 1):
        if s > 0:
            k.TWAIT(step.view(1, 1, col=s - 1), 1, cmp="ge")  # block (me - s) has landed
        blk = (me + (n - s)) % n
        k.TPUT(
            out.view(rows, cols, row=blk * rows),
            out.view(rows, cols, row=blk * rows),
            stage,
            peer=nxt,
        )
        k.pipe_barrier("PIPE_ALL")
        k.TNOTIFY(step.view(1, 1, col=s), 1, op="set", peer=nxt)
    if n > 1:
        k.TWAIT(step.view(1, 1, col=n - 2), 1, cmp="ge")
    return k
