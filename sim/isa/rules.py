"""The rules of a target's ops table, one checker per key.

``models/<target>/ops.toml`` states, per opcode, what the hardware accepts: element types
(``dtypes``), buffers (``locs``), layouts, operands that must share an element type or a
valid region, what a tmp tile needs, TCVT's conversion pairs, the integer input range of
the A2/A3 remainder-through-float paths. Each key has one checker here, a function of the
instruction's operands (``Operands``: each operand by its role, with its valid extents)
and the key's value, yielding messages. ``CHECKS`` are errors (the hardware cannot issue
the instruction); ``WARNINGS`` describe an instruction the hardware issues whose result
is wrong (the no-aliasing rule ``distinct``). ``sim.isa.verify`` applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sim.isa.program import Const, PartView, TensorView
from sim.isa.tile import Loc, Tile

__all__ = [
    "Operands",
    "CHECKS",
    "WARNINGS",
    "RULE_KEYS",
    "TMP_KEYS",
    "EXTENTS",
    "msg",
    "NOT_DATA",
    "ValidOf",
    "role_names",
    "distinct_groups",
]

ValidOf = Callable[[Tile], "tuple[int | None, int | None]"]
NOT_DATA = ("tmp", "mask", "indices", "idx0", "idx1")


def msg(role, operand, rule, expected, found) -> str:
    return f"operand {role} ({operand}): {rule}: expected {expected}, found {found}"


# Role names of the cube operands (their position differs between the forms of an op),
# keyed by (opcode, number of required input tiles). Every other op numbers its inputs.
NAMED_TILES = {
    ("TSEL", 3): ("mask", "src0", "src1"),
    ("TMATMUL", 2): ("a", "b"),
    ("TGEMV", 2): ("a", "b"),
    ("TMATMUL_ACC", 3): ("c_in", "a", "b"),
    ("TMATMUL_ACC", 2): ("a", "b"),
    ("TMATMUL_BIAS", 3): ("a", "b", "bias"),
    ("TSELS", 2): ("mask", "src"),
    ("TSELS", 3): ("mask", "src", "tmp"),
    ("MGATHER", 1): ("indices",),
    ("TSCATTER", 2): ("src", "indices"),
    ("TCONCATIDX", 4): ("src0", "src1", "idx0", "idx1"),
    ("TQUANT", 2): ("src", "fp"),
    ("TQUANT", 3): ("src", "fp", "offset"),
}


def role_names(op: str, tokens: list[str]) -> list[str]:
    n_tiles = tokens.count("T")
    tiles = iter(
        NAMED_TILES.get((op, n_tiles))
        or (["src"] if n_tiles == 1 else [f"src{i}" for i in range(n_tiles)])
    )
    n_scalars = tokens.count("S")
    scalars = iter(["scalar"] if n_scalars == 1 else [f"scalar{i}" for i in range(n_scalars)])
    named = {"T": tiles, "S": scalars}
    return [next(named[t]) if t in named else ("tmp" if t == "T?" else "src") for t in tokens]


# --- the operands of one instruction as the checkers see them ------------------------------


class Operands:
    def __init__(self, op: str, bound: dict, target, valid_of: ValidOf):
        self.op, self.bound, self.target, self.valid_of = op, bound, target, valid_of

    def get(self, role):
        return self.bound.get(role)

    def tile(self, role) -> Tile | None:
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
            names = (
                [
                    k
                    for k, x in self.bound.items()
                    if k not in NOT_DATA and isinstance(x, (Tile, PartView, TensorView))
                ]
                if r == "*"
                else [r]
            )
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


def _check_dtypes(ops: Operands, allowed) -> Iterator[str]:
    table = allowed if isinstance(allowed, dict) else {r: allowed for r in ops.roles(["*"])}
    for role, names in table.items():
        x = ops.typed(role)
        if x is not None and x.dtype.name not in names:
            yield msg(role, x, "dtype", f"one of {', '.join(names)} on {ops.target.name}", x.dtype)


def _check_vector_only(ops: Operands, on: bool) -> Iterator[str]:
    for role, t in ops.tiles() if on else ():
        if t.loc is not Loc.VEC:
            yield msg(role, t, "location", "vec", t.loc.value)


def _check_locs(ops: Operands, table: dict) -> Iterator[str]:
    for role, locs in table.items():
        t = ops.tile(role)
        if t is not None and t.loc.value not in locs:
            yield msg(
                role, t, "location", f"one of {', '.join(locs)} on {ops.target.name}", t.loc.value
            )


def _check_row_major(ops: Operands, which) -> Iterator[str]:
    selected = ops.tiles() if which is True else ops.tiles(which or ())
    for role, t in selected:
        if not t.type.is_row_major:
            yield msg(role, t, "layout", "row-major unboxed (nd)", _layout(t))


def _check_layouts(ops: Operands, table: dict) -> Iterator[str]:
    for role, want in table.items():
        t = ops.tile(role)
        allowed = [want] if isinstance(want, str) else list(want)
        if t is not None and _layout(t) not in allowed:
            yield msg(role, t, "layout", f"{' or '.join(allowed)} on {ops.target.name}", _layout(t))


def _check_same_dtype(ops: Operands, roles: list) -> Iterator[str]:
    typed = [(r, ops.typed(r)) for r in ops.roles(roles) if ops.typed(r) is not None]
    for role, x in typed[1:]:
        first, x0 = typed[0]
        if x.dtype != x0.dtype:
            yield msg(role, x, f"same dtype as {first}", f"{x0.dtype} (dtype of {first})", x.dtype)


def _check_same_dtype_size(ops: Operands, roles: list) -> Iterator[str]:
    typed = [(r, ops.typed(r)) for r in ops.roles(roles) if ops.typed(r) is not None]
    for role, x in typed[1:]:
        first, x0 = typed[0]
        if x.dtype.size_bytes != x0.dtype.size_bytes:
            yield msg(
                role,
                x,
                f"element size equal to {first}",
                f"{x0.dtype.size_bytes} bytes ({x0.dtype} of {first})",
                f"{x.dtype.size_bytes} bytes ({x.dtype})",
            )


def _equal_valid(axes: tuple, label: str):
    def check(ops: Operands, roles: list) -> Iterator[str]:
        tiles = ops.tiles(roles)
        for role, t in tiles[1:]:
            first = tiles[0][0]
            want, have = ops.valid(first), ops.valid(role)
            if any(
                want[a] is not None and have[a] is not None and want[a] != have[a] for a in axes
            ):
                yield msg(
                    role,
                    t,
                    f"{label} equal to {first}",
                    _fmt_valid(want, axes),
                    _fmt_valid(have, axes),
                )

    return check


def _extent(ops: Operands, ref):
    if isinstance(ref, int):
        return ref
    role, name = ref.split(".")
    t = ops.tile(role)
    if t is None:
        return None
    if name in ("valid_rows", "valid_cols"):
        return ops.valid(role)[name == "valid_cols"]
    return getattr(t.type, name)


def _check_equal_extents(ops: Operands, pairs: list) -> Iterator[str]:
    for lhs, rhs in pairs:
        have, want = _extent(ops, lhs), _extent(ops, rhs)
        if have is not None and want is not None and have != want:
            role = lhs.split(".")[0]
            yield msg(role, ops.get(role), f"{lhs} == {rhs}", want, have)


def _check_min_extents(ops: Operands, pairs: list) -> Iterator[str]:
    for lhs, rhs in pairs:
        have, want = _extent(ops, lhs), _extent(ops, rhs)
        if have is not None and want is not None and have < want:
            role = lhs.split(".")[0]
            yield msg(role, ops.get(role), f"{lhs} >= {rhs}", f"at least {want}", have)


def _max_valid(axes: tuple, label: str):
    def check(ops: Operands, table: dict) -> Iterator[str]:
        for role, limit in table.items():
            v = ops.valid(role)
            if any(v[a] is not None and v[a] > limit for a in axes):
                yield msg(role, ops.get(role), label, f"<= {limit}", _fmt_valid(v, axes))

    return check


def _check_positive_valid(ops: Operands, on: bool) -> Iterator[str]:
    for role, t in ops.tiles(["*"]) if on else ():
        v = ops.valid(role)
        if any(e is not None and e <= 0 for e in v):
            yield msg(role, t, "valid region", "rows > 0 and cols > 0", _fmt_valid(v, (0, 1)))


def _block_elems(t: Tile) -> int:
    return max(1, 32 // t.dtype.size_bytes)


def _check_valid_cols_in(ops: Operands, table: dict) -> Iterator[str]:
    for role, allowed in table.items():
        t = ops.tile(role)
        have = ops.valid(role)[1]
        if t is None or have is None:
            continue
        values = [_block_elems(t) if a == "block" else a for a in allowed]
        if have not in values:
            shown = ", ".join(
                f"{v} (32 bytes of {t.dtype})" if a == "block" else str(v)
                for a, v in zip(allowed, values, strict=True)
            )
            yield msg(role, t, "valid cols", f"one of {shown} on {ops.target.name}", have)


def distinct_groups(value: list) -> list[list[str]]:
    """``distinct`` is one list of roles (pairwise distinct) or a list of such lists."""
    return [list(g) for g in value] if value and not isinstance(value[0], str) else [value]


def _warn_distinct(ops: Operands, value: list, rules: dict) -> Iterator[str]:
    reason = rules.get("distinct_reason", "may compute a wrong result when they alias")
    seen = set()
    for group in distinct_groups(value):
        tiles = ops.tiles(group)
        for i, (role, t) in enumerate(tiles):
            for other, u in tiles[:i]:
                if t == u and (other, role) not in seen:
                    seen.add((other, role))
                    yield (
                        f"warning: operands {other} and {role} are the same tile ({t}): "
                        f"{ops.op} on {ops.target.name} {reason}"
                    )


def _warn_dtypes(ops: Operands, table, rules: dict) -> Iterator[str]:
    """Element types real compilers emit where the reference is silent (or names another
    type holding the same bits): ``sim.isa.verify`` lets the ``dtypes`` check accept them,
    and each use is reported with ``warn_reason``."""
    reason = rules.get("warn_reason", "is not listed by the reference")
    if not isinstance(table, dict):  # one list for every data operand: one warning
        table = {r: table for r in ops.roles(["*"])}
    for role, names in table.items():
        x = ops.typed(role)
        if x is not None and x.dtype.name in names:
            yield (
                f"warning: operand {role} ({x}): dtype {x.dtype}: "
                f"{ops.op} on {ops.target.name} {reason}"
            )
            return


def _warn_equal_valid(ops: Operands, roles: list, rules: dict) -> Iterator[str]:
    """``equal_valid`` as a warning: the hardware iterates over the destination's valid
    region and reads a source lane outside its own valid region as whatever the buffer
    holds (programming-model.md §3.5)."""
    reason = rules.get("warn_reason", "is not listed by the reference")
    for m in _equal_valid((0, 1), "valid region")(ops, roles):
        yield f"warning: {m}: {ops.op} on {ops.target.name} {reason}"


def _tmp_dtype(ops: Operands, tmp: Tile, req: dict) -> Iterator[str]:
    dst = ops.typed("dst")
    if req.get("same_dtype") and dst is not None and tmp.dtype != dst.dtype:
        yield msg("tmp", tmp, "tmp dtype", f"{dst.dtype} (dtype of dst)", tmp.dtype)
    if "dtypes" in req and tmp.dtype.name not in req["dtypes"]:
        yield msg(
            "tmp",
            tmp,
            "tmp dtype",
            f"one of {', '.join(req['dtypes'])} on {ops.target.name}",
            tmp.dtype,
        )


def _tmp_min_valid(ops: Operands, tmp: Tile, req: dict) -> Iterator[str]:
    for axis, name in enumerate(("rows", "cols")):
        bound = req.get(f"min_valid_{name}")
        if bound is None:
            continue
        need = bound if isinstance(bound, int) else ops.valid(bound)[axis]
        why = "" if isinstance(bound, int) else f" (valid {name} of {bound})"
        have = ops.valid("tmp")[axis]
        if need is not None and have is not None and have < need:
            yield msg("tmp", tmp, f"tmp valid {name}", f">= {need}{why}", have)


def _tmp_more_rows(ops: Operands, tmp: Tile, req: dict) -> Iterator[str]:
    role = req.get("more_rows_than")
    other = ops.tile(role) if role else None
    if other is not None and tmp.type.rows <= other.type.rows:
        yield msg("tmp", tmp, "tmp rows", f"> {other.type.rows} (rows of {role})", tmp.type.rows)


def _check_tmp(ops: Operands, req: dict) -> Iterator[str]:
    tmp = ops.tile("tmp")
    if tmp is None:
        return
    for part in (_tmp_dtype, _tmp_min_valid, _tmp_more_rows):
        yield from part(ops, tmp, req)


def _check_cvt_pairs(ops: Operands, pairs: dict) -> Iterator[str]:
    src, dst = ops.typed("src"), ops.typed("dst")
    if src is None or dst is None:
        return
    legal = pairs.get(src.dtype.name)
    if legal is None:
        yield msg(
            "src",
            src,
            "conversion source dtype",
            f"one of {', '.join(pairs)} on {ops.target.name}",
            src.dtype,
        )
    elif dst.dtype.name not in legal:
        yield msg(
            "dst",
            dst,
            f"conversion from {src.dtype}",
            f"one of {', '.join(legal)} on {ops.target.name}",
            dst.dtype,
        )


def _check_dtype_combos(ops: Operands, spec: dict) -> Iterator[str]:
    xs = [ops.typed(r) for r in spec["roles"]]
    if any(x is None for x in xs):
        return
    found = tuple(x.dtype.name for x in xs)
    allowed = [tuple(c) for c in spec["allowed"]]
    if found not in allowed:
        names = ", ".join(spec["roles"])
        yield msg(
            spec["roles"][0],
            xs[0],
            f"dtypes of ({names})",
            f"one of {' '.join('(' + ', '.join(c) + ')' for c in allowed)} on {ops.target.name}",
            "(" + ", ".join(found) + ")",
        )


def _check_int_input_range(ops: Operands, bounds: list) -> Iterator[str]:
    lo, hi = bounds
    dst = ops.typed("dst")
    if dst is None or not dst.dtype.is_int:
        return
    for role, x in ops.bound.items():
        if isinstance(x, Const) and not lo <= x.value <= hi:
            yield msg(
                role,
                x,
                f"{dst.dtype} input range",
                f"within [{lo}, {hi}] on {ops.target.name}",
                x.value,
            )


CHECKS = {
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
    "min_extents": _check_min_extents,
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
WARNINGS = {
    "distinct": _warn_distinct,
    "warn_dtypes": _warn_dtypes,
    "warn_equal_valid": _warn_equal_valid,
}
# high_precision (dtypes whose high-precision algorithm the target runs) and its reason
# text are read by sim.isa.precision, not checked per operand
META_KEYS = (
    "source",
    "note",
    "distinct_reason",
    "warn_reason",
    "cases",
    "high_precision",
    "high_precision_reason",
)
RULE_KEYS = tuple(CHECKS) + tuple(WARNINGS) + META_KEYS
EXTENTS = ("rows", "cols", "valid_rows", "valid_cols")
TMP_KEYS = ("same_dtype", "dtypes", "min_valid_rows", "min_valid_cols", "more_rows_than")
