"""Every relative link and picture in README.md and docs/*.md names a file that exists,
and every ``#anchor`` a heading of the page it points to (as GitHub makes anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The page without its code: links inside code blocks and spans are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated heading numbered (-1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
        slug = re.sub(r"[^\w\- ]", "", text.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` whose file or anchor does not exist."""
    problems = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{target}: no heading #{anchor} in {linked.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme_or_the_index() -> None:
    linked = set()
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        for target in LINK.findall(_prose(page.read_text())):
            linked.add((page.parent / target.partition("#")[0]).resolve())
    for page in (ROOT / "docs").glob("*.md"):
        assert page.resolve() in linked, f"docs/{page.name} is linked from nowhere"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text(
        "# Other page\n\n## A `code` heading, twice\n\n## A `code` heading, twice\n"
    )
    tmp_path = tmp_path.resolve()
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md) [fine](other.md#other-page) [fine](other.md#a-code-heading-twice-1)\n"
        "[fine](#page) [web](https://example.com/missing.md) `[code](missing.md)`\n"
        "```\n[in a block](missing.md)\n```\n"
        "[gone](missing.md) ![gone](pictures/missing.png) [bad anchor](other.md#nowhere)\n"
    )
    assert broken_links(page) == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        f"pictures/missing.png: no file {tmp_path / 'pictures' / 'missing.png'}",
        "other.md#nowhere: no heading #nowhere in other.md",
    ]
