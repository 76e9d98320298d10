"""Lowering of the synchronisation statements and the cube <-> vector pipes.

* Flags between the pipes of one core: ``pto.set_flag`` / ``pto.wait_flag`` (and their
  ``_dyn`` forms with an event id value), ``pto.record_event`` / ``pto.wait_event`` whose
  endpoints may be op classes (``ENDPOINT_PIPE``), and ``pto.barrier`` /
  ``pto.barrier_sync`` of one pipe.
* Cross-core flags (FFTS): ``pto.sync.set`` / ``pto.sync.wait`` with an ``ffts_mode``,
  ``pto.set_intra_block`` / ``pto.wait_intra_block``, ``pto.set_ffts``; and
  ``pto.syncall``, the barrier of all cores.
* The cube <-> vector pipes (``pto.tpush_to_aiv``, ``pto.tpop_from_aic`` ...) become
  ``PipeOp`` with their named operands and attributes.

Pipes are named by their hardware names (``PIPE_V``, ``PIPE_MTE2`` ...), written bare, as
a string or as ``#pto.pipe<...>``; event ids as ``EVENT_ID0`` .. ``EVENT_ID7``.
"""

from __future__ import annotations

import re

from lark import Token

from sim.frontend.attr_keys import understood_keys, unread_operand_message
from sim.frontend.lower_values import ValueScope, int_token, unquote
from sim.frontend.pto_types import shorten
from sim.frontend.syntax import ENDPOINT_PIPE, SYNC_PIPES, make_value
from sim.isa.opcodes import PIPES
from sim.isa.program import (
    FFTS_MODES,
    SYNCALL_CORE_TYPES,
    SYNCALL_MODES,
    Barrier,
    PipeOp,
    RawAttr,
    SetFfts,
    SetFlag,
    SyncAll,
    SyncSet,
    SyncWait,
    WaitFlag,
)

__all__ = ["SyncLowering"]


class SyncLowering(ValueScope):
    """``s_flag``, ``s_barrier``, ``s_ffts``, ``s_set_ffts``, ``s_syncall`` and ``s_pipe``."""

    def _sync_text(self, elem) -> tuple[str, Token]:
        tok = elem[1]
        text = str(tok)
        if tok.type == "STRING":
            return unquote(text), tok
        if tok.type == "HASH_ATTR":
            m = re.fullmatch(r"#pto\.(pipe|event|pipe_event_type|sync_op_type)<\s*(\w+)\s*>", text)
            if not m:
                self.fail(
                    tok,
                    f"expected #pto.pipe<...>, #pto.event<...> or "
                    f"#pto.pipe_event_type<...>, found '{shorten(text)}'",
                )
            return m.group(2), tok
        return text, tok

    def pipe(self, elem, endpoints: bool) -> str:
        if elem[1].type in ("SSA", "INT"):
            self.fail(elem[1], f"expected a pipe, found '{elem[1]}'")
        name, tok = self._sync_text(elem)
        if name in SYNC_PIPES:
            return name
        if endpoints and name in ENDPOINT_PIPE:
            return ENDPOINT_PIPE[name]
        expected = ", ".join(SYNC_PIPES) + (
            "; or an op class " + ", ".join(ENDPOINT_PIPE) if endpoints else ""
        )
        self.fail(tok, f"unknown pipe '{name}'; expected one of: {expected}")

    def event(self, elem, dynamic: bool):
        tok = elem[1]
        if tok.type == "SSA":
            return self.scalar_operand(tok, role="event id ")
        if tok.type == "INT":
            return int_token(str(tok))
        name, tok = self._sync_text(elem)
        m = re.fullmatch(r"EVENT_ID(\d+)", name)
        if not m:
            self.fail(tok, f"expected an event id EVENT_ID0..EVENT_ID7, found '{name}'")
        return int(m.group(1))

    def s_flag(self, st):
        _, first, c = st
        kw, e1, e2, e3 = c[:4]
        kept = self.kept_attrs(str(kw), c[4:])  # flags read no attribute: each key warns
        kind = kw.type
        endpoints = kind in ("RECORD_EVENT", "WAIT_EVENT")
        src, dst = self.pipe(e1, endpoints), self.pipe(e2, endpoints)
        event = self.event(e3, kind.endswith("_DYN"))
        cls = SetFlag if kind in ("SET_FLAG", "SET_FLAG_DYN", "RECORD_EVENT") else WaitFlag
        return cls(src, dst, event, loc=self.loc(first), attrs=kept)

    def s_barrier(self, st) -> Barrier:
        _, first, c = st
        kept = self.kept_attrs(str(c[0]), c)
        return Barrier(self.pipe(c[1], True), loc=self.loc(first), attrs=kept)

    def s_barrier_sync(self, st) -> Barrier:
        _, first, c = st
        kept = self.kept_attrs(str(c[0]), c)
        return Barrier(self.pipe(c[1], True), loc=self.loc(first), attrs=kept)

    # --- cross-core flags (FFTS) and the all-core barrier -------------------------------------

    def s_ffts(self, st):
        """``pto.sync.set|wait <P>, flag [{ffts_mode = m : i32}]``, ``pto.set_intra_block``
        / ``pto.wait_intra_block <P>, flag``."""
        _, first, c = st
        kw, pipe_elem, flag_elem = c[:3]
        pipe = self.pipe(pipe_elem, False)
        if pipe not in PIPES:
            self.fail(
                pipe_elem[1],
                f"{kw}: expected a pipe of a unit ({', '.join(PIPES)}), found '{pipe}'",
            )
        tok = flag_elem[1]
        if tok.type == "INT":
            flag = int_token(str(tok))
        elif tok.type == "SSA":
            flag = self.scalar_operand(tok, role="flag id ")
        else:
            self.fail(
                tok,
                f"{kw}: expected a flag id (an integer 0..15 or a %value), "
                f"found '{shorten(str(tok))}'",
            )
        mode = None
        intra = kw.type in ("SET_INTRA_BLOCK", "WAIT_INTRA_BLOCK")
        node = c[3] if len(c) > 3 else None
        for key_tok, val in node[2] if node else ():
            if str(key_tok) != "ffts_mode" or intra:
                self.fail(
                    key_tok,
                    f"{kw}: unknown attribute '{key_tok}'"
                    + ("" if intra else "; expected ffts_mode"),
                )
            mode = self._int_attr(key_tok, val)
            if mode not in FFTS_MODES:
                self.fail(
                    key_tok,
                    f"{kw}: ffts_mode: expected 0 (all cores of one type), 1 "
                    f"(the vector units of a core) or 2 (cube <-> vector of a "
                    f"core), found {mode}",
                )
        cls = SyncSet if kw.type in ("SYNC_SET", "SET_INTRA_BLOCK") else SyncWait
        return cls(pipe, flag, mode, intra, loc=self.loc(first))

    def _int_attr(self, key_tok, val) -> int:
        """An integer attribute value, typed (``2 : i32``) or not."""
        parts = val[1] if val is not None else []
        lit = parts[0] if parts else None
        if not (isinstance(lit, tuple) and lit[0] == "lit" and lit[1].type == "INT"):
            self.fail(key_tok, f"{key_tok}: expected an integer")
        return int_token(str(lit[1]))

    def s_set_ffts(self, st) -> SetFfts:
        _, first, c = st
        value, t = c[1], c[-1]
        kept = self.kept_attrs("pto.set_ffts", c)
        return SetFfts(self.operand(value, self.type_of(t)), loc=self.loc(first), attrs=kept)

    def s_syncall(self, st) -> SyncAll:
        """``pto.syncall(ops : types) mode = #pto.sync_all_mode<M>, core_type =
        #pto.sync_core_type<T>``."""
        _, first, c = st
        ops = next((x for x in c if isinstance(x, tuple) and x[0] == "ops"), None)
        types = next((x for x in c if isinstance(x, tuple) and x[0] == "types"), None)
        operands = self.typed_list(ops, types, first, "pto.syncall")
        if len(operands) > 3:
            self.fail(first, f"pto.syncall: expected at most 3 operands, found {len(operands)}")
        found = {}
        enums = {
            "mode": ("sync_all_mode", SYNCALL_MODES),
            "core_type": ("sync_core_type", SYNCALL_CORE_TYPES),
        }
        for x in c:
            if not (isinstance(x, tuple) and x[0] == "kv"):
                continue
            key, val = str(x[1]), str(x[2])
            if key not in enums:
                self.fail(x[1], f"pto.syncall: unknown key '{key}'; expected mode, core_type")
            if key in found:
                self.fail(x[1], f"pto.syncall: '{key}' given twice")
            kind, allowed = enums[key]
            m = re.fullmatch(rf"#pto\.{kind}<\s*(\w+)\s*>", val)
            if not m or m.group(1) not in allowed:
                self.fail(
                    x[2],
                    f"pto.syncall: {key}: expected #pto.{kind}<"
                    f"{'|'.join(allowed)}>, found '{shorten(val)}'",
                )
            found[key] = m.group(1)
        for key in enums:
            if key not in found:
                self.fail(first, f"pto.syncall: expected '{key} = ...', found none")
        kept = self.kept_attrs("pto.syncall", c)
        return SyncAll(found["mode"], found["core_type"], operands, loc=self.loc(first), attrs=kept)

    # --- cube <-> vector pipes -----------------------------------------------------------------

    def s_pipe(self, st) -> PipeOp:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        op = c[i]
        attrs: dict = {}
        operands = []
        ret = None
        for part in c[i + 1 :]:
            if part[0] == "dict":
                values = self.attrs(part)
                for key_tok, _ in part[2]:
                    k = unquote(str(key_tok)) if key_tok.type == "STRING" else str(key_tok)
                    if k in attrs:
                        self.fail(key_tok, f"attribute '{k}' given twice")
                    attrs[k] = self._pipe_attr(op, key_tok, k, values[k])
                self.check_keys(str(op), part)
            elif part[0] == "paren":
                for name_tok, val, ty in part[1] or []:
                    t = self.type_of(ty) if ty is not None else None
                    v = self.operand(val, t)
                    if name_tok is not None:
                        self.warn_at(name_tok, unread_operand_message(str(op), str(name_tok)))
                    operands.append((str(name_tok), v) if name_tok is not None else v)
            elif part[0] == "ret":
                if ret is not None:
                    self.fail(part[1], f"{op}: result type given twice")
                ret = self.type_of(part[1])
        names = self.result_names(results)
        if len(names) > 1:
            self.fail(first, f"{op} has at most one result")
        res = []
        if names:
            if ret is None:
                self.fail(names[0][0], f"{op}: a result needs its type ('-> T')")
            v = make_value(names[0][1], ret)
            self.define(names[0][0], v)
            res.append(v)
        elif ret is not None:
            self.fail(op, f"{op}: '-> T' without a result name")
        return PipeOp(tuple(res), str(op), tuple(operands), attrs, loc=self.loc(first))

    def _pipe_attr(self, op, key_tok, key: str, v):
        """An understood key of a FIFO op, checked: a value the engine would read as
        something else (a split of 3, a slot size of -1, an id that is no integer) makes
        the op ambiguous and is an error. ``N : i32`` is the integer N."""
        rule = _PIPE_VALUES.get(key)
        if rule is None or key not in understood_keys(str(op)):
            return v
        if isinstance(v, RawAttr):
            m = _TYPED_INT.fullmatch(v.text)
            if m:
                v = int_token(m.group(1))
        ok, expected = rule
        if not ok(v):
            self.fail(
                key_tok,
                f"{op}: {key}: expected {expected}, found "
                f"{shorten(str(v).lower() if isinstance(v, bool) else str(v))}",
            )
        return v


_TYPED_INT = re.compile(r"([-+]?(?:0x[0-9a-fA-F]+|\d+))\s*:\s*(?:i\d+|index)")


def _int_in(lo: int, hi: int | None = None):
    return lambda v: type(v) is int and v >= lo and (hi is None or v <= hi)


# understood keys of the FIFO ops (sim.frontend.attr_keys) -> (check, what is expected)
_PIPE_VALUES = {
    "id": (_int_in(0), "a FIFO id (an integer >= 0)"),
    "split": (_int_in(0, 2), "0 (whole tile), 1 (rows halved) or 2 (columns halved)"),
    "dir_mask": (_int_in(1, 3), "1 (cube -> vector), 2 (vector -> cube) or 3 (both)"),
    "slot_size": (_int_in(1), "the bytes of a slot (an integer > 0)"),
    "size": (_int_in(1), "the buffer's bytes (an integer > 0)"),
    "base": (_int_in(0), "a byte address (an integer >= 0)"),
    "auto": (lambda v: type(v) is bool, "true or false"),
    "name": (lambda v: type(v) is str, 'a string ("name")'),
}
