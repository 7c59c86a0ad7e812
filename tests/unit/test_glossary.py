"""docs/glossary.md defines the terms the docs use with a meaning of their own, each with a link
to where it is defined or used, and every link to it or from it lands on a page and a heading
that exist (issue 37)."""
from __future__ import annotations

import glob
import os
import re

from tests.unit.markdown import anchors, relative_links

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GLOSSARY = os.path.join(REPO, "docs", "glossary.md")
# The terms issue 37 found used without a definition.
NEEDED = ("mirror rule", "own policy rule", "target", "block", "building block", "dialect", "group", "gang", "member",
          "profile", "enforcement action", "ratcheting")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def terms() -> dict[str, str]:
    """Each bullet's defined terms (its bold words, split at commas), with the bullet's text."""
    out = {}
    for item in re.split(r"\n(?=- \*\*)", _read(GLOSSARY)):
        m = re.match(r"- \*\*(.+?)\*\*", item)
        if m:
            for term in re.split(r",\s*", m.group(1).replace("`", "")):
                out[term.strip().lower()] = item
    return out


def broken_links(path: str) -> list[str]:
    text, here = _read(path), os.path.dirname(path)
    out = []
    for target in relative_links(text):
        file, _, anchor = target.partition("#")
        page = os.path.normpath(os.path.join(here, file)) if file else path
        if not os.path.exists(page):
            out.append(f"{target}: no such file")
        elif anchor and page.endswith(".md") and anchor not in anchors(_read(page)):
            out.append(f"{target}: no such heading")
    return out


def test_every_needed_term_is_defined_and_every_definition_links_where_it_is_used():
    defined = terms()
    assert [t for t in NEEDED if t not in defined] == []
    assert [t for t, item in defined.items() if not relative_links(item)] == []


def test_every_link_of_the_glossary_lands_on_a_heading_that_exists():
    assert broken_links(GLOSSARY) == []


def test_every_page_that_links_the_glossary_links_it_right():
    pages = [p for p in glob.glob(os.path.join(REPO, "docs", "*.md")) + [os.path.join(REPO, "SECURITY.md"),
                                                                        os.path.join(REPO, "README.md")]
             if "glossary.md" in _read(p) and p != GLOSSARY]
    assert len(pages) >= 5, pages
    for page in pages:
        bad = [b for b in broken_links(page) if "glossary.md" in b]
        assert bad == [], (page, bad)


def test_the_anchor_reader_follows_github():
    assert anchors("# A b\n## The webhook is down\n```\n# not\n```\n### Limits (defaults; `server.*` settings)\n"
                   "## A b\n### BRG-5 the mirror\n") == {
        "a-b", "the-webhook-is-down", "limits-defaults-server-settings", "a-b-1", "brg-5-the-mirror"}
    assert broken_links(GLOSSARY) == [] and relative_links("[x](a.md#b) [y](https://e.com) [z](#c)") == ["a.md#b", "#c"]
