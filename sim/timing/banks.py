"""UB bank conflicts: when a binary vector op pays for where its sources sit.

The reference is silent on the UB bank structure, so everything here reads the
ASSUMPTION keys of ``[buffers.UB]`` in the target's ``machine.toml``:

* ``bank_count`` banks of ``bank_bytes`` each, interleaved: byte ``a`` is in bank
  ``a // bank_bytes % bank_count``;
* a binary vector op (registry family ``"binary"``) whose two source tiles start at
  *different* addresses in the *same* bank pays ``bank_conflict_cycles_per_repeat`` extra
  cycles per repeat of its vector instructions (both operand streams want the same bank
  on every repeat, so one read waits).

The interpreter sets the ``ub_bank_conflict`` hint of ``Shape.extra`` (see
``sim.timing.hints``) and ``sim.timing.lower`` adds one ``bank`` item carrying the extra
cycles. A target without the keys has no bank conflicts.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import attrs

__all__ = ["UbBanks", "ub_banks", "bank_of", "same_bank", "HINT"]

HINT = "ub_bank_conflict"


@attrs.frozen
class UbBanks:
    count: int
    bytes: int
    conflict_cycles_per_repeat: float

    def bank(self, addr: int) -> int:
        return addr // self.bytes % self.count


@functools.lru_cache(maxsize=32)
def _read(path: Path) -> UbBanks | None:
    try:
        with (path / "machine.toml").open("rb") as f:
            ub = tomllib.load(f).get("buffers", {}).get("UB", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    if "bank_count" not in ub or "bank_bytes" not in ub:
        return None
    return UbBanks(
        int(ub["bank_count"]),
        int(ub["bank_bytes"]),
        float(ub.get("bank_conflict_cycles_per_repeat", 0)),
    )


def ub_banks(target) -> UbBanks | None:
    """The UB bank model of ``target`` (None when its machine.toml gives none)."""
    path = getattr(target, "path", None)
    return _read(Path(path)) if path is not None else None


def bank_of(target, addr: int) -> int | None:
    b = ub_banks(target)
    return None if b is None else b.bank(addr)


def same_bank(target, addr_a: int, addr_b: int) -> bool:
    """Two different UB start addresses in one bank (the conflict rule)."""
    b = ub_banks(target)
    return (
        b is not None
        and b.conflict_cycles_per_repeat > 0
        and addr_a != addr_b
        and b.bank(addr_a) == b.bank(addr_b)
    )
