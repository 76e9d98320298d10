"""Which bundled target a module is written for.

``module attributes {pto.target_arch = "a5"}`` (``a2``, ``a3``, ``a2a3``, ``a5``) or the
older ``{"pto.device-spec" = "Ascend910B1"}`` name the target. When both are present they
must name the same one: ``pto.target_arch = "a2a3"`` with an Ascend950 device is an error
naming both attributes, and with an explicit target (``--target``) a warning. A value no
bundled model covers is an error naming it (never a silent fallback): the caller can
override it with an explicit target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sim.base.errors import UserError
from sim.isa.program import Program, RawAttr

__all__ = ["target_from_attrs", "target_conflict", "resolve_target", "DEFAULT_TARGET"]

DEFAULT_TARGET = "a2a3"

_ARCH = {"a2": "a2a3", "a3": "a2a3", "a2a3": "a2a3", "a5": "a5"}
# device names: A2 = Ascend910B*, A3 = Ascend910_93*, A5 = Ascend950*
_DEVICES = (
    (re.compile(r"ascend910b\w*"), "a2a3"),
    (re.compile(r"ascend910_?93\w*"), "a2a3"),
    (re.compile(r"ascend950\w*"), "a5"),
)


def _text(v) -> str:
    s = v.text if isinstance(v, RawAttr) else str(v)
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def target_from_attrs(attrs: Iterable[tuple[str, Any]], where: str = "") -> str | None:
    """The bundled target named by module attributes, or None when they name none.

    Raises UserError for a value no bundled target models.
    """
    d = dict(attrs)
    prefix = f"{where}: " if where else ""
    arch = d.get("pto.target_arch")
    if arch is not None:
        value = _text(arch)
        target = _ARCH.get(value.lower())
        if target is None:
            raise UserError(
                f'{prefix}module attribute pto.target_arch = "{value}" names no '
                f"bundled target; expected one of {', '.join(_ARCH)} (or pass "
                f"--target)"
            )
        conflict = target_conflict(attrs)
        if conflict:
            raise UserError(f"{prefix}{conflict}; make them agree (or pass --target)")
        return target
    spec = d.get("pto.device-spec")
    if spec is not None:
        value = _text(spec)
        for pattern, target in _DEVICES:
            if pattern.fullmatch(value.lower()):
                return target
        raise UserError(
            f'{prefix}module attribute "pto.device-spec" = "{value}" names no '
            f"bundled target; known devices: Ascend910B* and Ascend910_93* (a2a3), "
            f"Ascend950* (a5) (or pass --target)"
        )
    return None


def _device_target(value: str) -> str | None:
    return next((t for pattern, t in _DEVICES if pattern.fullmatch(value.lower())), None)


def target_conflict(attrs) -> str | None:
    """The disagreement of ``pto.target_arch`` and ``pto.device-spec`` when both name a
    bundled target and not the same one (None when they agree, or either is absent or
    unknown)."""
    d = dict(attrs)
    arch, spec = d.get("pto.target_arch"), d.get("pto.device-spec")
    if arch is None or spec is None:
        return None
    by_arch, by_device = _ARCH.get(_text(arch).lower()), _device_target(_text(spec))
    if by_arch is None or by_device is None or by_arch == by_device:
        return None
    return (
        f'module attributes pto.target_arch = "{_text(arch)}" ({by_arch}) and '
        f'"pto.device-spec" = "{_text(spec)}" ({by_device}) name different targets'
    )


def resolve_target(program: Program, explicit: str | None = None, where: str = "") -> str:
    """Explicit target (a name or model directory) > module attributes > ``a2a3``."""
    if explicit:
        return explicit
    attrs = getattr(program, "attrs", ())
    return target_from_attrs(attrs, where) or DEFAULT_TARGET
