"""paths.old_indices: an item of a fanned-out list is matched with its stored
twin by name (first of equal names), by position when no stored item has a
name; the long-list index (_name_index) answers as the direct search does."""
from webhook.paths import FieldPath, old_indices


def _items(names):
    return {"spec": {"items": [({"name": n} if n is not None else {}) for n in names]}}


def _match(new_names, old_names, fp):
    new, old = _items(new_names), _items(old_names)
    return [old_indices(new, old, fp, (i,)) for i in range(len(new_names))]


def test_matched_by_name_short_and_long_lists_alike():
    fp = FieldPath.parse("spec.items[*].x")
    for n in (5, 200):              # below and above the index's threshold
        old_names = [f"n{i}" for i in range(n)] + ["dup", "dup"]
        new_names = list(reversed(old_names)) + ["fresh"]
        got = _match(new_names, old_names, fp)
        want = [((old_names.index(name),) if name in old_names else None) for name in new_names]
        assert got == want


def test_by_position_when_the_stored_items_have_no_names():
    fp = FieldPath.parse("spec.items[*].x")
    for n in (5, 200):
        got = _match([f"n{i}" for i in range(n)], [None] * (n - 1), fp)
        assert got == [(i,) for i in range(n - 1)] + [None]


def test_a_changed_list_is_indexed_afresh():
    fp = FieldPath.parse("spec.items[*].x")
    old = _items([f"n{i}" for i in range(50)])
    new = _items(["n7"])
    assert old_indices(new, old, fp, (0,)) == (7,)
    old2 = _items([f"n{i}" for i in range(50, 0, -1)])       # another list: never the first one's index
    assert old_indices(new, old2, fp, (0,)) == (43,)
