# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""README.md is a quick start: at most 300 lines, showing how to try the collection (make lab), how to
test it (make test, molecule test) and the commands it is used by, as typed; details live in docs/, and
every relative link of the README and of the pages it moved text to leads to a file and heading there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from checkout import REPO

MAX_LINES = 300
COMMANDS = (
    "make lab",
    "make test",
    "molecule test",
    "ansible-playbook site.yml -i",
    "ansible-galaxy collection install",
)
LINKED_DOCS = ("README.md", "docs/operations.md", "docs/troubleshooting.md")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(path: str) -> list[str]:
    """The relative links of `path` whose file or heading does not exist."""
    source = REPO / path
    broken = []
    for target in LINK_RE.findall(source.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _hash, anchor = target.partition("#")
        linked = (source.parent / file_part).resolve() if file_part else source
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.MULTILINE)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    return broken


def test_the_readme_is_a_quick_start() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= MAX_LINES, f"README.md: over {MAX_LINES} lines; move details into docs/"
    assert [c for c in COMMANDS if c not in text] == []


@pytest.mark.parametrize("path", LINKED_DOCS)
def test_every_relative_link_leads_somewhere(path: str) -> None:
    assert broken_links(path) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    assert slug("Try it: `make lab`") == "try-it-make-lab"
    assert broken_links("docs/operations.md") == []  # the real page, then a copy with two bad links
    page = REPO / "docs" / "operations.md"
    text = page.read_text() + "\n[a](no-such.md) [b](troubleshooting.md#no-such-heading) [c](https://x.invalid)\n"
    copy = REPO / "docs" / f".test-readme-{tmp_path.name}.md"
    copy.write_text(text)
    try:
        assert broken_links(str(copy.relative_to(REPO))) == ["no-such.md", "troubleshooting.md#no-such-heading"]
    finally:
        copy.unlink()
