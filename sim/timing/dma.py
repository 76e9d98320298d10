"""Cost of one transfer over a data path (DMA on MTE2 / MTE3, MTE1 loads, FIXPIPE).

A transfer pays a fixed start-up latency and then streams the bytes it is charged at
the path's bandwidth::

    cycles = startup_cycles + floor(bytes / bytes_per_cycle)          (model "flat")
    cycles = (fitted_k_bytes + bytes) / fitted_peak_bytes_per_cycle   (model "fitted")

The streaming term has the form of timing-model.md §5.1 (integer truncation). Each
path's start-up and rate in ``[dma.paths.*]`` of the target's ``machine.toml`` are one
reading of the evidence per path — the reference's tables and fits and the on-board
kernel figures — stated and tagged there (a GM path pays the GM round trip, §5.3's
measured GM->UB start-up; the GM->L1 and L1->L0 figures are fitted to an on-board
GEMM). Model "fitted" replays the reference's fitted model (§5.3) on its four paths,
its K term the start-up; the other paths keep the first form.

The two terms are kept apart: ``startup_cycles`` is latency (it does not shrink with
more bandwidth), ``stream_cycles`` is occupancy of the path's bandwidth — what a layer
that shares GM bandwidth between cores scales, and what the infinite-bandwidth what-if
removes.
"""

from __future__ import annotations

import math

from sim.timing.plan import Item

__all__ = ["startup_cycles", "stream_cycles", "transfer_cycles", "transfer_items"]


def _fitted(path, model: str) -> bool:
    return model == "fitted" and bool(path.fitted_peak_bytes_per_cycle)


def startup_cycles(path, model: str = "flat") -> float:
    """Fixed cycles of one transfer on ``path`` (a ``DmaPath``), whatever its size."""
    if _fitted(path, model):
        return (path.fitted_k_bytes or 0) / path.fitted_peak_bytes_per_cycle
    return path.startup_cycles


def stream_cycles(path, model: str, nbytes: int) -> float:
    """Cycles ``nbytes`` occupy the bandwidth of ``path``."""
    if _fitted(path, model):
        return nbytes / path.fitted_peak_bytes_per_cycle
    return math.floor(nbytes / path.bytes_per_cycle)


def transfer_cycles(path, model: str, nbytes: int) -> float:
    """Cycles of one transfer of ``nbytes`` on ``path`` (start-up + streaming)."""
    return startup_cycles(path, model) + stream_cycles(path, model, nbytes)


def transfer_items(target, path_name: str, nbytes: int, moved: int | None = None) -> list[Item]:
    """The plan items of one transfer charged ``nbytes``: the start-up (kind
    ``dma_startup``) and the bytes (kind ``dma``, carrying the bytes ``moved``, by default
    the charged ones)."""
    p = target.dma(path_name)
    model = target.dma_model
    out = [
        Item(
            "dma",
            path_name,
            cycles=stream_cycles(p, model, nbytes),
            bytes=nbytes if moved is None else moved,
        )
    ]
    start = startup_cycles(p, model)
    if start:
        out.insert(0, Item("dma_startup", f"{path_name} start-up", cycles=start))
    return out
