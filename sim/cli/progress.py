"""A progress line on stderr for long runs.

``Progress`` is the ``progress`` callback of ``sim.engine.limits.Limits``: it receives
the items issued and the simulated cycle every few thousand items or events, and shows
them with tqdm once the run has taken longer than ``delay_s`` seconds (a short run
prints nothing); before the run of a kernel without sync, ``preparing`` shows how far
auto mode's passes have come. The line is cleared when the run ends; ``ptosim`` uses it
only when stderr is a terminal and ``--quiet`` is not given.
"""

from __future__ import annotations

import sys

__all__ = ["Progress"]


class Progress:
    def __init__(self, label: str, *, delay_s: float = 2.0, file=None):
        from tqdm import tqdm

        self._bar = tqdm(
            desc=label,
            unit=" items",
            file=file or sys.stderr,
            delay=delay_s,
            leave=False,
            dynamic_ncols=True,
        )

    def __call__(self, items: int, cycle: int) -> None:
        self._bar.set_postfix_str(f"cycle {cycle:,}", refresh=False)
        self._bar.update(items - self._bar.n)

    def preparing(self, instructions: int) -> None:
        """Before the run of a kernel without sync: the auto passes have ordered the
        hazards of ``instructions`` instructions (``sim.engine.mode``)."""
        self._bar.set_postfix_str(
            f"auto mode: sync for {instructions:,} instructions", refresh=False
        )
        self._bar.update(0)

    def close(self) -> None:
        self._bar.close()
