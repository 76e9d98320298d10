"""Lowering of the constructs real compilers emit around the tile ops (instructions-more.md
§3.7-§3.10): fences, regions that run once, re-typing casts, pointer arithmetic and
valid-shape reads.

* ``pto.fence.barrier_all #pto.fence_scope<gm|all>`` — PTOAS lowers it, in a vector
  kernel (a ``kernel_kind<vector>`` function or a ``pto.section.vector`` body), to
  ``pipe_barrier(PIPE_ALL); dsb(DSB_DDR)``, elsewhere to ``pipe_barrier`` on MTE2, MTE3 and
  FIX then ``dsb(DSB_DDR)`` (§3.9): those barriers, then a ``Dsb`` marked with the fence's
  scope. The ``dsb`` latency is [silent] in the reference: it costs the target's ``[sync]
  dsb_cycles`` (an ASSUMPTION), and the first fence of a file says so in a warning.
  ``local_memory`` scope has no lowering (the PTOAS conversion fails): refused.
* ``pto.dsb "DDR"`` (``"UB"``, ``"ALL"``, ``"SEQ"``) — the data barrier alone (§3.9): a
  ``Dsb``.
* ``pto.cmo.cacheinvalid %v single_cache_line`` / ``pto.cmo.cacheinvalid all
  #pto.address_space<gm>`` — ``dcci`` of the scalar data cache's line of a GM view or
  pointer, or of the whole cache (§3.9; ``sim.isa.memorder``): a ``CacheInvalid``. A type
  after ``:`` is checked against the operand's.
* ``scf.execute_region`` and ``pto.fusion_region`` — run their single region once, in
  place (§3.10): the body is inlined and the results name the values its terminator
  (``scf.yield`` / ``pto.yield``) gives. The fused form's own timing (shared loops,
  removed load/store pairs) is [silent]: the ops are timed one by one.
* ``builtin.unrealized_conversion_cast %x : A to B`` — bit-preserving re-typing (§3.10):
  between scalars of one width an ``arith.bitcast``; a value of the same type is the value
  itself; any other bridge (memref <-> pointer or tile) is compiler-internal and refused.
* ``%q = pto.addptr %p, %off : !pto.ptr<T> -> !pto.ptr<T>`` — ``q = p + off`` elements of
  T (§3.8): a ``ScalarOp`` the interpreter resolves into the same GM array at an element
  offset; cost 0.
* ``%r, %c = pto.get_validshape %t : TB`` — the tile's run-time valid rows and cols (§3.7),
  as ``index`` values; cost 0.
* ``pto.set_quant_vector(%fp : TB)`` / ``pto.set_quant_scalar(%s : f32)`` — set up the
  fixpipe quantisation of a later push (§3.2): one 1-cycle config write on PIPE_S. The
  quantisation itself is not modelled: the engine says so in a warning.
"""

from __future__ import annotations

from collections.abc import Callable

from lark import Token

from sim.frontend.lower_values import ValueScope
from sim.frontend.pto_types import shorten
from sim.frontend.syntax import format_type, value_type
from sim.isa.memorder import CACHE_LINE, DSB_KINDS, CacheInvalid, Dsb
from sim.isa.program import Arith, Barrier, Const, GmPtr, PartView, Scalar, ScalarOp, TensorView
from sim.isa.tile import Tile

__all__ = ["ExtraLowering", "EXTRA_SIMPLE_OPS"]

# ops written like a scalar op (``%r = name args : types``) that are lowered here
EXTRA_SIMPLE_OPS = ("builtin.unrealized_conversion_cast", "pto.addptr", "pto.get_validshape")
_FENCE_SCOPES = ("gm", "all")
_REGION_KW = ("SCF_EXECUTE_REGION", "FUSION_REGION")


def _width(t: str) -> int | None:
    """Bit width of a scalar type name (``i32``, ``ui16``, ``f16``, ``index``...)."""
    if t == "index":
        return 64
    if t in ("bf16", "f16"):
        return 16
    digits = "".join(ch for ch in t if ch.isdigit())
    return int(digits) if digits and t[0] in "iuf" else None


class ExtraLowering(ValueScope):
    """``s_fence``, ``s_exec_region`` and the ``EXTRA_SIMPLE_OPS`` of ``s_simple``."""

    vector_body: bool = False  # inside a vector kernel or a pto.section.vector body
    fence_warned: bool = False
    block: Callable[..., tuple]  # sim.frontend.parse: a region's statements

    def s_fence(self, st) -> list:
        _, first, c = st
        scope = next((x for x in c[1:] if isinstance(x, Token) and x.type == "HASH_ATTR"), None)
        name = "gm"
        if scope is not None:
            text = str(scope)
            inner = text[text.find("<") + 1 : -1].strip() if "<" in text else ""
            if not text.startswith("#pto.fence_scope<") or inner not in (
                *_FENCE_SCOPES,
                "local_memory",
            ):
                self.fail(
                    scope,
                    f"pto.fence.barrier_all: expected #pto.fence_scope<gm> or <all>, "
                    f"found '{shorten(text)}'",
                )
            name = inner
        if name == "local_memory":
            self.fail(
                scope,
                "unsupported: pto.fence.barrier_all #pto.fence_scope<local_memory> has no "
                "lowering (PTOAS refuses it; instructions-more.md §3.9)",
            )
        self.check_dicts("pto.fence.barrier_all", c)
        if not self.fence_warned:
            self.fence_warned = True
            self.warn_at(
                first,
                "pto.fence.barrier_all runs as its pipe barriers, then the dsb(DSB_DDR) "
                "after them for the target's [sync] dsb_cycles (an assumption: the "
                "reference gives no latency)",
            )
        loc = self.loc(first)
        dsb = Dsb("DDR", name, loc=loc)
        if self.vector_body:
            return [Barrier("PIPE_ALL", name, loc=loc), dsb]
        return [Barrier(p, name, loc=loc) for p in ("PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX")] + [dsb]

    def s_dsb(self, st) -> Dsb:
        """``pto.dsb "DDR"``: a data barrier of the scalar unit (§3.9)."""
        _, first, c = st
        kind = str(c[1])[1:-1]
        if kind not in DSB_KINDS:
            self.fail(c[1], f"pto.dsb: expected one of {', '.join(DSB_KINDS)}, found {c[1]}")
        self.check_dicts("pto.dsb", c)
        return Dsb(kind, loc=self.loc(first))

    def s_cmo(self, st) -> CacheInvalid:
        """``pto.cmo.cacheinvalid %v single_cache_line [: T]`` or ``pto.cmo.cacheinvalid
        all #pto.address_space<gm>``: ``dcci`` of one line or of the whole cache."""
        _, first, c = st
        op = "pto.cmo.cacheinvalid"
        what, rest = c[1], c[2:]
        word = next((x for x in rest if isinstance(x, Token) and x.type == "NAME"), None)
        space = next((x for x in rest if isinstance(x, Token) and x.type == "HASH_ATTR"), None)
        ty = next(
            (x for x in rest if isinstance(x, Token) and x is not word and x is not space), None
        )
        self.check_dicts(op, c)
        loc = self.loc(first)
        if what.type == "NAME":
            if str(what) != "all" or word is not None or ty is not None:
                self.fail(
                    what, f"{op}: expected '%view {CACHE_LINE}' or 'all #pto.address_space<gm>'"
                )
            text = "#pto.address_space<gm>" if space is None else str(space).replace(" ", "")
            if text != "#pto.address_space<gm>":
                self.fail(
                    space, f"{op} all: expected #pto.address_space<gm>, found {shorten(text)}"
                )
            return CacheInvalid(None, "gm", loc=loc)
        if space is not None:
            self.fail(space, f"{op}: an address space goes with 'all', not with a view")
        if word is not None and str(word) != CACHE_LINE:
            self.fail(word, f"{op}: expected {CACHE_LINE} after the view, found {word}")
        v = self.operand(what, self.type_of(ty) if ty is not None else None)
        if not isinstance(v, (PartView, TensorView, GmPtr)):
            self.fail(
                what, f"{op}: expected a GM view or pointer, found {format_type(value_type(v))}"
            )
        return CacheInvalid(v, loc=loc)

    def s_exec_region(self, st) -> list:
        """``[%r =] scf.execute_region [-> T] { ... scf.yield ... }`` and
        ``[%r =] pto.fusion_region { ... pto.yield(...) ... } [: T]``: the body, inlined."""
        _, first, c = st
        kw = next(x for x in c if isinstance(x, Token) and x.type in _REGION_KW)
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        region = next(x for x in c if isinstance(x, tuple) and x[0] == "region")
        types_node = next((x for x in c if isinstance(x, tuple) and x[0] == "types"), None)
        rtypes = self.types(types_node) if types_node is not None else []
        names = self.result_names(results, len(rtypes), str(kw)) if results else []
        if results is not None and not rtypes:
            self.fail(first, f"{kw} with results needs their types")
        self.check_dicts(str(kw), c)
        body = list(self.block(region, yields=rtypes))
        yielded = body.pop().values if rtypes else ()
        for (tok, n), v in zip(names, yielded, strict=True):
            for scope in self.scopes:
                if n in scope:
                    self.fail(tok, f"redefinition of SSA value '%{n}'")
            self.scopes[-1][n] = v  # the result is the yielded value itself
        return body

    def s_quant(self, st) -> ScalarOp:
        """``pto.set_quant_vector(%fp : TB) {id = N}`` (a Scaling tile) and
        ``pto.set_quant_scalar(%s : f32) {id = N}`` (instructions-more.md §3.2): the
        fixpipe's quantisation parameters, one config write on the scalar unit."""
        _, first, c = st
        kw = c[0]
        ops = next(x for x in c if isinstance(x, tuple) and x[0] == "ops")
        types = next(x for x in c if isinstance(x, tuple) and x[0] == "types")
        vals = self.typed_list(ops, types, kw, str(kw))
        attrs_node = next((x for x in c if isinstance(x, tuple) and x[0] == "dict"), None)
        attrs = self.attrs(attrs_node)
        vector = kw.type == "SET_QUANT_VECTOR"
        if len(vals) != 1:
            self.fail(kw, f"{kw} takes one operand, found {len(vals)}")
        (v,) = vals
        if vector and not (isinstance(v, Tile) and v.loc.value == "scaling"):
            self.fail(kw, f"{kw}: the operand must be a Scaling tile (loc=scaling), found {v}")
        if not vector and not (isinstance(v, (Scalar, Const)) and v.type == "f32"):
            self.fail(kw, f"{kw}: the operand must be an f32 scalar, found {v}")
        return ScalarOp((), str(kw), (v,), attrs, loc=self.loc(first))

    def extra_simple(self, st):
        _, first, c = st
        results, op, args = c[0], c[1], c[2][1]
        name = str(op)
        sig = next((x for x in c[3:] if x[0] == "sig"), None)
        self.check_dicts(name, [x for x in c[3:] if x[0] == "dict"])
        if sig is None:
            self.fail(op, f"'{name}' needs its types (': T ...')")
        assert sig is not None  # fail raised
        types = self.types(sig[1][0])
        to_types = self.types(sig[1][2]) if len(sig[1]) > 2 else []
        vals = [self.lookup(a) if isinstance(a, Token) and a.type == "SSA" else a for a in args]
        if name == "pto.get_validshape":
            return self._get_validshape(first, results, op, vals, types)
        if name == "pto.addptr":
            return self._addptr(first, results, op, args, vals, types, to_types)
        return self._cast(first, results, op, vals, types, to_types)

    def _get_validshape(self, first, results, op, vals, types):
        if len(vals) != 1 or not isinstance(vals[0], Tile):
            self.fail(op, "pto.get_validshape takes one tile")
        tile = vals[0]
        if types and value_type(tile) != types[0]:
            self.mismatch(op, tile, types[0])
        names = self.result_names(results, 2, "pto.get_validshape")
        res = []
        for tok, n in names:
            r = Scalar(n, "index")
            self.define(tok, r)
            res.append(r)
        return ScalarOp(tuple(res), "pto.get_validshape", (tile,), loc=self.loc(first))

    def _addptr(self, first, results, op, args, vals, types, to_types):
        if len(vals) != 2 or not isinstance(vals[0], GmPtr):
            self.fail(op, "pto.addptr takes a !pto.ptr and an element offset")
        ptr = vals[0]
        offset = self.scalar_operand(args[1], role="offset ")
        want = types[0] if types else value_type(ptr)
        if value_type(ptr) != want:
            self.mismatch(args[0], ptr, want)
        if to_types and to_types[0] != want:
            self.fail(
                op,
                f"pto.addptr: the result type must be the pointer's, "
                f"{format_type(want)}, found {format_type(to_types[0])}",
            )
        ((tok, n),) = self.result_names(results, 1, "pto.addptr")
        res = GmPtr(n, ptr.dtype)
        self.define(tok, res)
        return ScalarOp((res,), "pto.addptr", (ptr, offset), loc=self.loc(first))

    def _cast(self, first, results, op, vals, types, to_types):
        name = str(op)
        if len(vals) != 1 or not to_types or len(to_types) != 1:
            self.fail(op, f"'{name}' re-types one value: ': A to B'")
        ((tok, n),) = self.result_names(results, 1, name)
        x, src_t, dst_t = vals[0], types[0], to_types[0]
        if isinstance(x, Token) or isinstance(x, tuple):
            self.fail(op, f"'{name}' takes a value (%name)")
        if value_type(x) != src_t:
            self.mismatch(op, x, src_t)
        if src_t == dst_t:  # dropped by the lowering
            self.scopes[-1][n] = x
            return []
        ws, wd = (
            _width(src_t) if isinstance(src_t, str) else None,
            _width(dst_t) if isinstance(dst_t, str) else None,
        )
        if ws is None or wd is None or ws != wd or not isinstance(x, Scalar):
            self.fail(
                op,
                f"unsupported: {name} from {format_type(src_t)} to {format_type(dst_t)} "
                f"(only scalars of one bit width are re-typed; memref / pointer / tile "
                f"bridges are compiler-internal)",
            )
        res = Scalar(n, dst_t)
        self.define(tok, res)
        return Arith(res, "arith.bitcast", (x,), loc=self.loc(first))
