"""The ``ptosim`` command line.

User errors (a bad kernel, flag or file) print one line, ``ptosim: error: ...``, on
stderr and exit with code 2; they never show a traceback. Mistakes located in a ``.pto``
file print as a compiler does: ``FILE:LINE:COL: error: ...``, the source line and a caret.

The command line is three modules: ``parser`` (the commands, flags and help),
``commands`` (what each command does) and this one (``main``: errors to one line and an
exit code, a stdout that survives a closed pipe). ``outputs`` checks and writes output
files; ``progress`` draws the progress line of a long run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from sim.base.errors import UserError
from sim.cli.commands import _Interrupted
from sim.cli.parser import build_parser, declared_inputs, declared_outputs
from sim.kernel.files import printable

__all__ = ["main"]


def main(argv: Sequence[str | os.PathLike[str]] | None = None) -> int:
    process = argv is None  # the command line's own process (not a caller's, or a test's)
    argv = sys.argv[1:] if argv is None else [os.fspath(a) for a in argv]
    with _pipe_safe_stdout():
        try:
            parser = build_parser()
            if not argv:
                parser.print_help()
                raise UserError("no command given: ptosim COMMAND ... (the usage is above)")
            args = parser.parse_args(_glue_negative_values(argv))
            from sim.cli.outputs import check_outputs

            check_outputs(declared_outputs(args), declared_inputs(args))
            return args.func(args)
        except UserError as e:
            from sim.frontend import ParseError

            # a located diagnostic already reads FILE:LINE:COL: error: ...
            print(
                printable(str(e) if isinstance(e, ParseError) else f"ptosim: error: {e}"),
                file=sys.stderr,
            )
            return 2
        except MemoryError as e:  # numpy's, for absurd sizes (--arg n=2**40)
            print(
                printable(
                    f"ptosim: error: out of memory: {' '.join(str(e).split())}: "
                    f"the kernel's sizes are too large to simulate (smaller --arg "
                    f"values, or --timing-only)"
                ),
                file=sys.stderr,
            )
            return 2
        except (KeyboardInterrupt, _Interrupted) as e:
            print(printable(f"ptosim: {str(e) or 'interrupted'}"), file=sys.stderr)
            if process:
                _leave_now(130)
            return 130


def _leave_now(code: int) -> NoReturn:
    """End the process at once: after a Ctrl-C of a long run, freeing what the run built
    (millions of trace rows, access logs, per-statement caches) one object at a time took
    seconds after the message. Whatever the command writes is written by then (outputs
    are atomic), so only the standard streams need flushing."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _glue_negative_values(argv: list) -> list:
    """``--flag -16x64`` as ``--flag=-16x64``: argparse takes a value that starts with a
    dash and is not a plain number for an option, and would say "expected one argument"
    instead of checking the value."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if (
            out
            and out[-1] is not None
            and i
            and argv[i - 1].startswith("--")
            and "=" not in argv[i - 1]
            and len(a) > 1
            and a[0] == "-"
            and a[1].isdigit()
        ):
            out[-1] = f"{argv[i - 1]}={a}"
            continue
        out.append(a)
    return out


class _PipeSafe:
    """stdout that stops writing, silently, once its reader has gone (``ptosim ... | head``),
    so the command still ends with its own exit code; undecodable file-name bytes in the
    text print as U+FFFD."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:
                return self._stream.write(printable(text))
        except BrokenPipeError:
            self._detach()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._detach()

    def _detach(self):
        # nothing more reaches the reader; point the descriptor at /dev/null so the
        # interpreter's final flush does not complain either
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        self._stream = open(os.devnull, "w")

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _pipe_safe_stdout():
    real = sys.stdout
    sys.stdout = _PipeSafe(real)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = real


if __name__ == "__main__":
    sys.exit(main())
