"""``ptosim check``: verify every instruction of a parsed program against a target.

``sim.isa.verify.verify_program`` checks the statements of the entry function's body.
Kernels keep most of their instructions inside ``scf.for`` / ``scf.if`` / sections and in
called functions, so the check runs it over one flat function holding every statement of
every function, nested bodies included, in program order (valid extents follow the
``alloc_tile`` / ``set_validshape`` seen so far; a run-time extent is unknown and the
checks that need it are skipped). The first error is reported at its instruction:
``FILE:LINE:COL: error: <message>`` with the source line and a caret. Synchronisation
errors provable without a run (``sim.frontend.static_sync``, cross-core flags and SYNCALL:
``sim.frontend.static_ffts``) come first. The warnings start with the parser's own
(``Program.warnings``: attribute keys the simulator does not model, ``attr_keys``).
"""

from __future__ import annotations

from typing import Any

from sim.base.errors import VerifyError
from sim.frontend.diagnostics import VerifyDiagnostic, render
from sim.frontend.static_ffts import check_cross_core
from sim.frontend.static_sync import check_sync
from sim.isa.program import Call, Function, Instr, Program, SourceLoc, walk

__all__ = ["check_program"]


def _where(k: int, instr: Instr) -> str:
    # the prefix verify_program gives instruction k
    return f"instruction #{k} {instr.opcode}" + (f" ({instr.loc})" if instr.loc else "")


def _located(text: str, instrs: list, severity: str) -> tuple[SourceLoc, str] | None:
    """(loc, message without the prefix) of a verifier message, when it names a statement."""
    if not text.startswith("instruction #"):
        return None
    try:
        k = int(text[len("instruction #") :].split(" ", 1)[0])
    except ValueError:
        return None
    if not 0 <= k < len(instrs):
        return None
    instr = instrs[k]
    prefix = _where(k, instr) + ": "
    if instr.loc is None or not text.startswith(prefix):
        return None
    message = text[len(prefix) :]
    if severity == "warning":
        message = message.removeprefix("warning: ")
    return instr.loc, f"{instr.opcode}: {message}"


def check_program(program: Program, target: Any) -> list[str]:  # a loaded sim.target.Target
    """Verify ``program`` on ``target`` (a loaded Target); return the warnings, each a
    located diagnostic. Raise VerifyDiagnostic (a ParseError and a VerifyError) at the
    first illegal instruction."""
    from sim.isa.verify import verify_program

    _check_recursion(program)
    check_sync(program, target)
    check_cross_core(program, target)
    main = program.main
    others = [f for f in program.functions if f is not main]
    flat = [st for f in (main, *others) for st in walk(f.body)]
    instrs = [st for st in flat if isinstance(st, Instr)]
    flat_program = Program((Function(main.name, main.args, tuple(flat)),), main.name)
    try:
        warnings = verify_program(flat_program, target)
    except VerifyError as e:
        errors = getattr(e, "errors", None) or [str(e)]
        first = errors[0]
        hit = _located(first, instrs, "error")
        if hit is None:
            raise
        loc, message = hit
        more = len(errors) - 1
        if more:
            message += f" (and {more} more error{'s' * (more != 1)})"
        raise VerifyDiagnostic(loc.file, loc.line, loc.col or 1, message) from None
    out = list(program.warnings)  # attribute keys not modelled (attr_keys)
    for w in warnings:
        hit = _located(w, instrs, "warning")
        if hit is None:
            out.append(w)
        else:
            loc, message = hit
            out.append(render(loc.file, loc.line, loc.col or 1, message, severity="warning"))
    return out


def _check_recursion(program: Program) -> None:
    """A kernel's functions cannot call themselves, directly or through others (the AI
    core has no call stack to recurse with): reject the first call that closes a cycle."""
    calls = {f.name: [st for st in walk(f.body) if isinstance(st, Call)] for f in program.functions}
    done = set()
    for root in calls:
        if root in done:
            continue
        path, stack = [root], [iter(calls[root])]
        while stack:  # depth-first, iteratively
            call = next(stack[-1], None)
            if call is None:
                done.add(path.pop())
                stack.pop()
                continue
            if call.callee in path:
                chain = " -> ".join(
                    f"@{n}" for n in (*path[path.index(call.callee) :], call.callee)
                )
                message = (
                    f"func.call @{call.callee}: recursive call ({chain}): a kernel's "
                    f"functions cannot call themselves"
                )
                if call.loc is None:
                    raise VerifyError(message)
                raise VerifyDiagnostic(call.loc.file, call.loc.line, call.loc.col or 1, message)
            if call.callee in calls and call.callee not in done:
                path.append(call.callee)
                stack.append(iter(calls[call.callee]))
