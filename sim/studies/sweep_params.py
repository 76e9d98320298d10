"""A sweep's parameter lists, checked against the kernel before any worker starts: each
value typed as the kernel reads it (a ``.py`` kernel's ``build()`` parameters, a ``.pto``
kernel's scalar arguments, as ``--arg`` binds them), and no configuration listed twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim.base.errors import UserError

__all__ = ["typed_params", "block_counts", "listed_once"]


def typed_params(kernel: str, params: Mapping[str, Sequence[Any]]) -> dict:
    """Name -> list of values, checked against the kernel before any worker starts: a
    ``.py`` kernel's ``build()`` parameters, a ``.pto`` kernel's scalar arguments."""
    from sim.kernel.files import build_params, kernel_source, scalar_value

    values = {
        str(n): [
            x.item() if isinstance(x, np.generic) else x
            for x in (v if isinstance(v, (list, tuple, range, np.ndarray)) else [v])
        ]
        for n, v in params.items()
    }
    empty = [n for n, v in values.items() if not v]
    if empty:
        raise UserError(f"sweep: parameter {empty[0]} has no values")
    source = kernel_source(kernel)
    if callable(source):
        build_params(source, kernel, [(n, v[0]) for n, v in values.items()])
        return {
            n: [build_params(source, kernel, [(n, x)])[n] for x in v] for n, v in values.items()
        }
    from sim.isa.program import Scalar

    scalars = {a.name: a.type for a in source.main.args if isinstance(a, Scalar)}
    for n in values:
        if n not in scalars:
            known = ", ".join(f"%{s}: {t}" for s, t in scalars.items()) or "none"
            raise UserError(
                f"--param {n}: the kernel has no scalar argument %{n} (scalar arguments: {known})"
            )
    return {
        n: [scalar_value(n, x, scalars[n]) if isinstance(x, str) else x for x in v]
        for n, v in values.items()
    }


def block_counts(block_dim) -> list:
    """The blocks per launch to sweep: ``[None]`` (each kernel's own launch) when not
    given, else each a whole number >= 1 (the target's own limit is checked by the run,
    and a count past it is that configuration's error)."""
    if block_dim is None:
        return [None]
    counts = list(block_dim) if isinstance(block_dim, (list, tuple, range)) else [block_dim]
    if not counts:
        raise UserError("sweep: block_dim has no values")
    for n in counts:
        if isinstance(n, np.integer):
            n = int(n)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UserError(
                f"sweep: block_dim: expected blocks per launch, whole numbers >= 1, found {n!r}"
            )
    return [int(n) for n in counts]


def listed_once(
    values: dict, given: Mapping, targets: list, modes: list, blocks: Sequence = (None,)
) -> None:
    """Refuse a value listed twice (as the kernel reads it: ``0x10`` and ``16`` are one
    value, ``0.0`` and ``-0.0`` two): it would run one configuration twice. ``given``: the
    parameter values as written, ``values`` as typed (``typed_params``)."""
    lists = []
    for n, typed in values.items():
        written = given.get(n)
        written = list(written) if isinstance(written, (list, tuple, range)) else typed
        lists.append((f"parameter {n}", typed, written if len(written) == len(typed) else typed))
    targets = [t or "the kernel's own" for t in targets]
    lists += [
        ("block_dim", blocks, blocks),
        ("target", targets, targets),
        ("sync mode", modes, modes),
    ]
    for what, typed, written in lists:
        seen: dict = {}
        for v, text in zip(typed, written, strict=True):
            key = (type(v).__name__, repr(v))  # 1 and 1.0 and True are equal in Python
            if key in seen:
                said = (
                    f"{text} is listed twice"
                    if str(seen[key]) == str(text)
                    else f"{seen[key]} and {text} are the same value ({v!r})"
                )
                raise UserError(
                    f"sweep: {what}: {said}, which would run the same configurations "
                    f"twice; list every value once"
                )
            seen[key] = text
