"""The documentation site's sources: every page in the navigation, the command-line reference
complete, the Python examples of the guide runnable, no development history in the docs."""

import argparse
import importlib.util
import re
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HISTORY = re.compile(r"issue ?#?\d+|\bround ?\d|\bsession ?\d", re.I)


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert nav == pages


def test_cli_reference_has_every_subcommand_and_flag():
    from sim.cli.parser import build_parser

    text = _hooks().render_cli()
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(re.findall(r"^## ptosim (\w+)$", text, re.M)) == set(subs.choices)
    for name, sub in subs.choices.items():
        section = text.split(f"## ptosim {name}\n", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in section, (name, flag)


def test_include_marker_inserts_the_file_with_headings_one_level_down():
    out = _hooks().on_page_markdown("x\n<!-- include:traces/README.md -->\n", None, None, None)
    assert "\n## Trace format\n" in out and "<!-- include:" not in out


@pytest.mark.parametrize(
    "page", ["guide/kernels.md", "guide/placement.md", "guide/chip.md", "guide/traces.md"]
)
def test_guide_python_examples_run(page, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    ns: dict = {}
    for block in blocks:
        # files the examples write go to the temporary directory
        code = block.replace('"run.json"', repr(str(tmp_path / "run.json")))
        exec(compile(code, str(DOCS / page), "exec"), ns)


def test_no_development_history_in_the_docs():
    for path in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not HISTORY.search(line), f"{path.relative_to(ROOT)}:{n}: {line}"


def test_readme_is_short_and_keeps_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    tests = [line for line in text.splitlines() if ".venv/bin/python -m pytest -q" in line]
    assert len(tests) == 1  # command (b), which CI runs verbatim
    assert tests[0] in (ROOT / ".ci" / "run").read_text().splitlines()
    assert (
        "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/ptosim run "
        "examples/relu_sub.py --trace out/trace.csv --plot out/occupancy.png"
    ) in text


def test_generated_tables_have_their_markers_once_in_readme_and_docs():
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "bench" / "docs_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.check() == 0
    # and each table has a body: the generator has been run
    for rel in ("README.md", "docs/benchmarks.md"):
        text = (ROOT / rel).read_text()
        for name in ("fidelity", "speed"):
            begin, end = mod._markers(name)
            assert "|---|" in text.split(begin, 1)[1].split(end, 1)[0], (rel, name)
