"""CHANGELOG.md keeps the Keep-a-Changelog form, and the package version follows it."""

import re
from pathlib import Path

from sim.base.version import __version__

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\S+))?\s*$", re.M)
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def releases() -> list[tuple[str, str | None]]:
    return [(m["name"], m["date"]) for m in HEADING.finditer(CHANGELOG.read_text())]


def test_form():
    text = CHANGELOG.read_text()
    assert text.startswith("# Changelog\n")
    heads = releases()
    assert heads, "no release headings"
    names = [n for n, _ in heads]
    # [Unreleased] only first; then released versions, newest first, each dated
    assert "Unreleased" not in names[1:]
    released = [(n, d) for n, d in heads if n != "Unreleased"]
    assert released, "no released version"
    for name, date in released:
        assert re.fullmatch(r"\d+\.\d+\.\d+", name), name
        assert date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), (name, date)
    versions = [_version(n) for n, _ in released]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    for sub in re.findall(r"^### (.+)$", text, re.M):
        assert sub in SECTIONS, sub


def test_version_follows_the_changelog():
    heads = releases()
    newest = _version(next(n for n, _ in heads if n != "Unreleased"))
    if heads[0][0] == "Unreleased":
        # the version is already the next release's number, above the newest released one
        assert _version(__version__) > newest
    else:
        assert _version(__version__) == newest


def test_no_work_item_references():
    """History is told by what changed, not by the tracker's numbers."""
    text = CHANGELOG.read_text()
    assert not re.search(r"issue ?#?\d+|\bround ?\d|\bsession ?\d", text, re.I)
