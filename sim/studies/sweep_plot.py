"""A sweep as a heat map: one metric over two parameter axes (a matplotlib Figure, not
registered with pyplot; Jupyter shows it inline).

Each cell is one configuration of ``sim.sweep``'s DataFrame, coloured by its metric
(total cycles by default) and labelled with the value; a configuration that failed is a
grey cell marked ``failed``. An axis may combine parameters (``["rows", "cols"]`` labels
a tile shape ``16x64``). Every other column that varies must be fixed first (filter the
DataFrame), so that a cell never hides several configurations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sim.base.errors import UserError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["sweep_heatmap"]


def sweep_heatmap(
    df: pd.DataFrame,
    index: str | list[str],
    columns: str | list[str],
    value: str = "total_cycles",
    *,
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Heat map of ``value`` with ``index`` down and ``columns`` across (a column name
    or a list of them, joined with ``x``); failed configurations are grey."""
    index, columns = _names(index), _names(columns)
    missing = [c for c in [*index, *columns, value, "error"] if c not in df.columns]
    if missing:
        raise UserError(
            f"sweep_heatmap: no column {missing[0]!r} (columns: {', '.join(df.columns)})"
        )
    keys = df[index + columns].astype(str)
    if keys.duplicated().any():
        varying = [
            c
            for c in df.columns
            if c not in (*index, *columns, value, "config", "error")
            and not c.startswith(("busy_cycles[", "peak_bytes["))
            and df[c].nunique() > 1
        ]
        raise UserError(
            f"sweep_heatmap: several configurations per cell; fix or add an axis "
            f"for {', '.join(varying) or 'the duplicated rows'}"
        )
    ys = _labels(df, index)
    xs = _labels(df, columns)
    y_order, x_order = list(dict.fromkeys(ys)), list(dict.fromkeys(xs))
    grid = np.full((len(y_order), len(x_order)), np.nan)
    failed = np.zeros(grid.shape, dtype=bool)
    for y, x, v, err in zip(ys, xs, df[value], df["error"], strict=True):
        i, j = y_order.index(y), x_order.index(x)
        failed[i, j] = isinstance(err, str)
        grid[i, j] = np.nan if pd.isna(v) else float(v)
    return _draw(
        grid, failed, y_order, x_order, " x ".join(index), " x ".join(columns), value, title, ax
    )


def _names(axis) -> list[str]:
    return [axis] if isinstance(axis, str) else list(axis)


def _labels(df: pd.DataFrame, names: list[str]) -> list[str]:
    return ["x".join(str(v) for v in row) for row in df[names].itertuples(index=False)]


def _draw(grid, failed, y_order, x_order, ylabel, xlabel, value, title, ax):
    import matplotlib  # on first use: ``import sim`` stays light
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=(1.2 + 1.1 * len(x_order), 1.0 + 0.5 * len(y_order)))
        ax = fig.add_subplot(1, 1, 1)
    fig = ax.figure
    shown = np.ma.masked_invalid(grid)
    cmap = matplotlib.colormaps["viridis_r"].with_extremes(bad="#D0D0D0")
    image = ax.imshow(shown, cmap=cmap, aspect="auto")
    lo, hi = (np.nanmin(grid), np.nanmax(grid)) if np.isfinite(grid).any() else (0, 1)
    for (i, j), v in np.ndenumerate(grid):
        text = "failed" if failed[i, j] else ("" if np.isnan(v) else f"{v:,.0f}")
        dark = not failed[i, j] and np.isfinite(v) and (v - lo) > 0.5 * (hi - lo)
        ax.text(
            j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black"
        )
    ax.set_xticks(range(len(x_order)), x_order)
    ax.set_yticks(range(len(y_order)), y_order)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.colorbar(image, ax=ax, label=value)
    ax.set_title(title or f"{value} by {ylabel} and {xlabel}")
    fig.tight_layout()
    return fig
