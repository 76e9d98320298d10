"""MkDocs hook: the command-line reference is rendered from ``ptosim``'s own parser.

A page line ``<!-- ptosim-cli -->`` becomes one section per subcommand holding its
``--help`` text, so the reference cannot drift from the flags the program accepts.
"""

from __future__ import annotations

import argparse

MARKER = "<!-- ptosim-cli -->"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    # a fixed width: the page must not depend on the terminal the build ran in
    parser.formatter_class = lambda prog: argparse.RawDescriptionHelpFormatter(prog, width=88)
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


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render_cli())
    return markdown
