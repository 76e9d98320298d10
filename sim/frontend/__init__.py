"""The PTO IR front end: ``.pto`` text <-> the program IR.

::

    from sim.frontend import parse_file, print_program
    program = parse_file("examples/row_softmax.pto")
    print(print_program(program))          # canonical text; parses back to an equal program

``parse_file`` / ``parse_text`` accept the MLIR subset real tile kernels use
(pto-ir-in-the-wild.md §4.2) and raise ``ParseError`` — a ``UserError`` whose ``str()`` is
``FILE:LINE:COL: error: ...`` followed by the source line and a caret — for syntax errors,
unsupported ops and constructs, type mismatches and malformed types. ``check_program``
runs the target verifier over every instruction (loops and regions included) and reports a
failure at its statement. ``target_from_attrs`` / ``resolve_target`` pick the bundled
target from ``pto.target_arch`` / ``pto.device-spec``.

The front end builds IR only: it imports neither the engine nor SimPy.
"""

import importlib

from sim.frontend.check import check_program
from sim.frontend.diagnostics import ParseError, VerifyDiagnostic
from sim.frontend.printer import print_program
from sim.frontend.targets import resolve_target, target_from_attrs

__all__ = [
    "parse_file",
    "parse_text",
    "print_program",
    "ParseError",
    "VerifyDiagnostic",
    "check_program",
    "resolve_target",
    "target_from_attrs",
]


def __getattr__(name: str):
    """The parser (lark and its grammar) loads on first use: a ``.py`` kernel, a check or
    a print of a built program need none of it."""
    if name in ("parse_file", "parse_text"):
        # a cached file's program needs no parser (sim.frontend.cached)
        where = "sim.frontend.cached" if name == "parse_file" else "sim.frontend.parse"
        value = getattr(importlib.import_module(where), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sim.frontend' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
