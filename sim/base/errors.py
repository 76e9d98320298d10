"""Errors raised by pto-sim.

``UserError`` and its subclasses are mistakes in the user's input (a kernel, a
command-line flag, a CSV row). The command line prints them as one line and exits with
code 2; everything else is a bug in pto-sim and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["UserError", "VerifyError", "PlacementError", "SimulationError", "DeadlockError"]


class UserError(Exception):
    """Bad input: the message names where, the rule broken, expected and found."""


class VerifyError(UserError):
    """A program breaks a target-profile rule (dtype, layout, valid region ...)."""

    # set by the verifier when it raises: every error and warning of the instruction
    errors: list[str]
    warnings: list[str]


class PlacementError(UserError):
    """The tiles live at one time do not fit in an on-chip buffer (no address is left)."""


class SimulationError(UserError):
    """The program is well formed but cannot run (division by zero in strict mode ...)."""


class DeadlockError(SimulationError):
    """Some pipe waits for an event that can never be recorded."""

    def __init__(self, message: str, stuck: list[dict] | None = None):
        super().__init__(message)
        self.stuck = stuck or []
