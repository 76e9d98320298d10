"""The proof's GM check across units (``sim.engine.racefree``): the proof keeps no order
between units, so it shows that no GM byte one unit writes is touched by another. Windows
are compared as the chip's detector compares them (``sim.engine.xraces._overlap``): two row
windows of one pitch exactly (two cores' column blocks of a matrix do not meet), other pairs
by their hulls."""

from __future__ import annotations

import numpy as np

from sim.engine.access import GmAccess

__all__ = ["gm_across"]

_MAX_GM_PAIRS = 1 << 26  # pairs of GM windows compared across units before it gives up
_CHUNK = 1 << 18  # pairs compared at once (bounds the memory it takes)


def gm_across(per_unit) -> bool:
    """No GM byte one unit writes is touched by another (the proof has no order between
    units). ``per_unit``: each unit's distinct GM accesses."""
    written = {a.space for accs in per_unit for a in accs if a.write}
    by_space: dict = {}
    for u, accs in enumerate(per_unit):
        for a in accs:
            if a.space in written:
                by_space.setdefault(a.space, []).append((u, a))
    for pairs in by_space.values():
        units = np.array([u for u, _ in pairs], np.int64)
        if (units == units[0]).all():
            continue
        accs = [a for _, a in pairs]
        w = np.array([a.write for a in accs], bool)
        if w.sum() * len(accs) > _MAX_GM_PAIRS:
            return False
        A, B = _windows([a for a, x in zip(accs, w, strict=True) if x]), _windows(accs)
        wu = units[w]
        step = max(1, _CHUNK // len(B))
        for i in range(0, len(A), step):
            if (_overlap(A[i : i + step], B) & (wu[i : i + step, None] != units[None, :])).any():
                return False
    return True


def _windows(accesses) -> np.ndarray:
    """Per GM access: start, end, pitch, first row, first column, rows, width — pitch 0
    where only the hull can be compared (not a row window, or a run crossing a row)."""
    out = np.zeros((len(accesses), 7), np.int64)
    for i, a in enumerate(accesses):
        p = a.pitch if type(a) is GmAccess else 0
        if p and a.start % p + a.width <= p:
            out[i] = (a.start, a.end, p, a.start // p, a.start % p, a.rows, a.width)
        else:
            out[i] = (a.start, a.end, 0, 0, 0, 0, 0)
    return out


def _overlap(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``sim.engine.xraces._overlap`` of every window of ``A`` with every one of ``B``:
    two row windows of one pitch overlap where their rows and columns both do, other
    pairs where their hulls do."""
    a, b = A[:, None, :], B[None, :, :]
    hull = (a[..., 0] < b[..., 1]) & (b[..., 0] < a[..., 1])
    exact = (a[..., 2] == b[..., 2]) & (a[..., 2] > 0)
    rect = (
        (a[..., 3] < b[..., 3] + b[..., 5])
        & (b[..., 3] < a[..., 3] + a[..., 5])
        & (a[..., 4] < b[..., 4] + b[..., 6])
        & (b[..., 4] < a[..., 4] + a[..., 6])
    )
    return hull & (rect | ~exact)
