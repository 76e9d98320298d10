"""Checking a target's ops table itself, when the target is loaded.

A rule key the verifier does not know, a role no form of the opcode has, an element type
that does not exist: each would make a rule silently never apply, so the table is checked
against ``sim.isa.rules`` and the opcode registry before any instruction is verified.
"""

from __future__ import annotations

from collections.abc import Iterator

from sim.base.errors import UserError
from sim.isa.dtypes import DTYPES
from sim.isa.opcodes import OPCODES, OpSpec
from sim.isa.rules import EXTENTS, RULE_KEYS, TMP_KEYS, distinct_groups, role_names
from sim.isa.tile import Loc

__all__ = ["check_ops_table"]


def _role_refs(key: str, value) -> list:
    if key in (
        "dtypes",
        "locs",
        "layouts",
        "max_valid",
        "max_valid_rows",
        "max_valid_cols",
        "valid_cols_in",
        "warn_dtypes",
    ):
        return list(value) if isinstance(value, dict) else []
    if key == "distinct":
        return [r for group in distinct_groups(value) for r in group]
    if key in (
        "same_dtype",
        "same_dtype_size",
        "equal_valid",
        "equal_valid_rows",
        "equal_valid_cols",
        "warn_equal_valid",
    ) or (key == "row_major" and isinstance(value, list)):
        return list(value)
    if key in ("equal_extents", "min_extents"):
        return [r.split(".")[0] for pair in value for r in pair if isinstance(r, str)]
    if key == "dtype_combos":
        return list(value["roles"])
    if key == "tmp":
        return [v for k, v in value.items() if k != "dtypes" and isinstance(v, str)]
    return []


def _dtype_refs(key: str, value) -> list:
    if key == "high_precision":
        return list(value)
    if key in ("dtypes", "warn_dtypes"):
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
        roles.update(role_names(spec.name, form.split()))
    return roles


def _table_problems(label: str, roles: set, rules: dict) -> Iterator[str]:
    locs = {loc.value for loc in Loc}
    for key, value in rules.items():
        if key not in RULE_KEYS and key != "when":
            yield f"{label}: unknown rule key {key!r}; expected one of {', '.join(RULE_KEYS)}"
            continue
        if key == "tmp":
            yield from (
                f"{label}: unknown tmp key {k!r}; expected one of {', '.join(TMP_KEYS)}"
                for k in value
                if k not in TMP_KEYS
            )
        refs = list(value) if key == "when" else _role_refs(key, value)
        yield from (
            f"{label}.{key}: unknown role {r!r}; expected one of {', '.join(sorted(roles))}"
            for r in refs
            if r not in roles
        )
        if key == "equal_extents":
            yield from (
                f"{label}.equal_extents: unknown extent {r!r}; expected role.{'|'.join(EXTENTS)}"
                for pair in value
                for r in pair
                if isinstance(r, str) and r.partition(".")[2] not in EXTENTS
            )
        yield from (
            f"{label}.{key}: unknown element type {d!r}"
            for d in _dtype_refs(key, value)
            if d not in DTYPES
        )
        if key == "locs":
            yield from (
                f"{label}.locs: unknown location {loc!r}"
                for ls in value.values()
                for loc in ls
                if loc not in locs
            )
        if key == "valid_cols_in":
            yield from (
                f"{label}.valid_cols_in: unknown extent {v!r}; expected a positive int or 'block'"
                for vs in value.values()
                for v in vs
                if v != "block" and not (isinstance(v, int) and v > 0)
            )


def check_ops_table(target) -> None:
    """Raise UserError if the target's ops table names unknown opcodes, keys, roles or types."""
    problems = [
        f"unknown top-level key {k!r}; expected defaults, ops"
        for k in target.ops
        if k not in ("defaults", "ops")
    ]
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
        for key in ("warn_dtypes", "warn_equal_valid"):
            if key in inherited and "warn_reason" not in inherited:
                problems.append(f"ops.{op}: {key} needs a warn_reason (the warning text)")
    if problems:
        raise UserError(f"{target.path / 'ops.toml'}: " + "; ".join(problems))
