"""Cost of one transfer over a data path (DMA on MTE2 / MTE3, MTE1 loads, FIXPIPE).

A transfer pays a fixed start-up latency and then streams its bytes at the path's
bandwidth::

    cycles = startup_cycles + floor(bytes / bytes_per_cycle)          (model "flat")
    cycles = (fitted_k_bytes + bytes) / fitted_peak_bytes_per_cycle   (model "fitted")

The flat streaming term is timing-model.md §5.1 (the reference default, integer
truncation). §5.1 has no fixed term, so a 32-byte TLOAD would cost 0 cycles; the start-up
of each path is in ``[dma.paths.*] startup_cycles`` of the target's ``machine.toml`` (the
figures and their reasoning are there). The fitted model (§5.3) carries its own fixed
term, ``K / peak``; paths it has no fit for fall back to the flat form.

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


def transfer_items(target, path_name: str, nbytes: int) -> list[Item]:
    """The plan items of one transfer: the start-up (kind ``dma_startup``) and the
    bytes (kind ``dma``)."""
    p = target.dma(path_name)
    model = target.dma_model
    out = [Item("dma", path_name, cycles=stream_cycles(p, model, nbytes), bytes=nbytes)]
    start = startup_cycles(p, model)
    if start:
        out.insert(0, Item("dma_startup", f"{path_name} start-up", cycles=start))
    return out
