"""A SIGALRM guard for tests whose failure mode is a hang (an undetected deadlock)."""

from __future__ import annotations

import contextlib
import signal


@contextlib.contextmanager
def hang_guard(seconds: int):
    """Raise TimeoutError in the test if its body does not return within ``seconds``."""

    def boom(signum, frame):
        raise TimeoutError("simulation hung: deadlock not detected")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
