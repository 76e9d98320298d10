"""Auto-mode synchronisation: find the hazards between placed tiles and insert the
set/wait flags and barriers that order them (the policy is documented in
``sim.placement.auto``).

The pass reasons with the static happens-before model of the pipe queues of
``sim.placement.order`` (``Order``: a vector clock per pipe of the items of other pipes
known to have completed). A hazard between an earlier
access X (pipe P, index k) and a later access Y (pipe Q) is *covered* when Q's clock at
Y already holds k for P — through the flags and barriers inserted so far, transitively.
"""

from __future__ import annotations

from typing import Any

import attrs

from sim.isa.comm import CommOp
from sim.isa.program import (
    Arith,
    Barrier,
    Const,
    For,
    If,
    Instr,
    PipeOp,
    Scalar,
    ScalarOp,
    Section,
    SetFlag,
    WaitFlag,
    Yield,
)
from sim.placement.order import (
    Ctx,
    Order,
    Rec,
    Summary,
    pipes_of_stmt,
    raw_accesses,
    steps_of,
    stmt,
)

__all__ = ["synchronise"]


class _Level:
    """Synchronises one straight-line block (nested statements are compounds)."""

    def __init__(self, ctx: Ctx, busy: dict, parity: dict):
        self.ctx = ctx
        self.order = Order()
        self.records: dict[str, list] = {}
        # (P, Q) -> {id: (set pos, wait pos, wait index)} of the latest use of each id.
        # Uses are recorded in program order, so wait positions and wait indices only
        # grow: the latest use of an id decides whether it is free (one lookup per id).
        self.intervals: dict[tuple, dict] = {}
        self.busy = busy  # (P, Q) -> ids unusable at this level
        self.parity = parity  # loop id -> copy used for DB tiles here
        self.keys: set = set()
        self.before: dict[int, list] = {}
        self.after: dict[int, list] = {}

    # --- event ids --------------------------------------------------------------------

    def _find_id(self, p, q, s, w, snap):
        last = self.intervals.get((p, q), {})
        for e in range(self.ctx.n_ids):
            if e in self.busy.get((p, q), ()):
                continue
            if e not in last:
                return e
            s2, w2, widx = last[e]
            if s2 <= w and s <= w2:
                continue  # its interval overlaps
            if w2 < s and snap.get(q, 0) < widx:  # its wait may not have run yet
                continue
            return e
        return None

    # --- hazards ----------------------------------------------------------------------

    def _uncovered(self, q: str, accs, same_pipe: bool = True) -> dict:
        """Source pipe -> the latest record of it that an access of ``accs`` on ``q``
        conflicts with and ``q`` does not know to have completed."""
        found: dict[str, Rec] = {}
        # Access.conflicts and Order.knows inlined: this runs for every record of a space
        # at every instruction (records of a space share it)
        known, floor = self.order.vc.get(q, {}), self.order.floor
        for a in accs:
            lo, hi, write = a.lo, a.hi, a.write
            for r in self.records.get(a.space, ()):
                ra = r.acc
                if not (ra.lo < hi and lo < ra.hi and (write or ra.write)):
                    continue
                p = r.pipe
                if (not same_pipe and p == q) or max(known.get(p, 0), floor.get(p, 0)) >= r.k:
                    continue
                f = found.get(p)
                if f is None or f.k < r.k:
                    found[p] = r
        return found

    def _resolve(self, i: int, q: str, found: dict) -> None:
        """Order the uncovered hazards ``found`` (source pipe -> latest record) before the
        statement at ``i`` on pipe ``q``. One wait can cover several hazards (the set
        carries everything its pipe knew), so waits are added one at a time — the one
        covering most first — and what they cover is dropped; a same-pipe hazard left
        over gets the barrier."""
        if not found:
            return
        ctx = self.ctx
        order = self.order
        todo = dict(found)
        plan = []
        while True:
            cross = {p: r for p, r in todo.items() if p != q}
            if not cross:
                break
            if len(cross) == 1:
                ((p, r),) = cross.items()
            else:  # the wait covering most hazards, then the first pipe by name
                _, p = min(
                    (-sum(r.snap.get(p2, 0) >= r2.k for p2, r2 in todo.items() if r2 is not r), p)
                    for p, r in cross.items()
                )
                r = cross[p]
            e = self._find_id(p, q, r.i + 0.5, i - 0.5, r.snap)
            if e is None:
                # pool exhausted: drain everything instead (covers every hazard of i)
                self.before.setdefault(i, []).append(stmt(Barrier, "PIPE_ALL"))
                order.barrier_all()
                ctx.stats.fallback_barriers += 1
                return
            plan.append((p, r, e))
            todo = {p2: r2 for p2, r2 in todo.items() if p2 != p and r.snap.get(p2, 0) < r2.k}
        for p, r, e in plan:
            self.after.setdefault(r.i, []).append(stmt(SetFlag, p, q, e))
            widx = order.wait(q, (p, q, e), clock=r.snap)
            self.before.setdefault(i, []).append(stmt(WaitFlag, p, q, e))
            self.intervals.setdefault((p, q), {})[e] = (r.i + 0.5, i - 0.5, widx)
            self.keys.add((p, q, e))
            ctx.stats.pairs += 1
        if q in todo:
            self.before.setdefault(i, []).append(stmt(Barrier, q))
            order.barrier(q)
            ctx.stats.barriers += 1

    def _record(self, q: str, k: int, snap: dict, accs, i: int) -> None:
        records = self.records
        for a in accs:
            lo, hi, write = a.lo, a.hi, a.write
            lst = records[a.space] = [
                r
                for r in records.get(a.space, ())
                if not (
                    r.pipe == q and lo <= r.acc.lo and r.acc.hi <= hi and (write or not r.acc.write)
                )
            ]
            lst.append(Rec(q, k, snap, a, i))
            if len(lst) > 64:
                pipes = self.ctx.all_pipes
                lst[:] = [
                    r for r in lst if not all(self.order.knows(p, r.pipe, r.k) for p in pipes)
                ]

    # --- the walk ---------------------------------------------------------------------

    def run(self, body) -> list:
        ctx = self.ctx
        body = list(body)
        for i, st in enumerate(body):
            step = ctx.step(st) if isinstance(st, (Instr, PipeOp)) else None
            if step is not None:
                q, sym, same = step
                if ctx.tick is not None:
                    ctx.ordered += 1
                    if not ctx.ordered & 4095:
                        ctx.tick(ctx.ordered)
                accs = ctx.resolve_step(sym, self.parity)
                self._resolve(i, q, self._uncovered(q, accs, same))
                k, snap = self.order.op(q)
                self._record(q, k, snap, accs, i)
            elif isinstance(st, CommOp) and ctx.comm_steps(st):
                self._comm(i, ctx.comm_steps(st))
            elif (
                isinstance(st, ScalarOp)
                and st.op.removeprefix("pto.") in ("load_scalar", "store_scalar")
            ) or (isinstance(st, CommOp) and st.op == "pto.comm.tnotify"):
                # the scalar unit touches buffer / GM bytes at dispatch: drain every pipe first
                # (a signal is the release of the payload before it: PTOAS emits this barrier
                # before every comm.tnotify, communication.md §1.1)
                self.before.setdefault(i, []).append(stmt(Barrier, "PIPE_ALL"))
                self.order.barrier_all()
                ctx.stats.scalar_barriers += 1
            elif isinstance(st, (For, If, Section)):
                body[i] = self._compound(i, st)
        out = []
        for i, st in enumerate(body):
            out += self.before.get(i, [])
            out.append(st)
            out += self.after.get(i, [])
        # a trailing Yield must stay last
        ys = [k for k, s in enumerate(out) if isinstance(s, Yield)]
        if ys and ys[-1] != len(out) - 1:
            y = out.pop(ys[-1])
            out.append(y)
        return out

    def _comm(self, i: int, steps: tuple) -> None:
        """A UB-staged communication instruction (``sim.placement.comm``): each side's
        hazards with what came before are ordered first, then the sides are recorded (they
        are no hazard for each other: the op orders its own steps)."""
        resolved = [(q, self.ctx.resolve_step(sym, self.parity)) for q, sym, _ in steps]
        for q, accs in resolved:
            self._resolve(i, q, self._uncovered(q, accs))
        for q, accs in resolved:
            k, snap = self.order.op(q)
            self._record(q, k, snap, accs, i)

    def _busy_inside(self) -> dict:
        """Ids a nested block may not use: busy here, or possibly still pending here."""
        busy = {k: set(v) for k, v in self.busy.items()}
        for (p, q), ivs in self.intervals.items():
            for e, (_, _, widx) in ivs.items():
                if widx is None or not self.order.knows(p, q, widx):
                    busy.setdefault((p, q), set()).add(e)
        return busy

    def _compound(self, c: int, st):
        ctx = self.ctx
        # entry: hazards from earlier statements to anything inside, ordered before it
        raw = raw_accesses(st, ctx)
        for q in sorted(raw):
            found = self._uncovered(q, ctx.resolve(raw[q], self.parity))
            if found:
                self._resolve(c, q, found)
        busy = self._busy_inside()
        if isinstance(st, For):
            new, summ = _loop(ctx, st, busy, self.parity)
        elif isinstance(st, If):
            summ = Summary()
            bodies = []
            for b in (st.then_body, st.else_body):
                lvl = _Level(ctx, busy, self.parity)
                bodies.append(lvl.run(b))
                summ.merge(lvl.summary(bodies[-1]))
            new = attrs.evolve(st, then_body=tuple(bodies[0]), else_body=tuple(bodies[1]))
        else:  # Section
            lvl = _Level(ctx, busy, self.parity)
            nb = lvl.run(st.body)
            summ = lvl.summary(nb)
            new = attrs.evolve(st, body=tuple(nb))
        ctx.summaries[id(new)] = summ
        for p, q, e in summ.primes:
            self.before.setdefault(c, []).append(stmt(SetFlag, p, q, e))
            self.order.set(p, (p, q, e))
        kq = {}
        for q in sorted(summ.pipes):
            k, snap = self.order.op(q)
            kq[q] = k
            self._record(q, k, snap, ctx.resolve(summ.accesses.get(q, []), self.parity), c)
        drained = {}
        for p, q, e in summ.drains:
            self.after.setdefault(c, []).append(stmt(WaitFlag, p, q, e))
            drained[(p, q, e)] = self.order.wait(q, (p, q, e))
        for key in summ.keys:
            p, q, e = key
            widx = drained.get(key, kq.get(q, self.order.n.get(q, 0)))
            self.intervals.setdefault((p, q), {})[e] = (c - 0.3, c + 0.3, widx)
            self.keys.add(key)
        return new

    def summary(self, body) -> Summary:
        ctx = self.ctx
        s = Summary(keys=set(self.keys))
        for st in body:
            s.pipes |= pipes_of_stmt(st, ctx)
            steps = steps_of(st, ctx)
            for step in steps:
                s.accesses.setdefault(step[0], []).extend(step[1])
            if not steps and not isinstance(st, (Instr, PipeOp)):
                inner = ctx.summaries.get(id(st))
                if inner is not None:
                    for p, a in inner.accesses.items():
                        s.accesses.setdefault(p, []).extend(a)
        return s


# --- loops -----------------------------------------------------------------------------


def _event_key(st, parity: dict, ctx) -> tuple:
    ev = st.event
    if isinstance(ev, Scalar):
        loop, id0, id1 = ctx.parity_events[ev.name]
        ev = (id0, id1)[parity.get(loop, 0)]
    return (st.src, st.dst, int(ev))


def _simulate(ctx, stmts, origin, loop_id, parity, copies, primes):
    """Walk ``copies`` iterations of a loop body (``stmts``; ``origin[i]`` is the body
    position a statement belongs to). Returns the hazards between iterations that no
    sync covers, ``{(x_pos, y_pos, P, Q): distance}``, and the flags whose id may be set
    again before its previous wait ran (``(P, Q, event)``, or ``("inner", P, Q, id)`` for
    an id used inside a nested statement)."""
    order = Order()
    for p, q, e in primes:
        order.set(p, (p, q, e), clock={})
    records: dict[str, list] = {}
    uncovered: dict = {}
    unsafe: set = set()

    def consume(c, i, q, accs, same_pipe=True):
        for a in accs:
            for r in records.get(a.space, ()):
                if not same_pipe and r.pipe == q:
                    continue
                if r.copy < c and r.acc.conflicts(a) and not order.knows(q, r.pipe, r.k):
                    key = (r.i, i, r.pipe, q)
                    uncovered[key] = min(uncovered.get(key, c - r.copy), c - r.copy)
        k, snap = order.op(q)
        for a in accs:
            records.setdefault(a.space, []).append(Rec(q, k, snap, a, i, c))
        return k

    for c in range(copies):
        par = {**parity, loop_id: c % 2}
        for st, i in zip(stmts, origin, strict=True):
            if isinstance(st, (Instr, PipeOp)):
                step = ctx.step(st)
                if step is not None:
                    consume(c, i, step[0], ctx.resolve(step[1], par), step[2])
            elif isinstance(st, CommOp):  # its sides: no hazard for each other (same copy)
                for q, sym, same in ctx.comm_steps(st):
                    consume(c, i, q, ctx.resolve(sym, par), same)
            elif isinstance(st, SetFlag):
                key = _event_key(st, par, ctx)
                sym = (st.src, st.dst, st.event.name if isinstance(st.event, Scalar) else st.event)
                if order.fifo.get(key):
                    unsafe.add(sym)
                elif key in order.last_wait:
                    q, w = order.last_wait[key]
                    if order.clock(st.src).get(q, 0) < w:
                        unsafe.add(sym)
                order.set(st.src, key)
            elif isinstance(st, WaitFlag):
                order.wait(st.dst, _event_key(st, par, ctx))
            elif isinstance(st, Barrier):
                if st.pipe == "PIPE_ALL":
                    order.barrier_all()
                else:
                    order.barrier(st.pipe)
            else:
                summ = ctx.summaries.get(id(st))
                if summ is None:
                    continue
                for key in summ.keys:  # ids reused by every run of the compound
                    if key in order.last_wait:
                        q, w = order.last_wait[key]
                        if order.clock(key[0]).get(q, 0) < w:
                            unsafe.add(("inner",) + key)
                kq = {
                    q: consume(c, i, q, ctx.resolve(summ.accesses.get(q, []), par))
                    for q in sorted(summ.pipes)
                }
                for key in summ.keys:
                    if key[1] in kq:
                        order.last_wait[key] = (key[1], kq[key[1]])
    return uncovered, unsafe


def _parity_scalar(ctx, loop) -> Scalar:
    """The iteration parity ``((iv - lower) / step) % 2`` of ``loop`` (its statements are
    emitted at the top of the loop body by ``_place_loop_sync``)."""
    got = ctx.parity.get(ctx.key(loop))
    if got is not None:
        return got[1]
    stmts = []
    d = Scalar(ctx.names("iter"), "index")
    stmts.append(Arith(d, "arith.subi", (loop.iv, loop.lower)))
    q = d
    if not (isinstance(loop.step, Const) and int(loop.step.value) == 1):
        q = Scalar(ctx.names("iter"), "index")
        stmts.append(Arith(q, "arith.divsi", (d, loop.step)))
    sc = Scalar(ctx.names("parity"), "index")
    stmts.append(Arith(sc, "arith.remsi", (q, Const(2))))
    ctx.parity[ctx.key(loop)] = (stmts, sc)
    return sc


def _parity_value(ctx, par: Scalar, v0: int, v1: int, prefix: str) -> tuple[list, Scalar]:
    """Statements computing ``v0`` on even iterations and ``v1`` on odd ones."""
    m = Scalar(ctx.names(prefix), "index")
    v = Scalar(ctx.names(prefix), "index")
    return [
        Arith(m, "arith.muli", (par, Const(v1 - v0))),
        Arith(v, "arith.addi", (m, Const(v0))),
    ], v


@attrs.frozen
class _LoopFlag:
    src: str
    dst: str
    ids: tuple  # one id (distance 1) or two alternated by parity (distance 2)
    x_last: int  # set after this body position
    y_first: int  # wait before this body position


def _loop(ctx, st: For, busy: dict, parity: dict):
    lvl = _Level(ctx, busy, {**parity, ctx.key(st): 0})
    body = lvl.run(st.body)
    used = set(lvl.keys)
    for (p, q), ids in busy.items():
        used |= {(p, q, e) for e in ids}
    flags: list[_LoopFlag] = []
    same: dict[str, int] = {}  # pipe -> body position of its carried barrier
    parity_keys: dict[tuple, tuple] = {}  # body flag (P, Q, id) -> (id, second id)
    fallback = False

    def free_ids(p, q, n):
        taken = used | {(f.src, f.dst, e) for f in flags for e in f.ids}
        taken |= {(a, b, e2) for (a, b, _), (_, e2) in parity_keys.items()}
        got = [e for e in range(ctx.n_ids) if (p, q, e) not in taken]
        return tuple(got[:n]) if len(got) >= n else None

    for _round in range(8):
        stmts, origin, _ = _place_loop_sync(ctx, st, body, flags, same, parity_keys, False)
        primes = [(f.src, f.dst, e) for f in flags for e in f.ids]
        uncovered, unsafe = _simulate(ctx, stmts, origin, ctx.key(st), parity, 3, primes)
        if not uncovered and not unsafe:
            break
        if unsafe and not uncovered:  # carried syncs first: they often order the reuse
            for sym in sorted(unsafe, key=str):
                body_flag = (
                    len(sym) == 3
                    and isinstance(sym[2], int)
                    and sym in used
                    and sym in lvl.keys
                    and sym not in parity_keys
                )
                extra = free_ids(sym[0], sym[1], 1) if body_flag else None
                if extra is None:
                    fallback = True
                    break
                parity_keys[sym] = (sym[2], extra[0])
            if fallback:
                break
            continue
        pairs: dict[tuple, list] = {}
        for (xi, yi, p, q), d in uncovered.items():
            pairs.setdefault((p, q), []).append((xi, yi, d))
        cross = {pq: hs for pq, hs in pairs.items() if pq[0] != pq[1]}
        for (p, q), hs in sorted(cross.items()):
            # one flag per producer position (set after it, wait before its first
            # consumer): ping and pong buffers keep separate flags; one flag for the pair
            # when the pool is short
            groups: dict = {}
            for x, y, d in hs:
                groups.setdefault(x, []).append((y, d))
            cand = [
                (x, min(y for y, _ in g), 2 if min(d for _, d in g) >= 2 else 1)
                for x, g in sorted(groups.items())
            ]
            need = sum(d for _, _, d in cand)
            ids = free_ids(p, q, need)
            if ids is None:
                d = 2 if min(h[2] for h in hs) >= 2 else 1
                cand = [(max(h[0] for h in hs), min(h[1] for h in hs), d)]
                ids = free_ids(p, q, d)
            if ids is None:
                fallback = True
                break
            for x, y, d in cand:
                flags.append(_LoopFlag(p, q, ids[:d], x, y))
                ids = ids[d:]
        if fallback:
            break
        if not cross:  # a carried flag may already order a same-pipe hazard
            for (_, q), hs in pairs.items():
                y_first = min(h[1] for h in hs)
                same[q] = min(same.get(q, y_first), y_first)
    else:
        fallback = True
    if fallback:
        # cannot order the iterations with flags: drain every pipe at the bottom instead
        flags = []
    stmts, _, pre = _place_loop_sync(ctx, st, body, flags, same, parity_keys, fallback)
    stats = ctx.stats
    stats.loop_flags += len(flags)
    stats.barriers += len(same)
    stats.fallback_barriers += int(fallback)
    new = attrs.evolve(st, body=tuple(pre + stmts))
    summ = lvl.summary(stmts)
    for f in flags:
        for e in f.ids:
            summ.primes.append((f.src, f.dst, e))
            summ.drains.append((f.src, f.dst, e))
            summ.keys.add((f.src, f.dst, e))
        summ.pipes |= {f.src, f.dst}
    for (p, q, _), (_, e2) in parity_keys.items():
        summ.keys.add((p, q, e2))
    return new, summ


def _place_loop_sync(ctx, st, body, flags, same, parity_keys, fallback):
    """The loop body with its loop-level sync: ``(statements, body position of each,
    statements to put first)`` — the last are the parity computations."""
    before: dict[int, list] = {}
    after: dict[int, list] = {}
    events: list = []
    n = len(body)
    bottom = n - 2 if n and isinstance(body[-1], Yield) else n - 1  # last before a Yield
    event_of: dict[tuple, Any] = {}  # (src, dst, event) -> its event id or parity scalar
    par = None
    if parity_keys or any(len(f.ids) == 2 for f in flags):
        par = _parity_scalar(ctx, st)
    for (p, q, e), (e0, e1) in sorted(parity_keys.items()):
        assert par is not None  # made above for parity keys
        stmts, ev = _parity_value(ctx, par, e0, e1, "ev")
        ctx.parity_events[ev.name] = (ctx.key(st), e0, e1)
        events += stmts
        event_of[(p, q, e)] = ev
    for f in flags:
        ev = f.ids[0]
        if len(f.ids) == 2:
            assert par is not None  # made above for two-id flags
            stmts, ev = _parity_value(ctx, par, f.ids[0], f.ids[1], "ev")
            ctx.parity_events[ev.name] = (ctx.key(st), f.ids[0], f.ids[1])
            events += stmts
        if f.y_first < f.x_last:
            before.setdefault(f.y_first, []).append(stmt(WaitFlag, f.src, f.dst, ev))
            after.setdefault(f.x_last, []).append(stmt(SetFlag, f.src, f.dst, ev))
        else:  # the brief's idiom: wait at the top of the body, set at the bottom
            before.setdefault(0, []).insert(0, stmt(WaitFlag, f.src, f.dst, ev))
            after.setdefault(max(bottom, 0), []).append(stmt(SetFlag, f.src, f.dst, ev))
    for q, y in sorted(same.items()):
        before.setdefault(y, []).insert(0, stmt(Barrier, q))
    out, origin = [], []
    for i, s in enumerate(body):
        for x in before.get(i, []):
            out.append(x)
            origin.append(i)
        if isinstance(s, (SetFlag, WaitFlag)) and (s.src, s.dst, s.event) in event_of:
            s = attrs.evolve(s, event=event_of[(s.src, s.dst, s.event)])
        out.append(s)
        origin.append(i)
        for x in after.get(i, []):
            out.append(x)
            origin.append(i)
    if fallback:
        k = len(out) - 1 if out and isinstance(out[-1], Yield) else len(out)
        out.insert(k, stmt(Barrier, "PIPE_ALL"))
        origin.insert(k, n)
    pre = list(ctx.parity[ctx.key(st)][0]) if ctx.key(st) in ctx.parity else []
    return out, origin, pre + events


def synchronise(body, ctx: Ctx) -> list:
    """``body`` (placed, without sync) with every hazard ordered."""
    return _Level(ctx, {}, {}).run(body)
