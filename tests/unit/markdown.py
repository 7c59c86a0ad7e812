"""Reading the repository's Markdown as GitHub renders it, for the tests that keep the docs true:
the anchors of a page's headings, a table after a marker comment, a page's relative links."""
from __future__ import annotations

import re

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lowercased, punctuation but - and _ dropped,
    spaces as -; a repeated heading gets -1, -2, ... Fenced code is not a heading."""
    out: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in out:
            n += 1
            candidate = f"{slug}-{n}"
        out.add(candidate)
    return out


def table_after(markdown: str, marker: str) -> list[dict[str, str]]:
    """The rows of the first table after `marker`, each a dict of its cells by their heading."""
    lines = markdown[markdown.index(marker):].splitlines()[1:]
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split("|")])
    head = table[0]
    return [dict(zip(head, row)) for row in table[2:]]


def relative_links(markdown: str) -> list[str]:
    """The targets of the page's links that are not URLs (paths, #anchors)."""
    return [t for t in LINK.findall(markdown) if not re.match(r"[a-z]+:", t)]
