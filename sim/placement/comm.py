"""What auto mode's passes see of a UB-staged communication instruction.

PTOAS inserts sync around ``comm.tput`` / ``comm.tget`` as around an op that reads ``src``
through MTE2 and writes ``dst`` through MTE3 (communication.md §5.1, last item: a ``tstore``
to the GM a ``comm.tput`` then reads gets an MTE3 -> MTE2 flag before the call). Auto mode
does the same, for the collectives too (the root's MTE2 loads and MTE3 stores, §5.4), and
with the staging tiles, whose bytes the op writes on its MTE2 side and reads on its MTE3
side (TREDUCE's V side reads its recv tiles and accumulates into ``acc``). Each side is one
step of its pipe for the sync pass, so the kernel's other instructions are ordered against
the op's GM windows and staging tiles with flags and barriers, as against a TLOAD /
TSTORE. The op orders its own steps (its MTE2 -> MTE3 and MTE3 -> MTE2 hand-offs, §6 rule
1): the sides of one op are no hazard for each other, and the pass knows nothing of those
internal hand-offs, as PTOAS does not (it sees an opaque call).

A peer's window (TPUT's ``dst``, TGET's ``src``) is the same GM argument here: symmetric
windows put a buffer at the same offset on every rank (§3), and treating the remote side
as the local one only adds flags. The placement sees each staging tile used (read and
written) where the op is, so no other tile shares its bytes while the op may use them.
"""

from __future__ import annotations

from sim.isa.comm import CommOp
from sim.isa.program import PartView
from sim.isa.tile import Tile

__all__ = ["STAGED", "comm_tiles", "comm_sides"]

_LOAD, _STORE, _V = "PIPE_MTE2", "PIPE_MTE3", "PIPE_V"
STAGED = (
    "pto.comm.tput",
    "pto.comm.tget",
    "pto.comm.tbroadcast",
    "pto.comm.tscatter",
    "pto.comm.tgather",
    "pto.comm.treduce",
)


def comm_tiles(st: CommOp) -> list[Tile]:
    """The tiles a UB-staged communication instruction uses (none for the others)."""
    if st.op not in STAGED:
        return []
    return [o for o in st.operands if isinstance(o, Tile)]


def comm_sides(st: CommOp) -> list[tuple[str, list[tuple]]]:
    """``[(pipe, [(operand, write)])]``: the GM views and tiles each side of a UB-staged
    communication instruction reads and writes (the module docstring); [] for the others.
    Operand orders as ``sim.isa.comm.CommOp`` documents them."""
    op, ops = st.op, st.operands
    if op not in STAGED:
        return []
    tiles = [o for o in ops if isinstance(o, Tile)]
    views = [o for o in ops if isinstance(o, PartView)]
    if op in ("pto.comm.tput", "pto.comm.tget"):
        dst, src = views[0], views[1]
        reads, writes = [src], [dst]
    elif op == "pto.comm.treduce":
        dst, *group = views
        acc, *recvs = tiles
        return [
            (_LOAD, [(g, False) for g in group] + [(t, True) for t in tiles]),
            (_V, [(acc, False), (acc, True)] + [(t, False) for t in recvs]),
            (_STORE, [(acc, False), (dst, True)]),
        ]
    elif op == "pto.comm.tgather":  # the members' rows into the root's dst
        reads, writes = views[1:], views[:1]
    else:  # tbroadcast / tscatter: the root's src to the members
        reads, writes = views[:1], views[1:]
    return [
        (_LOAD, [(v, False) for v in reads] + [(t, True) for t in tiles]),
        (_STORE, [(t, False) for t in tiles] + [(v, True) for v in writes]),
    ]
