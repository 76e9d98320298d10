"""Source diagnostics: ``FILE:LINE:COL: error: MESSAGE`` + the source line + a caret.

Every mistake the ``.pto`` front end finds — a syntax error, an op it does not support, a
type mismatch, a verifier failure mapped back to its statement — is a ``ParseError``
(a ``UserError``: the command line prints it and exits with code 2, never a traceback).
"""

from __future__ import annotations

from pathlib import Path

from sim.base.errors import UserError, VerifyError

__all__ = ["ParseError", "VerifyDiagnostic", "render", "remember_source", "source_line", "unmarked"]

# Text of recently parsed sources, by file name, so a later diagnostic (the verifier's)
# can show the line even for text that never was a file.
_SOURCES: dict[str, str] = {}
_MAX_SOURCES = 64


def remember_source(filename: str, text: str) -> None:
    _SOURCES.pop(filename, None)
    _SOURCES[filename] = text
    while len(_SOURCES) > _MAX_SOURCES:
        _SOURCES.pop(next(iter(_SOURCES)))


def source_line(filename: str, line: int) -> str | None:
    """Line ``line`` (1-based) of ``filename``: remembered text first, then the file."""
    text = _SOURCES.get(filename)
    if text is None:
        try:
            text = Path(filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


# A source line longer than this is shown as the window of this many characters around
# the caret (a generated kernel may put thousands of characters on one line).
MAX_SHOWN = 200


def render(
    filename: str,
    line: int,
    col: int,
    message: str,
    text: str | None = None,
    severity: str = "error",
) -> str:
    """The full diagnostic: header, source line and a caret under column ``col``."""
    head = f"{filename}:{line}:{col}: {severity}: {message}"
    if text is not None:
        lines = text.splitlines()
        src = lines[line - 1] if 0 < line <= len(lines) else None
    else:
        src = source_line(filename, line)
    if src is None:
        return head
    col = max(1, min(col, len(src) + 1))
    if len(src) > MAX_SHOWN:  # a long line: the window around the caret
        start = max(0, min(col - 1 - MAX_SHOWN // 2, len(src) - MAX_SHOWN))
        left, right = "... " if start else "", " ..." if start + MAX_SHOWN < len(src) else ""
        src = left + src[start : start + MAX_SHOWN] + right
        col += len(left) - start
    # keep tabs so the caret lines up in a terminal
    pad = "".join(c if c == "\t" else " " for c in src[: col - 1])
    return f"{head}\n{src}\n{pad}^"


class ParseError(UserError):
    """A located mistake in PTO IR text; ``str()`` is the whole diagnostic.

    Attributes: ``file``, ``line``, ``col`` (1-based) and ``message`` (the bare text after
    ``error:``).
    """

    def __init__(self, filename: str, line: int, col: int, message: str, text: str | None = None):
        self.file, self.line, self.col, self.message = filename, line, col, message
        super().__init__(render(filename, line, col, message, text))


class VerifyDiagnostic(ParseError, VerifyError):
    """A verifier failure (``ptosim check``) reported at the statement it concerns."""


def unmarked(text: str) -> str:
    """``text`` without a UTF-8 byte order mark."""
    return text[1:] if text.startswith("\ufeff") else text
