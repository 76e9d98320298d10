"""PTO IR text (``.pto``) -> the program IR of ``sim.isa.program``.

Two stages:

1. ``sim.frontend.grammar``: ``grammar.lark`` (LALR, its own contextual lexer) turns the
   text into light tagged tuples; no parse tree is built. Each ``!pto.kind<...>`` type is
   one token, read by ``sim.frontend.pto_types`` once per distinct text.
2. ``_Lowering`` walks the tuples with a scope of SSA names and builds the IR nodes. It is
   put together from one class per family of statements, each on ``ValueScope``
   (``sim.frontend.lower_values``: scopes, typed operands, literals, attributes):

   * ``lower_ops``      tile instructions (DPS form), ``pto.tgetval``, ``arith``;
   * ``lower_control``  ``scf.for`` / ``scf.if`` / ``scf.yield``, calls, return, sections;
   * ``lower_memory``   tile buffers, tensor and partition views, subviews, reshapes,
     valid shapes, scalar loads / stores and getters;
   * ``lower_sync``     flags, barriers, cross-core flags, ``pto.syncall``, pipes.

   This module holds what ties them together: the module and its aliases, functions and
   their signatures, regions (one scope each, bounded by ``MAX_NESTING``), where each
   statement ``(kind, token, children)`` goes to the ``s_<kind>`` method of its family;
   and the reporting of syntax errors the parser raises.

Every mistake is a ``ParseError`` located at the token it concerns.
"""

from __future__ import annotations

import gc
import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from sim.base.errors import UserError
from sim.frontend.diagnostics import ParseError, remember_source, unmarked
from sim.frontend.grammar import pto_parser
from sim.frontend.lower_comm import CommLowering
from sim.frontend.lower_control import ControlLowering
from sim.frontend.lower_extra import ExtraLowering
from sim.frontend.lower_memory import GM_MEMREF_VIEW, MemoryLowering, gm_memref_views
from sim.frontend.lower_ops import OpLowering, is_supported_op, opcode_of
from sim.frontend.lower_sync import SyncLowering
from sim.frontend.lower_values import symbol_name
from sim.frontend.pto_types import memref_gm, shorten
from sim.frontend.syntax import format_type, make_value, value_type
from sim.frontend.targets import target_from_attrs
from sim.isa.program import Function, Program, Return, Yield
from sim.isa.tile import BLayout

__all__ = ["parse_text", "MAX_NESTING"]

# Regions (scf.for / scf.if bodies, sections) nest at most this deep. Every pass over the
# program (this builder, the verifier, the interpreter, the printer) walks regions
# recursively; real kernels nest a handful deep, and this bound keeps every pass well
# inside Python's recursion limit.
MAX_NESTING = 64

# Op keywords of grammar.lark: a syntax error is reported at the op it happened in.
_OP_KEYWORDS = {
    "FUNC_FUNC",
    "FUNC_CALL",
    "CALL",
    "FUNC_RETURN",
    "RETURN",
    "SCF_FOR",
    "SCF_IF",
    "SCF_YIELD",
    "ALLOC_TILE",
    "MAKE_TENSOR_VIEW",
    "PARTITION_VIEW",
    "SUBVIEW",
    "SUBSET",
    "TRESHAPE",
    "SET_VALIDSHAPE",
    "LOAD_SCALAR",
    "STORE_SCALAR",
    "GET_BLOCK_IDX",
    "GET_BLOCK_NUM",
    "GET_SUBBLOCK_IDX",
    "GET_SUBBLOCK_NUM",
    "GET_TENSOR_VIEW_DIM",
    "SECTION_CUBE",
    "SECTION_VECTOR",
    "SET_FLAG",
    "WAIT_FLAG",
    "SET_FLAG_DYN",
    "WAIT_FLAG_DYN",
    "RECORD_EVENT",
    "WAIT_EVENT",
    "BARRIER",
    "BARRIER_SYNC",
    "CMO_CACHEINVALID",
    "DSB",
    "RESERVE_BUFFER",
    "IMPORT_RESERVED_BUFFER",
    "AIC_INITIALIZE_PIPE",
    "AIV_INITIALIZE_PIPE",
    "TPUSH_TO_AIV",
    "TPUSH_TO_AIC",
    "TPOP_FROM_AIC",
    "TPOP_FROM_AIV",
    "TFREE_FROM_AIC",
    "TFREE_FROM_AIV",
    "TALLOC_TO_AIV",
    "TALLOC_TO_AIC",
    "ALLOC_MULTI_TILE",
    "MULTI_TILE_GET",
    "MEMREF_ALLOC",
    "MODULE",
    "SYNC_SET",
    "SYNC_WAIT",
    "SET_FFTS",
    "SYNCALL",
    "SET_INTRA_BLOCK",
    "WAIT_INTRA_BLOCK",
    "SCF_EXECUTE_REGION",
    "FUSION_REGION",
    "PTO_YIELD",
    "FENCE_BARRIER_ALL",
    "SET_QUANT_VECTOR",
    "SET_QUANT_SCALAR",
}
_UNSUPPORTED_TYPES = {"memref", "vector", "tensor", "complex", "tuple", "dense"}
# terminals as an "expected ..." message names them
_FRIENDLY = {
    "SSA": "a value (%name)",
    "OPNAME": "an op name",
    "NAME": "a name",
    "PTO_TYPE": "a type",
    "TYPE_ALIAS": "a type alias",
    "INT": "an integer",
    "FLOAT": "a float",
    "STRING": "a string",
    "SYMBOL": "a symbol (@name)",
    "HASH_ATTR": "an attribute (#...)",
    "$END": "end of input",
    "BUILTIN": "a builtin attribute or type",
    "LOCATION": "a location",
}


class _Lowering(
    OpLowering, ControlLowering, MemoryLowering, SyncLowering, ExtraLowering, CommLowering
):
    """Tuples of ``grammar.lark`` -> ``Program``: one lowering per parse."""

    # --- program -----------------------------------------------------------------------------

    def program(self, tree) -> Program:
        _, items = tree
        module_attrs: dict = {}
        funcs = []
        for item in items:
            if item[0] == "alias":
                name = str(item[1])
                if name in self.aliases:
                    self.fail(item[1], f"type alias '{name}' defined twice")
                self.aliases[name] = self.type_of(item[2])
            elif item[0] == "attr_alias":
                name = str(item[1])
                if name in self.attr_aliases or "<" in name:
                    self.fail(
                        item[1],
                        f"attribute alias '{shorten(name)}' defined twice"
                        if "<" not in name
                        else f"unexpected '{shorten(name)}'",
                    )
                value = item[2]
                parts = value[1]
                if (
                    len(parts) == 1
                    and isinstance(parts[0], Token)
                    and str(parts[0]) in self.attr_aliases
                ):  # an alias of an alias
                    value = self.attr_aliases[str(parts[0])]
                self.attr_aliases[name] = value
            elif item[0] == "module":
                module_attrs = self.attrs(item[2])
                self.check_keys("module", item[2])
                try:
                    arch = target_from_attrs(module_attrs)
                except UserError:  # reported when a target is chosen
                    arch = None
                self.left_blayout = (
                    {"a2a3": BLayout.ROW_MAJOR, "a5": BLayout.COL_MAJOR}.get(arch) if arch else None
                )
                funcs += item[3]
            else:
                funcs.append(item)
        if not funcs:
            at = items[-1][1] if items and items[-1][0] == "module" else 0
            self.fail(at, "the module defines no function")
        # signatures first: calls may name functions defined later
        heads = [self.func_head(f) for f in funcs]
        functions = [self.func_body(f, head) for f, head in zip(funcs, heads, strict=True)]
        self.check_calls()
        return Program(
            tuple(functions),
            _entry(functions),
            module_attrs,
            warnings=tuple(w for _, _, w in sorted(self.warnings)),
        )

    def func_head(self, f):
        c = f[1]
        tok = c[0]
        private = False
        sym = None
        args_node = fres = attrs_node = region = None
        for x in c[1:]:
            if isinstance(x, Token):
                if x.type == "SYMBOL":
                    sym = x
            elif x[0] == "vis":
                private = x[1].type == "PRIVATE"
            elif x[0] == "args":
                args_node = x
            elif x[0] == "fres":
                fres = x
            elif x[0] == "dict":
                attrs_node = x
            elif x[0] == "region":
                region = x
        name = symbol_name(sym)
        if name in self.signatures:
            self.fail(sym, f"redefinition of function @{name}")
        args = []
        arg_toks = []
        seen = set()
        prologue: list = []  # the views of GM memref arguments (memref-era kernels)
        for i, (ssa, ty, arg_attrs) in enumerate(args_node[1] if args_node else []):
            t = self.type_of(ty)
            self.check_keys("func argument", arg_attrs)
            if ssa is None:
                if region is not None:
                    self.fail(
                        ty,
                        f"argument {i} of @{name} needs a name (%name: type) "
                        f"when the function has a body",
                    )
                arg_name, at = f"arg{i}", ty
            else:
                arg_name, at = str(ssa)[1:], ssa
            if arg_name in seen:
                self.fail(at, f"redefinition of SSA value '%{arg_name}'")
            seen.add(arg_name)
            gm = memref_gm(str(ty)) if getattr(ty, "type", "") == "BUILTIN" else None
            if gm is not None:
                gm_dt, gm_shape, gm_strides = gm
                ptr, views = gm_memref_views(arg_name, gm_dt, gm_shape, gm_strides, self.loc(ty))
                args.append(ptr)
                prologue += views
            else:
                args.append(make_value(arg_name, t))
            arg_toks.append(at)
        result_types = self.types(("types", fres[1])) if fres else []
        self.signatures[name] = (tuple(value_type(a) for a in args), tuple(result_types))
        self.check_keys("func.func", attrs_node)
        return dict(
            tok=tok,
            sym=sym,
            name=name,
            private=private,
            args=args,
            arg_toks=arg_toks,
            result_types=result_types,
            attrs=self.attrs(attrs_node),
            region=region,
            prologue=prologue,
        )

    def func_body(self, f, head) -> Function:
        self.scopes = [{}]
        self.vector_body = "vector" in str(head["attrs"].get("pto.kernel_kind", ""))
        self.nesting = 0
        for a, _ in zip(head["args"], head["arg_toks"], strict=True):
            self.scopes[-1][a.name] = a
        for st in head["prologue"]:  # a GM memref argument's name is its whole window
            if st.result.name.endswith(GM_MEMREF_VIEW):
                self.scopes[-1][st.result.name.removesuffix(GM_MEMREF_VIEW)] = st.result
        body = ()
        if head["region"] is not None:
            body = self.block(
                head["region"], func_results=head["result_types"], func_name=head["name"]
            )
        body = (*head["prologue"], *body)
        return Function(
            head["name"],
            tuple(head["args"]),
            body,
            private=head["private"],
            result_types=tuple(format_type(t) for t in head["result_types"]),
            attrs=head["attrs"],
        )

    def block(self, region, *, yields=None, func_results=None, func_name="") -> tuple:
        """Statements of a region (its own scope). ``yields``: types scf.yield must give
        (None: no scf.yield allowed); ``func_results``: a function body (return allowed)."""
        _, lbrace, stmts, rbrace = region
        if self.nesting > MAX_NESTING:  # a function body is level 0
            self.fail(
                lbrace,
                f"regions nested {self.nesting} deep: expected at most "
                f"{MAX_NESTING} nested scf.for / scf.if / section bodies",
            )
        self.scopes.append({})
        self.nesting += 1
        out: list = []
        try:
            n = len(stmts)
            for i, st in enumerate(stmts):
                kind = st[0]
                last = i == n - 1
                if kind == "yield":
                    y = self.yield_stmt(st, yields)
                    if not last:
                        self.fail(st[1], "scf.yield must be the last statement of its region")
                    if y.values:
                        out.append(y)
                    continue
                if kind == "return":
                    r = self.return_stmt(st, func_results, func_name)
                    if not last:
                        self.fail(st[1], "return must be the last statement of the function")
                    if r.values:
                        out.append(r)
                    continue
                got = getattr(self, f"s_{kind}")(st)
                if type(got) is list:  # an inlined region, a fence's barriers
                    out.extend(got)
                else:
                    out.append(got)
            if yields and (not out or not isinstance(out[-1], Yield)):
                self.fail(
                    rbrace,
                    f"this region must end with scf.yield of {len(yields)} "
                    f"value{'s' * (len(yields) != 1)}",
                )
            if func_results and (not out or not isinstance(out[-1], Return)):
                self.fail(
                    rbrace,
                    f"function @{func_name} must end with return of "
                    f"{len(func_results)} value{'s' * (len(func_results) != 1)}",
                )
        finally:
            self.scopes.pop()
            self.nesting -= 1
        return tuple(out)

    # --- syntax errors -------------------------------------------------------------------------

    def syntax_error(self, e: UnexpectedInput) -> ParseError:
        stack = []
        ip = getattr(e, "interactive_parser", None)
        if ip is not None:
            stack = ip.parser_state.value_stack
        op = None
        for item in reversed(stack):
            if isinstance(item, Token) and (item.type == "OPNAME" or item.type in _OP_KEYWORDS):
                op = item
                break
        prev = stack[-1] if stack else None
        if op is not None and op.type == "OPNAME" and opcode_of(str(op)) is not None:
            after = stack[[i for i, x in enumerate(stack) if x is op][-1] + 1 :]
            nxt = after[0] if after else getattr(e, "token", None)
            if isinstance(nxt, tuple) or isinstance(nxt, Token) and nxt.type in ("SSA", "LPAR"):
                return self._err(
                    op,
                    f"unsupported: the level-1 SSA form of '{op}' (not used by "
                    f"real kernels); write {op} ins(...) outs(...)",
                )
        if isinstance(e, UnexpectedCharacters):
            pos = e.pos_in_stream or 0  # set by the lexer that raised it
            ch = self.text[pos] if pos < len(self.text) else ""
            at = pos
            if op is not None and op.type == "OPNAME" and not is_supported_op(str(op)):
                return self._err(op, f"unsupported op '{op}'")
            if ch == "^":
                msg = "unsupported: MLIR blocks (^bb labels) are not used by tile kernels"
            else:
                msg = f"unexpected character {ch!r}"
            return self._err(at, msg)
        tok = getattr(e, "token", None)
        if op is not None and str(op) == "pto.tscatter" and getattr(tok, "type", "") == "LBRACE":
            return self._err(
                tok,
                "unsupported: the mask form of pto.tscatter (maskPattern, a row / col "
                "axis) is not modelled; the index form ins(%src, %indices) is",
            )
        if tok is None or tok.type == "$END" or isinstance(e, UnexpectedEOF):
            if op is not None and op.type == "OPNAME" and not is_supported_op(str(op)):
                return self._err(op, f"unsupported op '{op}'")
            return self._err(len(self.text.rstrip()), "unexpected end of input" + self._expected(e))
        if tok.type == "STRING" and re.fullmatch(r'"[A-Za-z_]\w*\.[\w.]+"', str(tok)):
            return self._err(
                tok,
                f"unsupported: generic MLIR operation form {tok}(...); "
                f"write the op in its custom form",
            )
        if isinstance(prev, Token) and prev.type == "NAME" and str(prev) in _UNSUPPORTED_TYPES:
            return self._err(prev, f"unsupported type '{prev}<...>'")
        if tok.type == "NAME" and str(tok) in _UNSUPPORTED_TYPES:
            return self._err(tok, f"unsupported type '{tok}<...>'")
        if op is not None and op.type == "OPNAME" and not is_supported_op(str(op)):
            return self._err(op, f"unsupported op '{op}'")
        if tok.type == "OPNAME" and not is_supported_op(str(tok)):
            return self._err(tok, f"unsupported op '{tok}'")
        expected = set(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())
        if expected == {"ARROW"} and op is not None:
            # the result type is missing: name the statement, not the token after it
            return self._err(
                op,
                f"'{op}': expected '->' and the result type after its "
                f"operand types, found '{shorten(str(tok), 40)}'",
            )
        return self._err(tok, f"unexpected '{shorten(str(tok), 40)}'" + self._expected(e))

    def _expected(self, e) -> str:
        names = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())
        if not names:
            return ""
        shown = []
        for n in names:
            if n in _FRIENDLY:
                shown.append(_FRIENDLY[n])
                continue
            try:
                term = pto_parser().get_terminal(n)
            except KeyError:
                continue
            pat = term.pattern
            shown.append(f"'{pat.value}'" if pat.type == "str" else n.lower())
        shown = sorted(set(shown))
        if len(shown) > 10:
            shown = shown[:10] + ["..."]
        return "; expected " + ("one of: " if len(shown) > 1 else "") + ", ".join(shown)

    def _err(self, at, msg) -> ParseError:
        line, col = self._linecol(at)
        return ParseError(self.file, line, col, msg, self.text)


def _entry(functions: list) -> str:
    """The kernel: the first function marked ``pto.entry``, else the first public function
    with a body that no other function calls, else the first function."""
    kernels = Program(tuple(functions)).kernels()
    return kernels[0] if kernels else functions[0].name


# --- public ----------------------------------------------------------------------------------


def parse_text(text: str, filename: str = "<string>") -> Program:
    """Parse PTO IR ``text``; raise ParseError (``FILE:LINE:COL: error: ...``) on any mistake."""
    if not isinstance(text, str):
        raise TypeError("parse_text expects str")
    text = unmarked(text)
    remember_source(filename, text)
    low = _Lowering(filename, text)
    # The parse allocates many small acyclic objects; the cyclic collector would rescan
    # them again and again (a third of the time on large files).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            tree = pto_parser().parse(text)
        except UnexpectedInput as e:
            raise low.syntax_error(e) from None
        return low.program(tree)
    finally:
        if gc_was_enabled:
            gc.enable()
