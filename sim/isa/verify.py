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

from sim.base.errors import UserError, VerifyError
from sim.isa.opcodes import OpSpec
from sim.isa.opcodes import opcode as _opcode
from sim.isa.ops_table import check_ops_table
from sim.isa.precision import diagnose_attrs
from sim.isa.program import Alloc, Const, Instr, PartView, Scalar, SetValidShape, TensorView
from sim.isa.rules import CHECKS, WARNINGS, Operands, ValidOf, msg, role_names
from sim.isa.tile import Tile

__all__ = [
    "verify_instr",
    "verify_program",
    "diagnose",
    "instr_errors",
    "op_rules",
    "bind_operands",
]


_KIND_OF_TOKEN = {"T": "tile", "T?": "tile", "S": "scalar", "V": "GM view"}


def _kind(x) -> str:
    if isinstance(x, Tile):
        return "tile"
    if isinstance(x, (Const, Scalar)):
        return "scalar"
    if isinstance(x, (PartView, TensorView)):
        return "GM view"
    return type(x).__name__


# --- operand signature --------------------------------------------------------------------


def _fits(tokens: list[str], operands: tuple) -> bool:
    required = sum(1 for t in tokens if not t.endswith("?"))
    # trailing optional tokens (``x?``) may have no operand: only the given ones are matched
    return required <= len(operands) <= len(tokens) and all(
        _KIND_OF_TOKEN[t] == _kind(x) for t, x in zip(tokens, operands, strict=False)
    )


def _signature_error(op: str, side: str, forms: list[list[str]], operands: tuple) -> str:
    for tokens in forms:
        required = sum(1 for t in tokens if not t.endswith("?"))
        if required <= len(operands) <= len(tokens):
            roles = role_names(op, tokens) if side == "ins" else ["dst"]
            # the operands given, fewer than the tokens when optional ones are left out
            for role, t, x in zip(roles, tokens, operands, strict=False):
                if _KIND_OF_TOKEN[t] != _kind(x):
                    return msg(role, x, "operand kind", f"a {_KIND_OF_TOKEN[t]}", f"a {_kind(x)}")
    listed = ", ".join(map(str, operands))
    expected = " or ".join(f"{len(t)} ({' '.join(t)})" for t in forms)
    return msg(side, listed, "operand count", expected, len(operands))


def bind_operands(spec: OpSpec, instr: Instr) -> dict[str, object] | str:
    """Role -> operand for the signature form ``instr`` matches, or the error message."""
    outs = spec.outs.split()
    if not _fits(outs, instr.outs):
        return _signature_error(spec.name, "outs", [outs], instr.outs)
    for form in spec.ins:
        tokens = form.split()
        if _fits(tokens, instr.ins):  # optional operands left out have no role
            roles = dict(zip(role_names(spec.name, tokens), instr.ins, strict=False))
            return {"dst": instr.outs[0], **roles}
    return _signature_error(spec.name, "ins", [f.split() for f in spec.ins], instr.ins)


# --- rules of an opcode on a target --------------------------------------------------------


def op_rules(target, op: str) -> dict:
    """The rules of ``op`` on ``target``: [defaults] overlaid by [ops.<op>] (cases kept)."""
    entry = target.ops.get("ops", {}).get(op)
    if entry is None:
        raise VerifyError(f"opcode {op} is not available on target {target.name}")
    return {**target.ops.get("defaults", {}), **entry}


def _matches(case: dict, ops: Operands) -> bool:
    for role, locs in case.get("when", {}).items():
        t = ops.tile(role)
        if t is None or t.loc.value not in ([locs] if isinstance(locs, str) else locs):
            return False
    return True


def _effective(rules: dict, ops: Operands) -> dict:
    merged = {k: v for k, v in rules.items() if k != "cases"}
    for case in rules.get("cases", ()):
        if _matches(case, ops):
            merged.update({k: v for k, v in case.items() if k != "when"})
    warn = merged.get("warn_dtypes")
    if warn and "dtypes" in merged:  # accepted, with a warning (rules._warn_dtypes)
        d = merged["dtypes"]
        table = dict(d) if isinstance(d, dict) else {r: d for r in ops.roles(["*"])}
        extra = warn if isinstance(warn, dict) else {r: warn for r in ops.roles(["*"])}
        for role, names in extra.items():
            if role in table:
                table[role] = [*table[role], *names]
        merged["dtypes"] = table
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
    ops = Operands(spec.name, bound, target, valid_of)
    rules = _effective(rules, ops)
    errors = [m for key, check in CHECKS.items() if key in rules for m in check(ops, rules[key])]
    warnings = [
        m for key, warn in WARNINGS.items() if key in rules for m in warn(ops, rules[key], rules)
    ]
    if instr.attrs:  # precision modes and attributes the engine does not read
        data = ops.typed("dst") or next((ops.typed(r) for r in ops.roles(["*"])), None)
        dtype = data.dtype.name if data is not None else ""
        errs, warns = diagnose_attrs(
            spec.name, spec.attrs_allowed, instr.attrs, rules, dtype, target.name
        )
        errors += errs
        warnings += warns
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


_VERDICTS: dict = {}  # (instr, target, valid regions of its tiles) -> diagnose()
_CLEAN: set = set()  # _facts of the instructions without an error or a warning
_MAX_VERDICTS = 1 << 14


def _facts(instr: Instr, target, valid_of: ValidOf) -> tuple:
    """What the checkers read of ``instr`` on ``target``, without the names only messages
    show: the opcode, the number of outputs and, per operand, its kind and — a tile — its
    type, valid region and the first operand it is the same tile as (aliasing), a GM view
    its element type, a constant its value; and the attributes (precision modes, attributes
    the engine does not read). Instructions with equal facts get equal
    verdicts up to the operand text of their messages, so one without a message answers
    for all of them. A checker that reads more of an operand must add it here
    (tests/test_verify_memo.py changes each part)."""
    key = [instr.opcode, target, len(instr.outs), instr.attrs]  # attrs: sim.isa.precision
    tiles: list = []
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
    key = (
        instr,
        target,
        *[tuple(valid_of(o)) for o in (*instr.outs, *instr.ins) if isinstance(o, Tile)],
    )
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
