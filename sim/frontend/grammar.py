"""Stage 1 of the front end: ``.pto`` text -> light tagged tuples, no parse tree.

``grammar.lark`` (LALR) describes the MLIR subset tile kernels use. Two pieces make it
fast on kernels of thousands of lines:

* ``_PtoLexer`` tokenizes with one compiled scanner over the grammar's own terminals and
  turns a name into a keyword (``ins``, ``scf.for``, ``pto.set_flag`` ...) only where the
  parser's current state accepts that keyword, as lark's contextual lexer does;
* ``_Shapes``, the transformer, runs inside the parser: each rule becomes a tagged tuple
  whose tokens keep their positions, and each ``<kind>_stmt`` rule becomes
  ``(kind, first token, children)``, which ``sim.frontend.parse`` dispatches to the
  ``s_<kind>`` method of the statement family that lowers it.

A ``!pto.kind<...>`` type is a single token here; ``sim.frontend.pto_types`` reads its
parameters. ``pto_parser()`` builds the LALR tables once per process, loaded from the user's cache
(``sim.frontend.lark_cache``) when an earlier process built them.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer

from sim.frontend.lark_cache import cached_lark

__all__ = ["pto_parser", "node_start"]

_HERE = Path(__file__).parent


class _Shapes(Transformer):
    """Callbacks of grammar.lark: each rule becomes a tagged tuple (tokens keep positions)."""

    def start(self, c):
        return ("start", c)

    def alias_def(self, c):
        return ("alias", c[0], c[1])

    def attr_alias_def(self, c):
        return ("attr_alias", c[0], c[1])

    def module(self, c):
        attrs = next((x for x in c if isinstance(x, tuple) and x[0] == "dict"), None)
        funcs = [x for x in c if isinstance(x, tuple) and x[0] == "func"]
        return ("module", c[0], attrs, funcs)

    def module_attrs(self, c):
        return c[1]

    def func(self, c):
        return ("func", c)

    def visibility(self, c):
        return ("vis", c[0])

    def func_args(self, c):
        return ("args", c)

    def named_arg(self, c):
        return (c[0], c[1], c[2] if len(c) > 2 else None)  # (%a, type, attr dict)

    def anon_arg(self, c):
        return (None, c[0], c[1] if len(c) > 1 else None)

    def func_results(self, c):
        return ("fres", c[1][1])

    def func_attrs(self, c):
        return c[1]

    def region(self, c):
        return ("region", c[0], c[1:-1], c[-1])

    def results(self, c):
        return ("results", c)

    def result(self, c):
        return (c[0], c[1] if len(c) > 1 else None)  # %r or (%r, INT token of %r:N)

    def operands(self, c):
        return ("ops", c)

    def literal(self, c):
        return ("lit", c[0])

    def type_list(self, c):
        return ("types", c)

    def type_or_list(self, c):
        if isinstance(c[0], Token) and c[0].type == "LPAR":
            return ("types", c[1][1] if len(c) > 1 else [])
        return ("types", [c[0]])

    def dps_ins(self, c):
        return ("ins", c)

    def dps_outs(self, c):
        return ("outs", c)

    def dps_outs_types(self, c):
        return ("outs", c)

    def dps_ret(self, c):
        return ("ret", c[1])

    def simple_args(self, c):
        return ("sargs", c)

    def simple_flag(self, c):
        return ("flag", c)

    def simple_sig(self, c):
        return ("sig", c)

    def iter_args(self, c):
        return ("iter", c[1:-2], c[-1])

    def iter_arg(self, c):
        return (c[0], c[1])

    def for_type(self, c):
        return ("fortype", c[0])

    def if_types(self, c):
        return ("iftypes", c[1])

    def else_region(self, c):
        return ("else", c[1])

    def alloc_kv(self, c):
        return ("kv", c[0], c[1])

    def subview_valid(self, c):
        return ("valid", c[0], c[1] if len(c) > 1 else ("ops", []))

    def sync_elem(self, c):
        return ("sync", c[0])

    def sync_angle(self, c):
        return ("sync", c[0])

    def syncall_kv(self, c):
        return ("kv", c[0], c[1])

    def pipe_paren(self, c):
        return ("paren", c[0][1] if c else [])

    def pipe_args(self, c):
        return ("pargs", c)

    def pipe_arg(self, c):
        if isinstance(c[0], Token) and c[0].type == "NAME":
            return (c[0], c[1], c[2] if len(c) > 2 else None)
        return (None, c[0], c[1] if len(c) > 1 else None)

    def pipe_ret(self, c):
        return ("ret", c[1])

    def comm_args(self, c):
        return ("cargs", c)

    def comm_arg(self, c):
        # an operand, or a group NAME(operands): buf(%ping, %pong)
        return ("cgroup", c[0], c[1][1]) if len(c) > 1 else c[0]

    def attr_dict(self, c):
        return ("dict", c[0], c[1:-1], c[-1])

    def attr_entry(self, c):
        return (c[0], c[1] if len(c) > 1 else None)

    def attr_value(self, c):
        # ("aval", payload, start, end); payload: token | ("lit", tok) | array | dict
        first, last = c[0], c[-1]
        return ("aval", c, node_start(first), node_end(last))

    def attr_array(self, c):
        return ("array", c[1:-1], c[0].start_pos, c[-1].end_pos)


def _statement_callback(kind: str):
    """``<kind>_stmt`` rules become ("kind", first token, children)."""

    def cb(self, c):
        first = c[0]
        if isinstance(first, tuple):  # results: the first result's token
            first = first[1][0][0]
        return (kind, first, c)

    cb.__name__ = f"{kind}_stmt"
    return cb


for _kind in (
    "dps",
    "simple",
    "for",
    "if",
    "yield",
    "call",
    "return",
    "alloc",
    "multi_get",
    "memref_alloc",
    "mtv",
    "pv",
    "subview",
    "reshape",
    "setvalid",
    "load_scalar",
    "store_scalar",
    "getter",
    "tvdim",
    "section",
    "flag",
    "barrier",
    "barrier_sync",
    "ffts",
    "set_ffts",
    "syncall",
    "pipe",
    "comm",
    "fence",
    "cmo",
    "dsb",
    "exec_region",
    "quant",
):
    setattr(_Shapes, f"{_kind}_stmt", _statement_callback(_kind))


def node_start(x) -> int:
    """Offset of the first character of a token or a tagged tuple (literal, dict, array,
    attribute value)."""
    if isinstance(x, Token):
        return x.start_pos or 0
    if x[0] == "lit":
        return x[1].start_pos
    if x[0] == "dict":
        return x[1].start_pos
    return x[2]


def node_end(x) -> int:
    """Offset just past the last character of a token or a tagged tuple."""
    if isinstance(x, Token):
        return x.end_pos or 0
    if x[0] == "lit":
        return x[1].end_pos
    if x[0] == "dict":
        return x[3].end_pos
    return x[3]


class _PtoLexer(Lexer):
    """The tokenizer of grammar.lark: lark's contextual lexer, made cheaper per token.

    The terminals are the grammar's own. One compiled scanner tries them in lark's order
    (priority, then width); runs of whitespace and comments are skipped in one match. A
    name that spells a keyword (``ins``, ``scf.for``, ``pto.set_flag`` ...) becomes that
    keyword only where the parser's current state accepts it, as with lark's contextual
    lexer, so ``to`` or ``valid`` can still be ordinary names elsewhere.
    """

    __future_interface__ = 2

    def __init__(self, conf):
        ident = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)*")
        self.keywords = {
            t.pattern.value: t.name
            for t in conf.terminals
            if t.pattern.type == "str" and ident.fullmatch(t.pattern.value)
        }
        kw_names = set(self.keywords.values())
        ignore = [t for t in conf.terminals if t.name in conf.ignore]
        rest = [t for t in conf.terminals if t.name not in conf.ignore and t.name not in kw_names]
        rest.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        skip = "(?:" + "|".join(t.pattern.to_regexp() for t in ignore) + ")+"
        groups = [f"(?P<_SKIP>{skip})"] + [f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in rest]
        self.scan = re.compile("|".join(groups)).match
        self.names = {t.name for t in conf.terminals}

    def lex(self, state, parser_state):
        ts = state.text
        if isinstance(ts, str):  # lark < 1.2 hands over the plain text
            text, pos, end = ts, 0, len(ts)
        else:
            text, pos, end = ts.text, ts.start, ts.end
        scan, keywords = self.scan, self.keywords
        states = parser_state.parse_conf.states
        line, line_start = state.line_ctr.line, state.line_ctr.line_start_pos
        while pos < end:
            m = scan(text, pos, end)
            if m is None:
                raise UnexpectedCharacters(
                    text,
                    pos,
                    line,
                    pos - line_start + 1,
                    state=parser_state,
                    terminals_by_name=None,
                )
            # every alternative of the scanner is a named group (re's stubs cannot know)
            kind: str = m.lastgroup  # type: ignore[assignment]
            start, pos = pos, m.end()
            value = m.group()
            nl = value.count("\n")
            if kind == "_SKIP":
                if nl:
                    line += nl
                    line_start = start + value.rindex("\n") + 1
                continue
            if kind == "NAME" or kind == "OPNAME":
                kw = keywords.get(value)
                if kw is not None and kw in states[parser_state.position]:
                    kind = kw
            tok_line, col = line, start - line_start + 1
            if nl:
                line += nl
                line_start = start + value.rindex("\n") + 1
            tok = Token(kind, value, start, tok_line, col, line, pos - line_start + 1, pos)
            state.last_token = tok
            yield tok


@functools.cache
def pto_parser() -> Lark:
    return cached_lark(
        _HERE / "grammar.lark",
        parser="lalr",
        lexer=_PtoLexer,
        transformer=_Shapes(),
        maybe_placeholders=False,
    )
