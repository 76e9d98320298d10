"""MkDocs hooks: what the site shows from the repository itself, so it cannot drift.

* A page line ``<!-- ptosim-cli -->`` becomes one section per subcommand holding its
  ``--help`` text, rendered from ``ptosim``'s own argument parser.
* ``<!-- include:PATH -->`` inserts a Markdown file of the repository kept beside its code
  (the trace format), its headings one level down.
* ``notebooks/*.ipynb`` are copied into the site, so pages link to them.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from pathlib import Path

MARKER = "<!-- ptosim-cli -->"
# ``<!-- include:PATH -->``: a Markdown file of the repository outside docs/ (its headings one
# level down), so a format documented beside its code is shown here without a copy
INCLUDE = re.compile(r"<!-- include:([\w./-]+) -->")
ROOT = Path(__file__).resolve().parent.parent


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


WIDTH = 80  # what a code block of the page shows without scrolling


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's and epilog's line breaks and indented examples, and wraps
    their long unindented lines, at a fixed width: the page must not depend on the
    terminal the build ran in."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in super()._fill_text(text, width, indent).splitlines():
            wrap = len(line) > width and not line[:1].isspace()
            lines += textwrap.wrap(line, width) if wrap else [line]
        return "\n".join(lines)


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = _Formatter
    return parser.format_help().rstrip()


def render_cli() -> str:
    """Markdown for the ``ptosim`` command and each of its subcommands."""
    from sim.cli.parser import build_parser

    top = build_parser()
    top.prog = "ptosim"
    parts = ["## ptosim", "", "```text", _help(top), "```", ""]
    for name, sub in _subparsers(top).items():
        parts += [f"## ptosim {name}", "", "```text", _help(sub), "```", ""]
    return "\n".join(parts)


def _include(match: re.Match) -> str:
    text = (ROOT / match.group(1)).read_text()
    return re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M)


def on_files(files, config):
    """The notebooks ship with the site as files, so the pages can link to them."""
    from mkdocs.structure.files import File

    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{nb.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render_cli())
    return INCLUDE.sub(_include, markdown)
