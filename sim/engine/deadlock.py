"""What a deadlocked unit waits for: the entries and the sentence of a ``DeadlockError``.

A unit is stuck when the event loop has run dry with items still queued: each blocked pipe
waits on a flag whose set can no longer happen (its wait item is at the head of the pipe's
queue), or the dispatcher waits on a flag or in ``pipe_barrier(PIPE_ALL)`` for pipes that
cannot drain. The entries name the pipe, the flag, the wait item and the first instruction
queued behind it; ``describe_stuck`` turns them into the error's sentence (prefixed with the
core and unit on a chip, ``sim.engine.chip``).
"""

from __future__ import annotations

from itertools import accumulate

from sim.engine.items import BARRIER, OP

__all__ = ["describe_stuck", "stuck_entries"]


def stuck_entries(machine) -> list[dict]:
    """What keeps ``machine`` (a ``Machine``) from finishing: one dict per blocked pipe
    (``pipe``, ``waits_for`` flag text, ``wait`` item label, ``next`` op behind it,
    optional ``text`` for a full sentence)."""
    stuck = []
    for p in machine.pipes.values():
        if p.blocked is not None:
            blocked, seq = p.blocked
            queued = list(p.queue)
            seqs = accumulate(queued[1::3], initial=p.head_seq)
            next(seqs)
            behind = [
                it.label(n) for it, n in zip(queued[::3], seqs, strict=True) if it.kind == OP
            ][:1]
            stuck.append(
                {
                    "pipe": p.name,
                    "waits_for": blocked.text,
                    "wait": blocked.label(seq),
                    "next": behind[0] if behind else "",
                }
            )
    if machine.dispatch_blocked is not None:
        it, seq = machine.dispatch_blocked
        if it.kind == BARRIER:
            busy = [p.name for p in machine.pipes.values() if p.busy or p.queue]
            stuck.append(
                {
                    "pipe": "PIPE_S (dispatch)",
                    "waits_for": "",
                    "wait": it.label(seq),
                    "next": "",
                    "text": f"PIPE_S (dispatch) waits in pipe_barrier(PIPE_ALL) "
                    f"({it.label(seq)}) for {', '.join(busy)} to drain",
                }
            )
        else:
            stuck.append(
                {
                    "pipe": "PIPE_S (dispatch)",
                    "waits_for": it.text,
                    "wait": it.label(seq),
                    "next": "",
                }
            )
    return stuck


def describe_stuck(stuck, prefix: str = "") -> str:
    """The sentence a DeadlockError gives for ``Machine.stuck()`` entries (``prefix``
    names the unit on a chip); drops the ``text`` keys it used."""
    parts = []
    for s in stuck:
        if "text" in s:
            parts.append(prefix + s.pop("text"))
            continue
        msg = f"{prefix}{s['pipe']} waits for flag {s['waits_for']} ({s['wait']})"
        if s["next"]:
            msg += f" before {s['next']}"
        parts.append(msg)
    never = [s["waits_for"] for s in stuck if s["waits_for"]]
    return "; ".join(parts) + (
        f"; no set_flag for {', '.join(never)} can still happen" if never else ""
    )
