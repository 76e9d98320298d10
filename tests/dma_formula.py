"""The data-path cost formula of the bundled machine descriptions, for hand derivations.

A transfer of ``B`` charged bytes on a path costs ``startup_cycles + floor(B /
bytes_per_cycle)`` with ``bytes_per_cycle = bandwidth_gib_per_s * 2^30 / clock_hz``
(timing-model.md §5.1's streaming term; the start-up and rate of each path and the
evidence for them are in ``models/<target>/machine.toml``). The figures are read here
straight from the TOML file, not through the simulator's target loader, so a test that
uses them checks the simulator's arithmetic against the model data.
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "models"


@cache
def machine(target: str = "a2a3") -> dict:
    with (MODELS / target / "machine.toml").open("rb") as f:
        return tomllib.load(f)


def path_figures(path: str, target: str = "a2a3") -> tuple[float, float]:
    """(start-up cycles, bytes per cycle) of one data path."""
    m = machine(target)
    p = m["dma"]["paths"][path]
    return float(p["startup_cycles"]), p["bandwidth_gib_per_s"] * 2**30 / m["target"]["clock_hz"]


def raw_cycles(path: str, nbytes: int, target: str = "a2a3") -> float:
    """Unrounded cycles of one transfer of ``nbytes`` charged bytes."""
    start, bpc = path_figures(path, target)
    return start + math.floor(nbytes / bpc)


def dma_cycles(path: str, nbytes: int, target: str = "a2a3") -> int:
    """Cycles of one transfer, rounded half up (what one op of one copy costs)."""
    return math.floor(raw_cycles(path, nbytes, target) + 0.5)
