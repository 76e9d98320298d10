"""Multi-core scaling: one kernel at several core counts, one row per run, and its plot.

A kernel file's ``build()`` takes the parameters that split the work over cores (for
``examples/gemm.py``: ``singleCoreM`` / ``singleCoreN``, which set ``block_dim``). Each
configuration is simulated — timing only by default — and summarised as one row:

* ``cores`` (the kernel's ``block_dim``), ``total_cycles``, ``total_us``;
* ``busy[PIPE]``: the mean over the units that have the pipe of its busy cycles / total
  (the per-engine busy ratio: ``busy[PIPE_M]`` is the cubes', ``busy[PIPE_V]`` the vector
  units');
* ``share[OPCODE]``: the mean busy ratio of an opcode over the units that run it;
* ``gm_bytes`` (bytes the chip moved to and from GM: TLOAD / TSTORE, and the cube <->
  vector FIFO pushes and pops whose data goes through GM, as on A2/A3), ``gm_gib_per_s``
  (those bytes over the run time), ``hbm_utilization`` and ``l2_hit_rate`` from the shared
  memory model.

``scaling_plot`` draws cycles, busy ratios and the GM bandwidth the chip reached against
the core count, with the HBM peak of the target (``[gm] bandwidth_gib_per_s``) — where the
bandwidth curve flattens under that line, more cores no longer buy speed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from sim.base.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    import numpy as np

    from sim.kernel.builder import Kernel
    from sim.target.model import Target


__all__ = ["scaling", "scaling_plot"]


def _kernel(kernel, params: dict):
    if callable(kernel):
        return kernel(**params)
    from sim.kernel.files import load_kernel

    return load_kernel(str(kernel), list(params.items()))


def _row(r, cores: int) -> dict:
    us = r.total_cycles / r.target.clock_hz * 1e6
    row = {"cores": cores, "total_cycles": r.total_cycles, "total_us": round(us, 3)}
    per_pipe: dict[str, list] = {}
    for u in r.units:
        for pipe, p in u["pipes"].items():
            per_pipe.setdefault(pipe, []).append(p["utilization"])
    row.update({f"busy[{p}]": round(sum(v) / len(v), 4) for p, v in sorted(per_pipe.items())})
    row.update({f"share[{op}]": v["ratio"] for op, v in r.opcodes.items()})
    mem = r.memory or {}
    t = r.trace
    fifo = t["opcode"].isin(("TPUSH", "TPOP")) & t["operands"].astype(str).str.contains(
        r"\((?:\w+_GM|GM_\w+)\)$"
    )  # the path in the row: "%t (L0C_GM)"
    moved = int(
        t.loc[(t["kind"] == "op") & (t["opcode"].isin(("TLOAD", "TSTORE")) | fifo), "bytes"].sum()
    )
    row["gm_bytes"] = moved
    row["gm_gib_per_s"] = round(moved / 2**30 / (us * 1e-6), 2) if us else 0.0
    row["hbm_utilization"] = mem.get("hbm", {}).get("utilization")
    row["l2_hit_rate"] = mem.get("l2", {}).get("hit_rate")
    return row


def scaling(
    kernel: str | Path | Callable[..., Kernel],
    configs: Iterable[Mapping[str, Any]],
    *,
    target: str | Path | Target | None = None,
    functional: bool = False,
    **simulate_kw: Any,
) -> pd.DataFrame:
    """Simulate ``kernel`` (a ``.py`` path or a ``build`` callable) once per parameter dict
    in ``configs``; one row per run, sorted by core count."""
    from sim.engine.run import simulate

    rows = []
    for params in configs:
        k = _kernel(kernel, dict(params))
        cores = int(getattr(k, "block_dim", 1))
        r = simulate(k, target or "a2a3", functional=functional, **simulate_kw)
        rows.append({**dict(params), **_row(r, cores)})
    if not rows:
        raise UserError("scaling(): configs is empty")
    return pd.DataFrame(rows).sort_values("cores", kind="stable").reset_index(drop=True)


def scaling_plot(
    df: pd.DataFrame,
    *,
    target: str | Path | Target = "a2a3",
    busy: Sequence[str] | None = None,
    ax: np.ndarray | None = None,  # the three Axes a first call returned
    label: str = "",
) -> np.ndarray:
    """Three panels over ``cores``: total cycles, per-engine busy ratios (``busy``: the
    ``busy[...]`` / ``share[...]`` columns to draw, default every ``busy[...]``), and the GM
    bandwidth reached against the target's HBM peak. Pass the ``ax`` a first call returned
    (and a ``label``) to draw a second study over it, dashed."""
    import matplotlib.pyplot as plt

    from sim.target import load_target

    first = ax is None
    if ax is None:
        _, ax = plt.subplots(1, 3, figsize=(14, 3.8))
    style, pre = ("o-" if first else "s--"), (f"{label}: " if label else "")
    x = df["cores"]
    ax[0].plot(x, df["total_cycles"], style, label=label or None)
    ax[0].set(xlabel="cores", ylabel="total cycles", title="Cycles")
    for col in busy or [c for c in df.columns if c.startswith("busy[")]:
        ax[1].plot(x, df[col], style, label=pre + col)
    ax[1].set(xlabel="cores", ylabel="busy / total", ylim=(0, 1.05), title="Per-engine busy ratio")
    ax[2].plot(x, df["gm_gib_per_s"], style, label=pre + "GM traffic reached")
    peak = load_target(target).gm.get("bandwidth_gib_per_s")
    if peak and first:
        ax[2].axhline(peak, color="grey", ls=":", label=f"HBM peak {peak:g} GiB/s")
    ax[2].set(xlabel="cores", ylabel="GiB/s", title="GM bandwidth")
    for a in ax[1:] if not label else ax:
        a.legend(fontsize=7)
    ax[0].figure.tight_layout()
    return ax
