"""Every relative link in the README and docs/ reaches a file of the repository, and every
`#anchor` a heading of the page it names (GitHub's slugs): a link that works before publication
is one that points into the checkout."""
from __future__ import annotations

import glob
import os
import re

import pytest

from tests.server.harness import REPO

PAGES = sorted([os.path.join(REPO, "README.md"), os.path.join(REPO, "SECURITY.md"), os.path.join(REPO, "CHANGELOG.md"),
                *glob.glob(os.path.join(REPO, "docs", "*.md"))])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: str):
    in_code = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"[a-z]+:", target):
                yield number, target


def test_the_slugs_are_githubs():
    assert slug("Upgrades, certificate rotation and disruptions") == "upgrades-certificate-rotation-and-disruptions"
    assert slug("`helm test`") == "helm-test"
    assert slug("Targets: CRDs that embed the blocks") == "targets-crds-that-embed-the-blocks"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_and_anchor_exists(page):
    broken = []
    for number, target in links(page):
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            broken.append(f"{number}: {target} (no file)")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            broken.append(f"{number}: {target} (no heading)")
    assert not broken, f"{os.path.relpath(page, REPO)}: " + "; ".join(broken)
