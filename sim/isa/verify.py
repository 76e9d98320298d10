"""The verifier: is an instruction legal on a target?

Two layers of rules apply to every ``Instr``. The ISA fixes the operand signature of an
opcode (``sim/isa/opcodes.py``: how many tiles, scalars and GM views it takes, in which
order, with an optional trailing tmp tile); this module checks it and names each operand
by its role (``dst``, ``src``/``src0``/``src1``..., ``tmp``, ``scalar``; ``mask`` for
TSEL; ``a``/``b``/``c_in``/``bias`` for the cube ops). The target fixes everything else:
which element types an op accepts, which buffers and layouts its tiles may use, which
operands must share an element type or a valid region, what the tmp tile needs, which
conversions TCVT and the FIXPIPE can do, the integer input range of the A2/A3
remainder-through-float paths. Those rules are data, read from the ``ops`` table of the
target (``models/<target>/ops.toml``, whose header documents the schema); nothing
target-specific is written here. An opcode the target's table does not list is not
available on that target.

Rules have one of two severities. An *error* makes the instruction illegal: the hardware
cannot issue it (a dtype, location, layout, shape or signature the implementation rejects),
and ``verify_instr``/``verify_program`` raise VerifyError. A *warning* describes an
instruction the hardware still issues and the simulator can time, but whose result is
wrong or only inferred to be wrong (the reference marks such rules "[inferred from code]"):
the no-aliasing rule ``distinct`` of the multi-step A2/A3 lowerings is a warning. Warnings
are returned as strings, ``"<where>: warning: operands <a> and <b> are the same tile
(<tile>): <op> on <target> <reason>"``, the reason coming from the op's ``distinct_reason``.

Valid extents come from the caller: ``verify_program`` uses the declared tile types (a
dynamic extent is unknown and its equality checks are skipped), the engine can pass the
run-time extents to ``verify_instr``. Every error is reported as
``"<where>: operand <role> (<operand>): <rule>: expected <...>, found <...>"``.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from sim.base.errors import UserError, VerifyError
from sim.isa.dtypes import DTYPES
from sim.isa.opcodes import OPCODES, OpSpec, opcode as _opcode
from sim.isa.program import Alloc, Const, Instr, PartView, Scalar, SetValidShape, TensorView
from sim.isa.tile import Loc, Tile

__all__ = ["verify_instr", "verify_program", "diagnose", "instr_errors", "op_rules",
           "check_ops_table", "bind_operands", "RULE_KEYS"]

ValidOf = Callable[[Tile], "tuple[int | None, int | None]"]

# Role names of the cube operands (their position differs between the forms of an op),
# keyed by (opcode, number of required input tiles). Every other op numbers its inputs.
_NAMED_TILES = {
    ("TSEL", 3): ("mask", "src0", "src1"),
    ("TMATMUL", 2): ("a", "b"),
    ("TGEMV", 2): ("a", "b"),
    ("TMATMUL_ACC", 3): ("c_in", "a", "b"),
    ("TMATMUL_ACC", 2): ("a", "b"),
    ("TMATMUL_BIAS", 3): ("a", "b", "bias"),
    ("TSELS", 2): ("mask", "src"),
    ("TSELS", 3): ("mask", "src", "tmp"),
    ("MGATHER", 1): ("indices",),
}
_NOT_DATA = ("tmp", "mask", "indices")
_KIND_OF_TOKEN = {"T": "tile", "T?": "tile", "S": "scalar", "V": "GM view"}


def _msg(role, operand, rule, expected, found) -> str:
    return f"operand {role} ({operand}): {rule}: expected {expected}, found {found}"


def _kind(x) -> str:
    if isinstance(x, Tile):
        return "tile"
    if isinstance(x, (Const, Scalar)):
        return "scalar"
    if isinstance(x, (PartView, TensorView)):
        return "GM view"
    return type(x).__name__


# --- operand signature --------------------------------------------------------------------

def _role_names(op: str, tokens: list[str]) -> list[str]:
    n_tiles = tokens.count("T")
    tiles = iter(_NAMED_TILES.get((op, n_tiles))
                 or (["src"] if n_tiles == 1 else [f"src{i}" for i in range(n_tiles)]))
    n_scalars = tokens.count("S")
    scalars = iter(["scalar"] if n_scalars == 1 else [f"scalar{i}" for i in range(n_scalars)])
    named = {"T": tiles, "S": scalars}
    return [next(named[t]) if t in named else ("tmp" if t == "T?" else "src") for t in tokens]


def _fits(tokens: list[str], operands: tuple) -> bool:
    required = sum(1 for t in tokens if not t.endswith("?"))
    return required <= len(operands) <= len(tokens) and all(
        _KIND_OF_TOKEN[t] == _kind(x) for t, x in zip(tokens, operands))


def _signature_error(op: str, side: str, forms: list[list[str]], operands: tuple) -> str:
    for tokens in forms:
        required = sum(1 for t in tokens if not t.endswith("?"))
        if required <= len(operands) <= len(tokens):
            roles = _role_names(op, tokens) if side == "ins" else ["dst"]
            for role, t, x in zip(roles, tokens, operands):
                if _KIND_OF_TOKEN[t] != _kind(x):
                    return _msg(role, x, "operand kind", f"a {_KIND_OF_TOKEN[t]}", f"a {_kind(x)}")
    listed = ", ".join(map(str, operands))
    expected = " or ".join(f"{len(t)} ({' '.join(t)})" for t in forms)
    return _msg(side, listed, "operand count", expected, len(operands))


def bind_operands(spec: OpSpec, instr: Instr) -> "dict[str, object] | str":
    """Role -> operand for the signature form ``instr`` matches, or the error message."""
    outs = spec.outs.split()
    if not _fits(outs, instr.outs):
        return _signature_error(spec.name, "outs", [outs], instr.outs)
    for form in spec.ins:
        tokens = form.split()
        if _fits(tokens, instr.ins):
            roles = dict(zip(_role_names(spec.name, tokens), instr.ins))
            return {"dst": instr.outs[0], **roles}
    return _signature_error(spec.name, "ins", [f.split() for f in spec.ins], instr.ins)


# --- the operands of one instruction as the checkers see them ------------------------------

class _Operands:
    def __init__(self, op: str, bound: dict, target, valid_of: ValidOf):
        self.op, self.bound, self.target, self.valid_of = op, bound, target, valid_of

    def get(self, role):
        return self.bound.get(role)

    def tile(self, role) -> "Tile | None":
        x = self.bound.get(role)
        return x if isinstance(x, Tile) else None

    def typed(self, role):
        x = self.bound.get(role)
        return x if isinstance(x, (Tile, PartView, TensorView)) else None

    def valid(self, role) -> tuple:
        t = self.tile(role)
        return tuple(self.valid_of(t)) if t is not None else (None, None)

    def roles(self, spec: Iterable[str]) -> list[str]:
        """Roles named by ``spec`` ("*" = every data operand) that this instruction has."""
        out = []
        for r in spec:
            names = [k for k, x in self.bound.items() if k not in _NOT_DATA
                     and isinstance(x, (Tile, PartView, TensorView))] if r == "*" else [r]
            out += [n for n in names if n in self.bound and n not in out]
        return out

    def tiles(self, spec=None) -> list[tuple[str, Tile]]:
        roles = self.bound if spec is None else self.roles(spec)
        return [(r, self.bound[r]) for r in roles if isinstance(self.bound[r], Tile)]


def _fmt_valid(v: tuple, axes) -> str:
    return "x".join("?" if v[a] is None else str(v[a]) for a in axes)


def _layout(t: Tile) -> str:
    return t.type.layout


# --- rule checkers: (operands, rule value) -> messages -------------------------------------

def _check_dtypes(ops: _Operands, allowed) -> Iterator[str]:
    table = allowed if isinstance(allowed, dict) else {r: allowed for r in ops.roles(["*"])}
    for role, names in table.items():
        x = ops.typed(role)
        if x is not None and x.dtype.name not in names:
            yield _msg(role, x, "dtype", f"one of {', '.join(names)} on {ops.target.name}", x.dtype)


def _check_vector_only(ops: _Operands, on: bool) -> Iterator[str]:
    for role, t in ops.tiles() if on else ():
        if t.loc is not Loc.VEC:
            yield _msg(role, t, "location", "vec", t.loc.value)


def _check_locs(ops: _Operands, table: dict) -> Iterator[str]:
    for role, locs in table.items():
        t = ops.tile(role)
        if t is not None and t.loc.value not in locs:
            yield _msg(role, t, "location", f"one of {', '.join(locs)} on {ops.target.name}",
                       t.loc.value)


def _check_row_major(ops: _Operands, which) -> Iterator[str]:
    selected = ops.tiles() if which is True else ops.tiles(which or ())
    for role, t in selected:
        if not t.type.is_row_major:
            yield _msg(role, t, "layout", "row-major unboxed (nd)", _layout(t))


def _check_layouts(ops: _Operands, table: dict) -> Iterator[str]:
    for role, want in table.items():
        t = ops.tile(role)
        allowed = [want] if isinstance(want, str) else list(want)
        if t is not None and _layout(t) not in allowed:
            yield _msg(role, t, "layout", f"{' or '.join(allowed)} on {ops.target.name}",
                       _layout(t))


def _check_same_dtype(ops: _Operands, roles: list) -> Iterator[str]:
    typed = [(r, ops.typed(r)) for r in ops.roles(roles) if ops.typed(r) is not None]
    for role, x in typed[1:]:
        first, x0 = typed[0]
        if x.dtype != x0.dtype:
            yield _msg(role, x, f"same dtype as {first}", f"{x0.dtype} (dtype of {first})", x.dtype)


def _check_same_dtype_size(ops: _Operands, roles: list) -> Iterator[str]:
    typed = [(r, ops.typed(r)) for r in ops.roles(roles) if ops.typed(r) is not None]
    for role, x in typed[1:]:
        first, x0 = typed[0]
        if x.dtype.size_bytes != x0.dtype.size_bytes:
            yield _msg(role, x, f"element size equal to {first}",
                       f"{x0.dtype.size_bytes} bytes ({x0.dtype} of {first})",
                       f"{x.dtype.size_bytes} bytes ({x.dtype})")


def _equal_valid(axes: tuple, label: str):
    def check(ops: _Operands, roles: list) -> Iterator[str]:
        tiles = ops.tiles(roles)
        for role, t in tiles[1:]:
            first = tiles[0][0]
            want, have = ops.valid(first), ops.valid(role)
            if any(want[a] is not None and have[a] is not None and want[a] != have[a]
                   for a in axes):
                yield _msg(role, t, f"{label} equal to {first}", _fmt_valid(want, axes),
                           _fmt_valid(have, axes))
    return check


def _extent(ops: _Operands, ref):
    if isinstance(ref, int):
        return ref
    role, name = ref.split(".")
    t = ops.tile(role)
    if t is None:
        return None
    if name in ("valid_rows", "valid_cols"):
        return ops.valid(role)[name == "valid_cols"]
    return getattr(t.type, name)


def _check_equal_extents(ops: _Operands, pairs: list) -> Iterator[str]:
    for lhs, rhs in pairs:
        have, want = _extent(ops, lhs), _extent(ops, rhs)
        if have is not None and want is not None and have != want:
            role = lhs.split(".")[0]
            yield _msg(role, ops.get(role), f"{lhs} == {rhs}", want, have)


def _max_valid(axes: tuple, label: str):
    def check(ops: _Operands, table: dict) -> Iterator[str]:
        for role, limit in table.items():
            v = ops.valid(role)
            if any(v[a] is not None and v[a] > limit for a in axes):
                yield _msg(role, ops.get(role), label, f"<= {limit}", _fmt_valid(v, axes))
    return check


def _check_positive_valid(ops: _Operands, on: bool) -> Iterator[str]:
    for role, t in ops.tiles(["*"]) if on else ():
        v = ops.valid(role)
        if any(e is not None and e <= 0 for e in v):
            yield _msg(role, t, "valid region", "rows > 0 and cols > 0", _fmt_valid(v, (0, 1)))


def _block_elems(t: Tile) -> int:
    return max(1, 32 // t.dtype.size_bytes)


def _check_valid_cols_in(ops: _Operands, table: dict) -> Iterator[str]:
    for role, allowed in table.items():
        t = ops.tile(role)
        have = ops.valid(role)[1]
        if t is None or have is None:
            continue
        values = [_block_elems(t) if a == "block" else a for a in allowed]
        if have not in values:
            shown = ", ".join(f"{v} (32 bytes of {t.dtype})" if a == "block" else str(v)
                              for a, v in zip(allowed, values))
            yield _msg(role, t, "valid cols", f"one of {shown} on {ops.target.name}", have)


def _distinct_groups(value: list) -> list[list[str]]:
    """``distinct`` is one list of roles (pairwise distinct) or a list of such lists."""
    return [list(g) for g in value] if value and not isinstance(value[0], str) else [value]


def _warn_distinct(ops: _Operands, value: list, rules: dict) -> Iterator[str]:
    reason = rules.get("distinct_reason", "may compute a wrong result when they alias")
    seen = set()
    for group in _distinct_groups(value):
        tiles = ops.tiles(group)
        for i, (role, t) in enumerate(tiles):
            for other, u in tiles[:i]:
                if t == u and (other, role) not in seen:
                    seen.add((other, role))
                    yield (f"warning: operands {other} and {role} are the same tile ({t}): "
                           f"{ops.op} on {ops.target.name} {reason}")


def _tmp_dtype(ops: _Operands, tmp: Tile, req: dict) -> Iterator[str]:
    dst = ops.typed("dst")
    if req.get("same_dtype") and dst is not None and tmp.dtype != dst.dtype:
        yield _msg("tmp", tmp, "tmp dtype", f"{dst.dtype} (dtype of dst)", tmp.dtype)
    if "dtypes" in req and tmp.dtype.name not in req["dtypes"]:
        yield _msg("tmp", tmp, "tmp dtype",
                   f"one of {', '.join(req['dtypes'])} on {ops.target.name}", tmp.dtype)


def _tmp_min_valid(ops: _Operands, tmp: Tile, req: dict) -> Iterator[str]:
    for axis, name in enumerate(("rows", "cols")):
        bound = req.get(f"min_valid_{name}")
        if bound is None:
            continue
        need = bound if isinstance(bound, int) else ops.valid(bound)[axis]
        why = "" if isinstance(bound, int) else f" (valid {name} of {bound})"
        have = ops.valid("tmp")[axis]
        if need is not None and have is not None and have < need:
            yield _msg("tmp", tmp, f"tmp valid {name}", f">= {need}{why}", have)


def _tmp_more_rows(ops: _Operands, tmp: Tile, req: dict) -> Iterator[str]:
    role = req.get("more_rows_than")
    other = ops.tile(role) if role else None
    if other is not None and tmp.type.rows <= other.type.rows:
        yield _msg("tmp", tmp, "tmp rows", f"> {other.type.rows} (rows of {role})", tmp.type.rows)


def _check_tmp(ops: _Operands, req: dict) -> Iterator[str]:
    tmp = ops.tile("tmp")
    for part in (_tmp_dtype, _tmp_min_valid, _tmp_more_rows) if tmp is not None else ():
        yield from part(ops, tmp, req)


def _check_cvt_pairs(ops: _Operands, pairs: dict) -> Iterator[str]:
    src, dst = ops.typed("src"), ops.typed("dst")
    if src is None or dst is None:
        return
    legal = pairs.get(src.dtype.name)
    if legal is None:
        yield _msg("src", src, "conversion source dtype",
                   f"one of {', '.join(pairs)} on {ops.target.name}", src.dtype)
    elif dst.dtype.name not in legal:
        yield _msg("dst", dst, f"conversion from {src.dtype}",
                   f"one of {', '.join(legal)} on {ops.target.name}", dst.dtype)


def _check_dtype_combos(ops: _Operands, spec: dict) -> Iterator[str]:
    xs = [ops.typed(r) for r in spec["roles"]]
    if any(x is None for x in xs):
        return
    found = tuple(x.dtype.name for x in xs)
    allowed = [tuple(c) for c in spec["allowed"]]
    if found not in allowed:
        names = ", ".join(spec["roles"])
        yield _msg(spec["roles"][0], xs[0], f"dtypes of ({names})",
                   f"one of {' '.join('(' + ', '.join(c) + ')' for c in allowed)} on "
                   f"{ops.target.name}", "(" + ", ".join(found) + ")")


def _check_int_input_range(ops: _Operands, bounds: list) -> Iterator[str]:
    lo, hi = bounds
    dst = ops.typed("dst")
    if dst is None or not dst.dtype.is_int:
        return
    for role, x in ops.bound.items():
        if isinstance(x, Const) and not lo <= x.value <= hi:
            yield _msg(role, x, f"{dst.dtype} input range", f"within [{lo}, {hi}] on "
                       f"{ops.target.name}", x.value)


_CHECKS = {
    "dtypes": _check_dtypes,
    "vector_only": _check_vector_only,
    "locs": _check_locs,
    "row_major": _check_row_major,
    "layouts": _check_layouts,
    "same_dtype": _check_same_dtype,
    "same_dtype_size": _check_same_dtype_size,
    "equal_valid": _equal_valid((0, 1), "valid region"),
    "equal_valid_rows": _equal_valid((0,), "valid rows"),
    "equal_valid_cols": _equal_valid((1,), "valid cols"),
    "equal_extents": _check_equal_extents,
    "max_valid": _max_valid((0, 1), "valid region"),
    "max_valid_rows": _max_valid((0,), "valid rows"),
    "max_valid_cols": _max_valid((1,), "valid cols"),
    "positive_valid": _check_positive_valid,
    "valid_cols_in": _check_valid_cols_in,
    "tmp": _check_tmp,
    "cvt_pairs": _check_cvt_pairs,
    "dtype_combos": _check_dtype_combos,
    "int_input_range": _check_int_input_range,
}
# Warning rules: the instruction is issued and timed, its result is wrong (or inferred to
# be); checkers take (operands, rule value, effective rules).
_WARNINGS = {
    "distinct": _warn_distinct,
}
_META_KEYS = ("source", "note", "distinct_reason", "cases")
RULE_KEYS = tuple(_CHECKS) + tuple(_WARNINGS) + _META_KEYS
_EXTENTS = ("rows", "cols", "valid_rows", "valid_cols")
_TMP_KEYS = ("same_dtype", "dtypes", "min_valid_rows", "min_valid_cols", "more_rows_than")


# --- rules of an opcode on a target --------------------------------------------------------

def op_rules(target, op: str) -> dict:
    """The rules of ``op`` on ``target``: [defaults] overlaid by [ops.<op>] (cases kept)."""
    entry = target.ops.get("ops", {}).get(op)
    if entry is None:
        raise VerifyError(f"opcode {op} is not available on target {target.name}")
    return {**target.ops.get("defaults", {}), **entry}


def _matches(case: dict, ops: _Operands) -> bool:
    for role, locs in case.get("when", {}).items():
        t = ops.tile(role)
        if t is None or t.loc.value not in ([locs] if isinstance(locs, str) else locs):
            return False
    return True


def _effective(rules: dict, ops: _Operands) -> dict:
    merged = {k: v for k, v in rules.items() if k != "cases"}
    for case in rules.get("cases", ()):
        if _matches(case, ops):
            merged.update({k: v for k, v in case.items() if k != "when"})
    return merged


def diagnose(instr: Instr, target, valid_of: ValidOf) -> tuple[list[str], list[str]]:
    """(errors, warnings) of ``instr`` on ``target``, messages without the ``where`` prefix.

    Warnings are only looked for when the operands match the signature.
    """
    try:
        spec = _opcode(instr.opcode)
    except UserError as e:
        return [str(e)], []
    try:
        rules = op_rules(target, spec.name)
    except VerifyError as e:
        return [str(e)], []
    bound = bind_operands(spec, instr)
    if isinstance(bound, str):
        return [bound], []
    ops = _Operands(spec.name, bound, target, valid_of)
    rules = _effective(rules, ops)
    errors = [m for key, check in _CHECKS.items() if key in rules for m in check(ops, rules[key])]
    warnings = [m for key, warn in _WARNINGS.items() if key in rules
                for m in warn(ops, rules[key], rules)]
    return errors, warnings


def instr_errors(instr: Instr, target, valid_of: ValidOf) -> list[str]:
    """Every error of ``instr`` (messages without the ``where`` prefix)."""
    return diagnose(instr, target, valid_of)[0]


def _raise(errors: list[str], warnings: list[str]) -> None:
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    err = VerifyError(errors[0] + more)
    err.errors = errors
    err.warnings = warnings
    raise err


_VERDICTS: dict = {}         # (instr, target, valid regions of its tiles) -> diagnose()
_CLEAN: set = set()          # _facts of the instructions without an error or a warning
_MAX_VERDICTS = 1 << 14


def _facts(instr: Instr, target, valid_of: ValidOf) -> tuple:
    """What the checkers read of ``instr`` on ``target``, without the names only messages
    show: the opcode, the number of outputs and, per operand, its kind and — a tile — its
    type, valid region and the first operand it is the same tile as (aliasing), a GM view
    its element type, a constant its value. Instructions with equal facts get equal
    verdicts up to the operand text of their messages, so one without a message answers
    for all of them. A checker that reads more of an operand must add it here
    (tests/test_verify_memo.py changes each part)."""
    key = [instr.opcode, target, len(instr.outs)]
    tiles = []
    for o in (*instr.outs, *instr.ins):
        if isinstance(o, Tile):
            same = tiles.index(o) if o in tiles else len(tiles)
            tiles.append(o)
            key.append((o.type, tuple(valid_of(o)), same))
        elif isinstance(o, Const):
            key.append(o)
        elif isinstance(o, (PartView, TensorView)):
            key.append((type(o), o.dtype))
        else:
            key.append(type(o))
    return tuple(key)


def verify_instr(instr: Instr, target, valid_of: ValidOf, where: str) -> list[str]:
    """The warnings of ``instr`` (each prefixed by ``where``; empty when clean).

    Raises VerifyError naming ``where`` if ``instr`` breaks a signature or target rule
    (its ``errors`` and ``warnings`` attributes list every message).

    The verdict depends only on the instruction (operands by value), the target and its
    tiles' valid regions, so it is kept per process: the units and cores of a chip, the
    placements of one instruction and the runs of a sweep check it once. A clean verdict
    is kept by the instruction's ``_facts`` too: the same op on other tiles of the same
    types (the other buffer of a double-buffered loop, another GM window) is not checked
    again.
    """
    key = (instr, target,
           *[tuple(valid_of(o)) for o in (*instr.outs, *instr.ins) if isinstance(o, Tile)])
    verdict = _VERDICTS.get(key)
    if verdict is None:
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
            _CLEAN.clear()
        facts = _facts(instr, target, valid_of)
        verdict = ((), ()) if facts in _CLEAN else diagnose(instr, target, valid_of)
        if not verdict[0] and not verdict[1]:
            _CLEAN.add(facts)
        _VERDICTS[key] = verdict
    errors, warnings = verdict
    warnings = [f"{where}: {w}" for w in warnings]
    if errors:
        _raise([f"{where}: {e}" for e in errors], warnings)
    return warnings


# --- whole programs --------------------------------------------------------------------------

def _extent_value(x):
    return x.value if isinstance(x, Const) else None


def verify_program(program, target) -> list[str]:
    """Check every instruction of the entry function; return the warnings of all of them.

    One VerifyError lists all errors (``errors``; ``warnings`` holds the warnings).

    Valid extents are the declared ones, updated by constant ``valid_row``/``valid_col``
    of ``alloc_tile`` and by ``set_validshape`` (a non-constant extent becomes unknown).
    """
    check_ops_table(target)
    valid: dict = {}
    errors: list[str] = []
    warnings: list[str] = []

    def valid_of(t: Tile):
        return valid.get(t, (t.type.valid_rows, t.type.valid_cols))

    k = 0
    for stmt in program.main.body:
        if isinstance(stmt, Alloc) and (stmt.valid_row is not None or stmt.valid_col is not None):
            valid[stmt.tile] = (_extent_value(stmt.valid_row), _extent_value(stmt.valid_col))
        elif isinstance(stmt, SetValidShape):
            valid[stmt.tile] = (_extent_value(stmt.rows), _extent_value(stmt.cols))
        elif isinstance(stmt, Instr):
            where = f"instruction #{k} {stmt.opcode}" + (f" ({stmt.loc})" if stmt.loc else "")
            errs, warns = diagnose(stmt, target, valid_of)
            errors += [f"{where}: {e}" for e in errs]
            warnings += [f"{where}: {w}" for w in warns]
            k += 1
    if errors:
        _raise(errors, warnings)
    return warnings


# --- checking an ops table itself ------------------------------------------------------------

def _role_refs(key: str, value) -> list:
    if key in ("dtypes", "locs", "layouts", "max_valid", "max_valid_rows", "max_valid_cols",
               "valid_cols_in"):
        return list(value) if isinstance(value, dict) else []
    if key == "distinct":
        return [r for group in _distinct_groups(value) for r in group]
    if key in ("same_dtype", "same_dtype_size", "equal_valid", "equal_valid_rows",
               "equal_valid_cols") or (key == "row_major" and isinstance(value, list)):
        return list(value)
    if key == "equal_extents":
        return [r.split(".")[0] for pair in value for r in pair if isinstance(r, str)]
    if key == "dtype_combos":
        return list(value["roles"])
    if key == "tmp":
        return [v for k, v in value.items() if k != "dtypes" and isinstance(v, str)]
    return []


def _dtype_refs(key: str, value) -> list:
    if key == "dtypes":
        return [d for ds in value.values() for d in ds] if isinstance(value, dict) else list(value)
    if key == "cvt_pairs":
        return list(value) + [d for ds in value.values() for d in ds]
    if key == "dtype_combos":
        return [d for combo in value["allowed"] for d in combo]
    if key == "tmp":
        return list(value.get("dtypes", ()))
    return []


def _possible_roles(spec: OpSpec) -> set:
    roles = {"dst", "*"}
    for form in spec.ins:
        roles.update(_role_names(spec.name, form.split()))
    return roles


def _table_problems(label: str, roles: set, rules: dict) -> Iterator[str]:
    locs = {loc.value for loc in Loc}
    for key, value in rules.items():
        if key not in RULE_KEYS and key != "when":
            yield f"{label}: unknown rule key {key!r}; expected one of {', '.join(RULE_KEYS)}"
            continue
        if key == "tmp":
            yield from (f"{label}: unknown tmp key {k!r}; expected one of {', '.join(_TMP_KEYS)}"
                        for k in value if k not in _TMP_KEYS)
        refs = list(value) if key == "when" else _role_refs(key, value)
        yield from (f"{label}.{key}: unknown role {r!r}; expected one of "
                    f"{', '.join(sorted(roles))}" for r in refs if r not in roles)
        if key == "equal_extents":
            yield from (f"{label}.equal_extents: unknown extent {r!r}; expected role."
                        f"{'|'.join(_EXTENTS)}" for pair in value for r in pair
                        if isinstance(r, str) and r.partition(".")[2] not in _EXTENTS)
        yield from (f"{label}.{key}: unknown element type {d!r}"
                    for d in _dtype_refs(key, value) if d not in DTYPES)
        if key == "locs":
            yield from (f"{label}.locs: unknown location {loc!r}"
                        for ls in value.values() for loc in ls if loc not in locs)
        if key == "valid_cols_in":
            yield from (f"{label}.valid_cols_in: unknown extent {v!r}; expected a positive "
                        f"int or 'block'" for vs in value.values() for v in vs
                        if v != "block" and not (isinstance(v, int) and v > 0))


def check_ops_table(target) -> None:
    """Raise UserError if the target's ops table names unknown opcodes, keys, roles or types."""
    problems = [f"unknown top-level key {k!r}; expected defaults, ops"
                for k in target.ops if k not in ("defaults", "ops")]
    every_role = set().union(*(_possible_roles(spec) for spec in OPCODES.values()))
    problems += _table_problems("defaults", every_role, target.ops.get("defaults", {}))
    for op, entry in target.ops.get("ops", {}).items():
        if op not in OPCODES:
            problems.append(f"ops.{op}: unknown opcode")
            continue
        roles = _possible_roles(OPCODES[op])
        own = {k: v for k, v in entry.items() if k != "cases"}
        problems += _table_problems(f"ops.{op}", roles, own)
        inherited = {**target.ops.get("defaults", {}), **own}
        for n, case in enumerate(entry.get("cases", ())):
            problems += _table_problems(f"ops.{op}.cases[{n}]", roles, case)
            if "distinct" in case and "distinct_reason" not in {**inherited, **case}:
                problems.append(f"ops.{op}.cases[{n}]: distinct needs a distinct_reason")
        if "distinct" in inherited and "distinct_reason" not in inherited:
            problems.append(f"ops.{op}: distinct needs a distinct_reason (the warning text)")
    if problems:
        raise UserError(f"{target.path / 'ops.toml'}: " + "; ".join(problems))
