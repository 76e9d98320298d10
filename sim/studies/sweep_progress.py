"""The progress bar of a sweep on stderr (``sim.studies.sweep``)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``sweep  37/120 [#######.............]  2 failed  0:12`` on stderr, redrawn in place."""

    def __init__(self, total: int, done: int, enabled: bool):
        self.total, self.done, self.failed, self.enabled = total, done, 0, enabled
        self.t0 = self.shown = time.monotonic()
        self._draw()

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        self._maybe_draw()

    def skip(self) -> None:
        """A configuration already in the journal."""
        self.done += 1
        self._maybe_draw()

    def _maybe_draw(self) -> None:
        now = time.monotonic()
        if now - self.shown >= 0.1 or self.done == self.total:
            self.shown = now
            self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        secs = int(time.monotonic() - self.t0)
        failed = f"  {self.failed} failed" if self.failed else ""
        sys.stderr.write(
            f"\rsweep {self.done:>{len(str(self.total))}}/{self.total} "
            f"[{'#' * filled}{'.' * (width - filled)}]{failed}  "
            f"{secs // 60}:{secs % 60:02d}"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            sys.stderr.write("\n")
