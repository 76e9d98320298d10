"""Precision modes of the division and transcendental tile instructions, and the
attributes of a tile instruction the simulator understands.

The pto-isa intrinsics take a precision template argument — ``DivAlgorithm`` (TDIV,
TDIVS, TRECIP), ``ExpAlgorithm``, ``LogAlgorithm``, ``SqrtAlgorithm``, ``RsqrtAlgorithm``,
``RecipAlgorithm``, ``RemAlgorithm`` (TREM, TREMS), ``FmodAlgorithm`` / ``FmodSAlgorithm``
(TFMOD, TFMODS) — ``DEFAULT`` or ``HIGH_PRECISION`` (instructions.md §3.1, §3.4; the seed
TREM, TFMODS and TDIVS pages). PTO IR writes it as an attribute of the instruction,
``{precisionType = #pto<div_precision high_precision>}``; pto-ir-in-the-wild.md §2.8
counts the kinds real code uses: div 42, log 10, precision_mode 6 (``HIGH_PRECISION``),
exp 5, pow 4, sqrt 3, rsqrt 2, fmod, recip, rem 1 each. The front end turns such a value
into a ``Precision`` (kind and value, printed back as written); the key the value sits
under does not matter (``precisionType`` in the wild).

What a mode does is target data (``high_precision`` / ``high_precision_reason`` of the
target's ops table, ``models/<target>/ops.toml``): A2/A3 ignores the argument (the
reference: "only has effect on A5"); A5 switches f32/f16 division to an IEEE-754 routine
(TRECIP has measured fits of it) and TREM / TFMOD to their high-precision algorithms for
f32 only. ``requested`` reads the mode off an instruction, ``diagnose_attrs`` gives the
verifier's errors and warnings: a precision kind that does not belong to the op is an
error; a high-precision request the target does not honour, and any attribute the
simulator does not model, is a warning — never silently dropped.
"""

from __future__ import annotations

import re

import attrs

__all__ = [
    "Precision",
    "parse_precision",
    "requested",
    "effective",
    "diagnose_attrs",
    "KINDS",
    "HIGH",
    "DEFAULT",
    "kind_for",
    "DIVISION_OPS",
]

HIGH, DEFAULT = "high_precision", "default"

# precision kind -> the opcodes it applies to. ``precision_mode`` is the generic spelling
# (any op with a mode); ``pow_precision`` belongs to TPOW, which the simulator does not have.
KINDS = {
    "div_precision": ("TDIV", "TDIVS", "TRECIP"),
    "recip_precision": ("TRECIP",),
    "exp_precision": ("TEXP",),
    "log_precision": ("TLOG",),
    "sqrt_precision": ("TSQRT",),
    "rsqrt_precision": ("TRSQRT",),
    "rem_precision": ("TREM", "TREMS"),
    "fmod_precision": ("TFMOD", "TFMODS"),
    "pow_precision": (),
}
_WITH_MODE = tuple(dict.fromkeys(op for ops in KINDS.values() for op in ops))
KINDS["precision_mode"] = _WITH_MODE

# ops whose high-precision algorithm is an IEEE division in place of the default one
DIVISION_OPS = ("TDIV", "TDIVS", "TRECIP", "TREM", "TREMS", "TFMOD", "TFMODS")

_VALUE = re.compile(r"#pto<\s*(\w+)\s+(\w+)\s*>")


@attrs.frozen
class Precision:
    """``#pto<kind value>``: ``kind`` one of ``KINDS``, ``value`` as written
    (``high_precision``, ``HIGH_PRECISION``, ``default``)."""

    kind: str
    value: str

    @property
    def mode(self) -> str:
        """``"high_precision"`` or ``"default"`` whatever the spelling."""
        return self.value.lower()

    def __str__(self) -> str:
        return f"#pto<{self.kind} {self.value}>"


def parse_precision(text: str) -> Precision | None:
    """The Precision of an attribute value's text, None when it is no precision mode.
    Raises ValueError for a precision kind with an unknown value, and for an unknown kind
    that names a precision or is one letter or two from a known kind."""
    m = _VALUE.fullmatch(text.strip())
    if not m:
        return None
    kind, value = m.groups()
    if kind not in KINDS:
        import difflib  # only for the message: a run need not load it

        near = difflib.get_close_matches(kind, KINDS, n=1, cutoff=0.8)
        if near or "precision" in kind.lower():
            # a misspelt kind would otherwise be an attribute the simulator ignores
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(
                f"#pto<{kind} ...>: unknown precision kind {kind!r}{hint}; expected one of "
                f"{', '.join(KINDS)}"
            )
        return None
    if value.lower() not in (HIGH, DEFAULT):
        raise ValueError(f"#pto<{kind} ...>: expected high_precision or default, found {value!r}")
    return Precision(kind, value)


def kind_for(opcode: str) -> str | None:
    """The precision kind real code writes on ``opcode`` (None: the op has no mode)."""
    return next((k for k, ops in KINDS.items() if opcode in ops and k != "precision_mode"), None)


def requested(instr_attrs) -> str:
    """The precision mode an instruction's attributes ask for (``"default"`` if none)."""
    for v in dict(instr_attrs or {}).values():
        if isinstance(v, Precision):
            return v.mode
    return DEFAULT


def effective(target, opcode: str, instr_attrs, dtype: str) -> str:
    """The precision mode ``target`` runs an instruction in: ``"high_precision"`` when it is
    asked for and the target's ops table lists ``dtype`` under the op's ``high_precision``,
    else ``"default"`` (the verifier has warned about the difference)."""
    if not instr_attrs or requested(instr_attrs) != HIGH:
        return DEFAULT
    table = target.ops
    rules = {**table.get("defaults", {}), **table.get("ops", {}).get(opcode, {})}
    return HIGH if honoured(rules, dtype) else DEFAULT


def honoured(rules: dict, dtype: str) -> bool:
    """Whether a target runs ``dtype``'s high-precision algorithm (op rules ``high_precision``)."""
    return dtype in rules.get("high_precision", ())


def diagnose_attrs(opcode: str, allowed, instr_attrs, rules: dict, dtype: str, target_name: str):
    """(errors, warnings) about an instruction's attributes on a target: ``allowed`` are
    the attributes the engine reads for the op (``OpSpec.attrs_allowed``), ``rules`` the
    op's rules of the target's ops table, ``dtype`` the element type of its data."""
    errors, warnings = [], []
    precisions = [(k, v) for k, v in dict(instr_attrs or {}).items() if isinstance(v, Precision)]
    if len(precisions) > 1:
        errors.append(
            f"attributes {', '.join(k for k, _ in precisions)}: more than one precision mode"
        )
    for key, p in precisions:
        if opcode not in KINDS[p.kind]:
            where = ", ".join(KINDS[p.kind]) or "TPOW (not simulated)"
            errors.append(f"attribute {key} = {p}: {p.kind} applies to {where}, found {opcode}")
        elif p.mode == HIGH and not honoured(rules, dtype):
            reason = rules.get("high_precision_reason", f"{opcode} has no high-precision form")
            warnings.append(f"warning: {key} = {p} on {target_name} for {dtype}: {reason}")
    for key, v in dict(instr_attrs or {}).items():
        if isinstance(v, Precision) or key in allowed:
            continue
        warnings.append(
            f"warning: attribute {key} = {v} is not modelled for {opcode}: ignored "
            f"(its timing and values are those without it)"
        )
    if opcode == "TMRGSORT" and dict(instr_attrs or {}).get("exhausted") in (True, "true"):
        warnings.append(
            "warning: attribute exhausted = true is not modelled for TMRGSORT: "
            "the merge runs to the end of every list (sim/functional/sort.py)"
        )
    return errors, warnings
