"""Every class of webhook/ has a name of its own (issue 38: two Admission, Kind, Reader,
Report and Store were one grep away from the wrong one)."""
import ast
import collections
import os

from tests.server.harness import REPO


def test_no_two_classes_of_the_package_share_a_name():
    where = collections.defaultdict(list)
    for root, _, files in os.walk(os.path.join(REPO, "webhook")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                for node in tree.body:
                    if isinstance(node, ast.ClassDef):
                        where[node.name].append(os.path.relpath(path, REPO))
    assert len(where) > 50
    assert {n: paths for n, paths in where.items() if len(paths) > 1} == {}
