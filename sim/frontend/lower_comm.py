"""Lowering of the communication ops (``pto.comm.*``, communication.md §1.1) to ``CommOp``.

The PTOAS form::

    pto.comm.tput(%dst, %src, buf(%ping[, %pong]) : PTV, PTV, TB[, TB])
        {atomicType = #pto<atomic_type atomic_add>}
    pto.comm.tget(%dst, %src, buf(%ping[, %pong]) : PTV, PTV, TB[, TB])
    pto.comm.tnotify(%sig, %v : PTV, i32) {notifyOp = #pto<notify_op set|atomic_add>}
    pto.comm.twait(%sig, %v : PTV, i32) {cmp = #pto<wait_cmp eq|ne|gt|ge|lt|le>}
    %ok = pto.comm.ttest(%sig, %v : PTV, i32) {cmp = #pto<wait_cmp ge>} -> i1

(the attribute on a line of its own above only for width). The peer a remote operand lives
on is not written in the op: it is where the operand's GM pointer points, a ``pto.addptr``
by the distance between two ranks' windows that kernels read from the communication context
(``sim.isa.comm.context_words``, ``sim.engine.comm``).
"""

from __future__ import annotations

import re

from sim.frontend.lower_values import ValueScope
from sim.frontend.syntax import make_value, value_type
from sim.isa.comm import ATOMIC_TYPES, COLLECTIVES, NOTIFY_OPS, REDUCE_OPS, WAIT_CMPS, CommOp
from sim.isa.program import RawAttr

__all__ = ["CommLowering", "COMM_KEYS"]

# op -> (operands it takes, the "buf" group's sizes, its attribute, the attribute's values)
_FORMS = {
    "pto.comm.tput": (2, (1, 2), "atomicType", ATOMIC_TYPES),
    "pto.comm.tget": (2, (1, 2), None, ()),
    "pto.comm.tnotify": (2, None, "notifyOp", NOTIFY_OPS),
    "pto.comm.twait": (2, None, "cmp", WAIT_CMPS),
    "pto.comm.ttest": (2, None, "cmp", WAIT_CMPS),
}
COMM_KEYS = {op: (f[2],) if f[2] else () for op, f in _FORMS.items()}
# the async ops: (operands, result type) (communication.md §1.1)
_ASYNC = {
    "pto.comm.build_async_session": (2, "!pto.async_session"),
    "pto.comm.tput_async": (3, "!pto.async_event"),
    "pto.comm.tget_async": (3, "!pto.async_event"),
    "pto.comm.wait_async_event": (2, "i1"),
    "pto.comm.test_async_event": (2, "i1"),
}
# the handles' types, values only these ops make and take (not kernel arguments)
OPAQUE = ("!pto.async_session", "!pto.async_event")
# build_async_session's keys; sync_id and comm_block_offset are read but change nothing here
_SESSION_KEYS = ("sync_id", "block_bytes", "comm_block_offset", "queue_num", "channel_group_idx")
_ENUM = re.compile(r"#pto(?:\.\w+)?<\s*(?:\w+\s+)?(\w+)\s*>")


class CommLowering(ValueScope):
    """``s_comm``: a ``pto.comm.*`` statement."""

    def s_comm(self, st) -> CommOp:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        op_tok = c[i]
        op = str(op_tok)
        if op in COLLECTIVES:
            return self._collective(op_tok, c[i + 1 :], first)
        if op in _ASYNC:
            return self._async(op_tok, results, c[i + 1 :], first)
        n_plain, group_sizes, key, allowed = _FORMS[op]
        flat, group = [], None
        for a in c[i + 1][1]:
            if isinstance(a, tuple) and a[0] == "cgroup":
                if group_sizes is None or str(a[1]) != "buf" or group is not None:
                    self.fail(a[1], f"{op}: unexpected group {a[1]}(...)")
                group = a
                flat += list(a[2])
            else:
                if group is not None:
                    self.fail(op_tok, f"{op}: buf(...) comes last")
                flat.append(a)
        n_buf = len(flat) - n_plain
        if group_sizes is not None and (group is None or n_buf not in group_sizes):
            self.fail(op_tok, f"{op}: expected dst, src, buf(ping[, pong])")
        if group_sizes is None and len(flat) != n_plain:
            self.fail(op_tok, f"{op}: expected 2 operands (signal, value), found {len(flat)}")
        rest = c[i + 2 :]
        types = next((x for x in rest if isinstance(x, tuple) and x[0] == "types"), None)
        operands = self.typed_list(("ops", flat), types, op_tok, op)
        attrs: dict = {}
        node = next((x for x in rest if isinstance(x, tuple) and x[0] == "dict"), None)
        if node is not None:
            for k, v in self.attrs(node).items():
                if k != key:
                    self.warn_at(
                        op_tok,
                        f"{op}: attribute {k} is not modelled for {op}: ignored; understood "
                        f"there: {key or 'no attribute'}",
                    )
                    continue
                m = _ENUM.fullmatch(v.text) if isinstance(v, RawAttr) else None
                value = m.group(1) if m else str(v)
                if value not in allowed:
                    self.fail(op_tok, f"{op}: {k}: expected one of {', '.join(allowed)}, found {v}")
                attrs[k] = value
        res = []
        names = self.result_names(results)
        arrow = next((j for j, x in enumerate(rest) if getattr(x, "type", None) == "ARROW"), None)
        if op == "pto.comm.ttest":
            if len(names) != 1 or arrow is None:
                self.fail(op_tok, f"{op}: expected one result, '%ok = {op}(...) ... -> i1'")
            v = make_value(names[0][1], self.type_of(rest[arrow + 1]))
            self.define(names[0][0], v)
            res.append(v)
        elif names:
            self.fail(names[0][0], f"{op} has no result")
        return CommOp(tuple(res), op, operands, attrs, None, loc=self.loc(first))

    def _collective(self, op_tok, rest, first) -> CommOp:
        """``pto.comm.tbroadcast(%v, recv(%ping[, %pong]), group(%g0, ...) : types) {root =
        K : i32}`` (tscatter, tgather alike)."""
        op = str(op_tok)
        args = rest[0][1]
        groups = {str(a[1]): a[2] for a in args if isinstance(a, tuple) and a[0] == "cgroup"}
        plain = [a for a in args if not (isinstance(a, tuple) and a[0] == "cgroup")]
        reduce = op == "pto.comm.treduce"
        if (
            len(plain) != (2 if reduce else 1)
            or set(groups) != {"recv", "group"}
            or not 1 <= len(groups["recv"]) <= 2
            or not groups["group"]
        ):
            head = "%dst, %acc" if reduce else "%view"
            self.fail(op_tok, f"{op}: expected ({head}, recv(%ping[, %pong]), group(%g0, ...))")
        flat = [*plain, *groups["recv"], *groups["group"]]
        types = next((x for x in rest[1:] if isinstance(x, tuple) and x[0] == "types"), None)
        operands = self.typed_list(("ops", flat), types, op_tok, op)
        attrs: dict = {"root": 0, "stages": len(groups["recv"])}
        node = next((x for x in rest[1:] if isinstance(x, tuple) and x[0] == "dict"), None)
        for k, v in (self.attrs(node) if node is not None else {}).items():
            if reduce and k == "reduceOp":
                e = _ENUM.fullmatch(v.text) if isinstance(v, RawAttr) else None
                if e is None or e.group(1) not in REDUCE_OPS:
                    self.fail(op_tok, f"{op}: reduceOp: expected one of sum, max, min, found {v}")
                attrs[k] = e.group(1)
                continue
            m = re.fullmatch(r"\s*(\d+)\s*(?::\s*i\d+)?\s*", str(v))
            if k != "root" or m is None:
                self.fail(op_tok, f"{op}: expected root = K : i32, found {k} = {v}")
            attrs["root"] = int(m.group(1))
        return CommOp((), op, operands, attrs, None, loc=self.loc(first))

    def _async(self, op_tok, results, rest, first) -> CommOp:
        """``%s = pto.comm.build_async_session(%scratch, %ws : TB, !pto.ptr<i8>) {...} ->
        !pto.async_session``, ``%e = pto.comm.tput_async(%dst, %src, %s : ...) ->
        !pto.async_event``, ``%ok = pto.comm.wait_async_event(%e, %s : ...) -> i1``."""
        op = str(op_tok)
        n_ops, ret = _ASYNC[op]
        args = rest[0][1]
        if len(args) != n_ops or any(isinstance(a, tuple) and a[0] == "cgroup" for a in args):
            self.fail(op_tok, f"{op}: expected {n_ops} operands")
        types = next((x for x in rest[1:] if isinstance(x, tuple) and x[0] == "types"), None)
        if types is None or len(types[1]) != n_ops:
            self.fail(op_tok, f"{op}: expected the {n_ops} operands' types after ':'")
        operands = []
        for a, t in zip(args, types[1], strict=True):
            if str(t) in OPAQUE:  # a session or event handle: the op's own values
                v = self.operand(a, None, what=f" in {op}(...)")
                if value_type(v) != str(t):
                    self.mismatch(a, v, str(t))
                operands.append(v)
            else:
                operands.append(self.operand(a, self.type_of(t)))
        attrs: dict = {}
        node = next((x for x in rest[1:] if isinstance(x, tuple) and x[0] == "dict"), None)
        for k, v in (self.attrs(node) if node is not None else {}).items():
            m = re.fullmatch(r"\s*(\d+)\s*(?::\s*i\d+)?\s*", str(v))
            if k not in _SESSION_KEYS or op != "pto.comm.build_async_session" or m is None:
                self.fail(op_tok, f"{op}: unexpected attribute {k} = {v}")
            if k in ("queue_num", "block_bytes", "channel_group_idx"):
                attrs[k] = int(m.group(1))
        names = self.result_names(results)
        arrow = next((j for j, x in enumerate(rest) if getattr(x, "type", None) == "ARROW"), None)
        if len(names) != 1 or arrow is None:
            self.fail(op_tok, f"{op}: expected one result, '%r = {op}(...) -> {ret}'")
        tok = rest[arrow + 1]
        t = str(tok) if str(tok) in OPAQUE else self.type_of(tok)
        if t != ret:
            self.fail(rest[arrow + 1], f"{op}: expected a {ret} result, found {t}")
        v = make_value(names[0][1], t)
        self.define(names[0][0], v)
        return CommOp((v,), op, operands, attrs, None, loc=self.loc(first))
