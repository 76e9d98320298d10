"""All-gather with the SDMA engines (TPUT_ASYNC), full-mesh push: communication.md §8.1 Demo 1.

Each rank owns ``n`` int32 in ``send``; after the kernel, every rank's ``recv`` holds the
``send`` of ranks 0 .. N-1 (rank r's at elements ``[r n, (r+1) n)``). The kernel runs N
blocks; block b builds its own SDMA session (channel group b) and posts one copy of the
local ``send`` to rank b's ``recv[me]`` (block ``me`` copies locally), then waits for it.
The end of the kernel stands for the host's stream sync and barrier (§8.1 step 3).

    ptosim run examples/comm/allgather_async.py --ranks 8
"""

import numpy as np

import sim


def build(ranks: int = 8, n: int = 256) -> sim.Kernel:
    k = sim.Kernel("allgather_async", block_dim=int(ranks))
    me = k.rank_idx
    send = k.gm("send", "i32", (1, n))
    recv = k.gm("recv", "i32", (1, ranks * n), np.zeros((1, ranks * n), np.int32))
    scratch = k.tile("vec", "u8", 1, 256)  # the session's control words (256 B recommended)
    session = k.async_session(scratch)
    event = k.TPUT_ASYNC(recv.view(1, n, col=me * n), send, session, peer=k.block_idx)
    k.wait_async(event, session)
    return k
