"""Which synchronisation mode a run uses, and the program that mode runs.

Real kernels come in two kinds. Compiler and framework output mostly carries no
``set_flag`` / ``wait_flag`` / ``pipe_barrier`` / ``record_event`` / ``wait_event`` at all:
the toolchain's auto mode (PTOAS ``--enable-insert-sync``, programming-model.md §5)
inserts them, and places the tiles that have no address. Hand-written level-3 kernels
synchronise themselves. Running the first kind as written would let a vector op start
while its TLOAD is still in flight, so the default follows the hardware:

* **auto** — the kernel has no explicit synchronisation in any function: the simulator
  inserts it with the static pass of ``sim.placement`` (``sim.placement.sync``) and the
  tiles without a constant address are placed by its liveness allocator
  (``sim.placement.alloc``); hand addresses are kept; ``func.call`` is inlined.
* **manual** — the kernel synchronises itself: it runs as written; its races are a
  warning of the run when race checking is on (``simulate(..., races="manual")``, as
  ``ptosim run`` does).
* **ideal** — the default mode's program with every wait satisfied at once and barriers
  free (the ``ideal_sync`` what-if): a lower bound, not a schedule hardware can run.

``sync=`` of ``simulate`` (``ptosim run --sync``) overrides the default. A kernel without
sync whose constructs auto mode cannot place yet (a construct the passes fail on) runs as
written, with a warning saying so and why; a placement that does not fit is an error, as
it would be for the toolchain.
"""

from __future__ import annotations

import attrs

from sim.base.errors import UserError
from sim.isa.program import Barrier, SetFlag, WaitFlag, walk

__all__ = ["SYNC_MODES", "Prepared", "has_explicit_sync", "default_mode", "prepare"]

SYNC_MODES = ("auto", "manual", "ideal")


@attrs.frozen
class Prepared:
    program: object
    mode: str  # "auto" | "manual" | "ideal"
    ideal_sync: bool = False
    warnings: tuple = ()
    # what the mode did to this kernel, when the report's usual words for the mode do not
    # hold (``Result.mode_note``): auto asked for on a kernel with its own sync, manual
    # asked for on one without
    note: str = ""


_STRIPPED = (
    "asked for: the kernel's own flags and barriers removed, flags and barriers inserted "
    "and unaddressed tiles placed by the simulator, as the toolchain's auto mode does"
)
_UNSYNCHRONISED = (
    "asked for: run as written, and the kernel has no flags or barriers of its own: "
    "nothing orders one pipe's work after another's"
)


def has_explicit_sync(program) -> bool:
    """True when any function of ``program`` has a set/wait flag (record / wait event)
    or a pipe barrier (not one of a ``pto.fence.barrier_all``)."""
    return any(
        isinstance(st, (SetFlag, WaitFlag)) or (type(st) is Barrier and not st.fence)
        for f in program.functions
        for st in walk(f.body)
    )


def default_mode(program) -> str:
    return "manual" if has_explicit_sync(program) else "auto"


def _auto(program, target, tick=None) -> Prepared:
    from sim.placement.auto import to_auto
    from sim.placement.ir import AutoUnsupported

    try:
        return Prepared(to_auto(program, target, keep_addresses=True, tick=tick), "auto")
    except AutoUnsupported as e:
        return Prepared(
            program,
            "manual",
            warnings=(
                f"warning: the kernel has no explicit synchronisation, but {e}: it runs as "
                f"written (manual mode), so its cycles may be below what hardware would run",
            ),
        )
    except UserError:
        raise
    except Exception as e:  # a construct the auto passes do not know yet: say so, run as written
        return Prepared(
            program,
            "manual",
            warnings=(
                f"warning: the kernel has no explicit synchronisation, but auto mode could not "
                f"place or synchronise it ({type(e).__name__}: {e}): it runs as written (manual "
                f"mode), so its cycles may be below what hardware would run",
            ),
        )


def prepare(program, target, sync: str | None = None, tick=None) -> Prepared:
    """The program to run for ``sync`` (None: the default rule of the module doc);
    ``tick(n)`` hears the auto passes' progress (``sim.placement.auto.plan_auto``)."""
    if sync is not None and sync not in SYNC_MODES:
        raise UserError(f"sync: expected one of {', '.join(SYNC_MODES)}, found {sync!r}")
    default = default_mode(program)
    base = default if sync in (None, "ideal") else sync
    prep = _auto(program, target, tick) if base == "auto" else Prepared(program, "manual")
    if sync is not None and base != default:
        # ran as asked for, against the kernel's kind: the report says what that meant
        note = _STRIPPED if prep.mode == "auto" else _UNSYNCHRONISED
        prep = attrs.evolve(prep, note=note if prep.mode == base else "")
    if sync == "ideal":
        return attrs.evolve(prep, mode="ideal", ideal_sync=True)
    return prep
