"""The collectives of the AIV engine (communication.md §5.4), run by the root.

``TBROADCAST``, the comm ``TSCATTER`` / ``TGATHER`` and ``TREDUCE`` run on the root only (the
other ranks keep their buffers valid; a kernel guards the call with its rank, and a run skips
it on the other ranks). A group member is one rank's view (``CommUnit._far``; a builder group
is one view on every rank). The data moves when the op issues; the pipe items follow the
library's lowering per chunk of the staging tile:

* broadcast / scatter / gather: one load and the stores it feeds (``CommUnit._staged_items``;
  a store per rank for a broadcast);
* reduce: ``acc`` <- the root's member (MTE2), then per other rank in order a load into a
  ``recv`` tile (MTE2, tile j mod 2 with a pong, so the next load overlaps this reduction)
  and ``TADD`` / ``TMAX`` / ``TMIN(acc, acc, recv)`` on PIPE_V, costed as the tile op is;
  then the store of ``acc`` to ``dst`` (MTE3). The result is the root's ``dst`` only (the
  per-op page and the code; the family page's "every rank" is a [conflict], §5.4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sim.base.errors import UserError
from sim.engine.items import SET, WAIT
from sim.isa.comm import CommOp, chunks
from sim.isa.program import Instr
from sim.isa.tile import Tile

__all__ = ["Collectives", "check_stages"]

_LOAD, _STORE, _V = "PIPE_MTE2", "PIPE_MTE3", "PIPE_V"
_REDUCE = {"sum": ("TADD", np.add), "max": ("TMAX", np.maximum), "min": ("TMIN", np.minimum)}


def check_stages(stages, dt, where: str, section: str) -> None:
    """Staging tiles of a communication instruction: Vec tiles of the data's element type
    (communication.md ``section``)."""
    for t in stages:
        if t.loc.value != "vec" or t.dtype != dt:
            raise UserError(
                f"{where}: staging tile %{t.name} must be a Vec tile of the data's "
                f"element type {dt} (communication.md {section}), found {t.loc.value} {t.dtype}"
            )


class Collectives:
    """Mixin of ``CommUnit``: the collectives."""

    # What the unit provides (class-level declarations only, for the type checker).
    functional: bool
    scalar: Callable[[Any], Any]
    valid_of: Callable[[Tile], tuple]
    _far: Callable[..., tuple]
    _rank_window: Callable[..., np.ndarray]
    _staged_items: Callable[..., Any]
    _flag_issue: Callable[..., Any]
    _staged_move: Callable[..., Any]
    _race: Callable[..., None]
    _instr: Callable[[Instr], Any]

    def _group(self, st: CommOp, rank: int, links, where: str, plain: int):
        """(root, the plain operands, staging tiles, members as (rank, view)), or None on a
        rank that is not the root."""
        root = int(self.scalar(st.attr("root", 0)))
        links.peer(rank, root, where)
        if rank != root:
            return None
        n_st = int(st.attr("stages", 1))
        ops = st.operands
        main, stages, group = ops[:plain], ops[plain : plain + n_st], ops[plain + n_st :]
        if not 1 <= n_st <= 2 or not all(isinstance(t, Tile) for t in stages):
            raise UserError(f"{where}: expected one or two staging tiles (recv(ping[, pong]))")
        if st.attr("symmetric"):
            members = [self._far(group[0], rank, k, links, where) for k in range(links.n)]
        else:
            members = [self._far(g, rank, None, links, where) for g in group]
        if not members:
            raise UserError(f"{where}: the group is empty")
        return root, main, stages, members

    def _collective(self, st: CommOp, name: str, rank: int, links, where: str):
        """TBROADCAST / TSCATTER / TGATHER (the module docstring)."""
        found = self._group(st, rank, links, where, 1)
        if found is None:
            return None
        _, (main,), stages, members = found
        n_st = len(stages)
        _, mview = self._far(main, rank, None, links, where)
        dt = mview[0].dtype
        check_stages(stages, dt, where, "§5.4")
        for v in (mview, *(m[1] for m in members)):
            if len(v[2]) != 2 or v[0].dtype != dt:
                raise UserError(
                    f"{where}: expected 2-D GM views of {dt}, found {v[0].dtype} {list(v[2])}"
                )
        vr, vc = (int(x) for x in self.valid_of(stages[0]))
        isz = dt.size_bytes
        moves: list = []
        if name == "tbroadcast":
            for k, v in members:
                if v[2] != mview[2]:
                    raise UserError(
                        f"{where}: group member on rank {k} is {list(v[2])}, src {list(mview[2])}"
                    )
                self._race(links, rank, mview, False, where)
                self._race(links, k, v, True, where)
                if self.functional:
                    a = self._rank_window(links, k, v)
                    a[...] = self._rank_window(links, rank, mview).copy()
            dsts = tuple(k for k, _ in members)
            rows, cols = mview[2]
            for _, nr, _, nc in chunks(rows, cols, vr, vc, where):
                moves.append((rank, dsts, nr * nc * isz))
        else:
            scatter = name == "tscatter"
            h, cols = members[0][1][2]
            if mview[2][1] != cols or len(members) * h > mview[2][0]:
                raise UserError(
                    f"{where}: the root's view {list(mview[2])} must hold the {len(members)} "
                    f"members' {h}x{cols} blocks stacked by rows"
                )
            ptr, base, _, strides = mview
            for r, (k, v) in enumerate(members):
                if v[2] != (h, cols):
                    raise UserError(f"{where}: group members differ in shape: {list(v[2])}")
                block = (ptr, base + r * h * strides[0], (h, cols), strides)
                far, near = (k, v), (rank, block)
                to, frm = (far, near) if scatter else (near, far)
                self._race(links, *frm, False, where)
                self._race(links, *to, True, where)
                if self.functional:
                    a = self._rank_window(links, *to)
                    a[...] = self._rank_window(links, *frm).copy()
                for _, nr, _, nc in chunks(h, cols, vr, vc, where):
                    moves.append((frm[0], (to[0],), nr * nc * isz))
        return self._staged_items(name.upper(), rank, moves, links, n_st, st)

    def _reduce(self, st: CommOp, rank: int, links, where: str):
        """TREDUCE (the module docstring): the root's ``dst`` = the members reduced."""
        found = self._group(st, rank, links, where, 2)
        if found is None:
            return None
        root, (dst, acc), recvs, members = found
        op = st.attr("reduceOp", "sum")
        if op not in _REDUCE:
            raise UserError(f"{where}: reduceOp: expected sum, max or min, found {op!r}")
        if not isinstance(acc, Tile):
            raise UserError(f"{where}: expected an acc tile after dst")
        _, dview = self._far(dst, rank, None, links, where)
        dt = dview[0].dtype
        for t in (acc, *recvs):
            if t.loc.value != "vec" or t.dtype != dt:
                raise UserError(
                    f"{where}: tile %{t.name} must be a Vec tile of the data's element type "
                    f"{dt} (communication.md §5.4), found {t.loc.value} {t.dtype}"
                )
        for k, v in members:
            if len(v[2]) != 2 or v[2] != dview[2] or v[0].dtype != dt:
                raise UserError(
                    f"{where}: the member on rank {k} is {v[0].dtype} {list(v[2])}; expected "
                    f"dst's {dt} {list(dview[2])}"
                )
        order = [m for m in members if m[0] == root] + [m for m in members if m[0] != root]
        if order[0][0] != root:
            raise UserError(f"{where}: the group has no member on the root, rank {root}")
        opcode, fn = _REDUCE[op]
        for m in order:
            self._race(links, *m, False, where)
        self._race(links, rank, dview, True, where)
        if self.functional:
            total = self._rank_window(links, *order[0]).copy()
            for m in order[1:]:
                total = fn(total, self._rank_window(links, *m)).astype(total.dtype)
            self._rank_window(links, rank, dview)[...] = total
        rows, cols = dview[2]
        vr, vc = (int(x) for x in self.valid_of(acc))
        parts = chunks(rows, cols, vr, vc, where)
        isz = dt.size_bytes
        vops = [Instr(opcode, (acc,), (acc, t), loc=st.loc) for t in recvs]
        return self._reduce_items(st, rank, order, parts, isz, vops, links)

    def _reduce_items(self, st, rank, order, parts, isz, vops, links):
        source = str(st.loc or "")
        nbuf = len(vops)
        acc_v = (_LOAD, _V, ("comm", "acc"))
        acc_st = (_V, _STORE, ("comm", "acc"))
        acc_free = (_STORE, _LOAD, ("comm", "acc"))
        others = order[1:]
        for k, (_, nr, _, nc) in enumerate(parts):
            nbytes = nr * nc * isz
            if k:  # the previous chunk's store has read acc
                yield self._flag_issue(WAIT, _LOAD, acc_free, source)
            at = (k, len(parts))
            yield self._staged_move("TREDUCE", _LOAD, order[0][0], rank, nbytes, links, source, at)
            yield self._flag_issue(SET, _LOAD, acc_v, source)
            yield self._flag_issue(WAIT, _V, acc_v, source)
            for j, (r, _) in enumerate(others):
                b = j % nbuf
                to_v = (_LOAD, _V, ("comm", b))
                back = (_V, _LOAD, ("comm", b))
                if j >= nbuf:
                    yield self._flag_issue(WAIT, _LOAD, back, source)
                yield self._staged_move("TREDUCE", _LOAD, r, rank, nbytes, links, source, at)
                yield self._flag_issue(SET, _LOAD, to_v, source)
                yield self._flag_issue(WAIT, _V, to_v, source)
                yield self._instr(vops[b])
                yield self._flag_issue(SET, _V, back, source)
            for j in range(max(0, len(others) - nbuf), len(others)):  # balance
                yield self._flag_issue(WAIT, _LOAD, (_V, _LOAD, ("comm", j % nbuf)), source)
            yield self._flag_issue(SET, _V, acc_st, source)
            yield self._flag_issue(WAIT, _STORE, acc_st, source)
            yield self._staged_move("TREDUCE", _STORE, rank, rank, nbytes, links, source, at)
            yield self._flag_issue(SET, _STORE, acc_free, source)
        if parts:
            yield self._flag_issue(WAIT, _LOAD, acc_free, source)
