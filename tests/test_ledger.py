"""render.ledger: the last build's page digests, page-set keys and files, held as hashed
arrays (issue 17: at 30x the demo the dicts took 0.25 GB in each render process), read
exactly as the dicts and sets they replace."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.render.ledger import PageDigests, PageSetKeys, PathSet

_PATHS = st.text(
    alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
)
_DIGESTS = st.sampled_from(["", "0" * 40, "a1" * 20, "set " + "f" * 40, "é"])


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(_PATHS, _DIGESTS, max_size=25), st.lists(_PATHS, max_size=5))
def test_page_digests_read_as_the_dict(digests: dict[str, str], others: list[str]) -> None:
    table = PageDigests(digests)
    assert len(table) == len(digests) and table == digests
    assert sorted(table) == sorted(digests)
    for path, value in digests.items():
        assert path in table and table[path] == value and table.get(path) == value
    for path in others:
        if path not in digests:
            assert path not in table and table.get(path) is None and table.get(path, "x") == "x"
    again = pickle.loads(pickle.dumps(table))
    assert again == table
    # Split in two and joined: the same table.
    items = sorted(digests.items())
    half = len(items) // 2
    joined = PageDigests.joined([PageDigests(items[:half]), PageDigests(items[half:])])
    assert joined == table and sorted(joined) == sorted(digests)
    if digests:
        assert table != {**digests, next(iter(digests)): "changed"}


@settings(max_examples=80, deadline=None)
@given(
    st.dictionaries(
        _PATHS,
        st.tuples(_DIGESTS, st.lists(_PATHS, max_size=4).map(sorted)),
        max_size=20,
    )
)
def test_page_set_keys_read_as_the_dict(sets: dict[str, tuple[str, list[str]]]) -> None:
    table = PageSetKeys(sets)
    assert len(table) == len(sets) and table == sets
    assert sorted(table.paths()) == sorted(p for _, paths in sets.values() for p in paths)
    for name, (key, paths) in sets.items():
        assert name in table and table.get(name) == (key, paths) and table[name] == (key, paths)
    assert pickle.loads(pickle.dumps(table)) == table
    items = sorted(sets.items())
    half = len(items) // 2
    joined = PageSetKeys.joined([PageSetKeys(items[:half]), PageSetKeys(items[half:])])
    assert joined == table
    assert PageSetKeys.joined([]) == {} and PageSetKeys() == {}


@settings(max_examples=80, deadline=None)
@given(st.sets(_PATHS, max_size=25), st.lists(_PATHS, max_size=5))
def test_path_set_reads_as_the_set(paths: set[str], others: list[str]) -> None:
    held = PathSet(paths)
    assert len(held) == len(paths) and set(held) == paths
    assert all(p in held for p in paths)
    assert all((p in held) == (p in paths) for p in others)
    assert set(pickle.loads(pickle.dumps(held))) == paths
