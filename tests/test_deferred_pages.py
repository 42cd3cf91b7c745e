"""Deferred page values: made only when their page is written, digested by their key."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from site_builder.render import charts, output
from site_builder.render.output import CHECK_KEYS, StalePageKey, write_site
from site_builder.render.tables import Column, download_pages
from site_builder.render.writer import (
    Deferred,
    Page,
    PageSet,
    commit_changes,
    made_where_rendered,
)


def _write(pages: list[Page], out: Path, old: dict[str, str]) -> tuple[dict[str, str], Path]:
    staging = out.with_name("staging")
    staging.mkdir()
    stats, digests, _sets = write_site(pages, {}, staging, {}, out, old, "shared")
    commit_changes(staging, out, stats.changed, stats.removed)
    return digests, out


def test_a_deferred_value_is_made_only_when_its_key_changes(tmp_path: Path) -> None:
    made: list[str] = []

    def table(key: str) -> Page:
        def make() -> bytes:
            made.append(key)
            return f"rows of {key}\n".encode()

        return Page("data/t.csv", "", {"bytes": Deferred(("t", key), make)})

    out = tmp_path / "out"
    digests, _ = _write([table("a")], out, {})
    assert made == ["a"] and (out / "data/t.csv").read_bytes() == b"rows of a\n"
    digests, _ = _write([table("a")], out, digests)
    assert made == ["a"]  # same key: linked from the last build, never made
    assert (out / "data/t.csv").read_bytes() == b"rows of a\n"
    _write([table("b")], out, digests)
    assert made == ["a", "b"] and (out / "data/t.csv").read_bytes() == b"rows of b\n"


def test_downloads_are_made_from_their_rows(tmp_path: Path) -> None:
    rows = [{"player": "Tal, Mihail", "q": 61.23456}, {"player": "<b>x</b>", "q": float("nan")}]
    cols = (Column("player", "Player", "name"), Column("q", "q", "quality", True))
    _d, pages = download_pages("data/q", rows, cols)
    out = tmp_path / "out"
    digests, _ = _write(pages, out, {})
    assert (out / "data/q.csv").read_text() == 'player,q\n"Tal, Mihail",61.2346\n<b>x</b>,\n'
    assert '"q": null' in (out / "data/q.json").read_text()
    # Other rows give another digest, so the files are remade.
    _d, changed = download_pages("data/q", rows[:1], cols)
    again = write_site(changed, {}, tmp_path / "s2", {}, out, digests, "shared")[1]
    assert again["data/q.csv"] != digests["data/q.csv"]


def test_figures_are_cleaned_when_written() -> None:
    fig = charts.figure([{"x": [1.234567, float("nan")], "y": [float("inf"), 2]}], {})
    assert charts.to_script_json(fig) == '{"data":[{"x":[1.2346,null],"y":[null,2]}],"layout":{}}'


def _reference_clean(value: Any) -> Any:
    """The plain recursive definition :func:`charts._clean` must agree with."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 4)
    if isinstance(value, dict):
        return {k: _reference_clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_reference_clean(v) for v in value]
    return value


_leaf = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-3000, max_value=3000),  # Elo-sized numbers with many digits
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.integers(),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)
_figures = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
    ),
    max_leaves=30,
)


# numpy rounds a float64 near the largest double by multiplying it: both definitions overflow.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@given(_figures)
@example([0.123456, (2.00005, float("nan")), {"y": [np.float64(-1.23456), None]}])
def test_figure_cleaning_agrees_with_the_plain_definition(value: Any) -> None:
    assert json.dumps(charts._clean(value), sort_keys=True) == json.dumps(
        _reference_clean(value), sort_keys=True
    )


def test_a_page_set_is_made_only_when_its_key_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def player(key: str, text: str) -> PageSet:
        def make() -> list[Page]:
            made.append(key)
            return [Page("players/a.csv", "", {"bytes": text.encode()})]

        return PageSet("player|a", ("games", key), make)

    out, staging = tmp_path / "out", tmp_path / "staging"
    stats, digests, sets = write_site([player("1", "x")], {}, staging, {}, out, {}, "s")
    commit_changes(staging, out, stats.changed, stats.removed)
    assert made == ["1"] and stats.sets_reused == 0 and sets["player|a"][1] == ["players/a.csv"]
    stats, digests, sets = write_site(
        [player("1", "x")], {}, staging, {}, out, digests, "s", None, sets
    )
    commit_changes(staging, out, stats.changed, stats.removed)
    assert made == ["1"] and stats.sets_reused == 1 and stats.pages == 1
    assert (out / "players/a.csv").read_bytes() == b"x"
    # A key that misses an input: the check mode finds the changed page.
    monkeypatch.setenv(CHECK_KEYS, "1")
    with pytest.raises(StalePageKey, match=r"players/a\.csv"):
        write_site([player("1", "y")], {}, staging, {}, out, digests, "s", None, sets)


def test_a_remade_page_set_renders_its_pages_without_digesting_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = jinja2.Environment(loader=jinja2.DictLoader({"p.html": "<p>{{ text }}</p>"}))
    digested: list[object] = []
    real = output._inputs_digest

    def counting(inputs: object, shared: str) -> str | None:
        digested.append(inputs)
        return real(inputs, shared)

    monkeypatch.setattr(output, "_inputs_digest", counting)

    def player(key: str, text: str) -> PageSet:
        def make() -> list[Page]:
            return [
                Page("players/a.html", "p.html", {"text": text}),
                Page("players/a.csv", "", {"bytes": text.encode()}),
            ]

        return PageSet("player|a", ("games", key), make)

    out, staging = tmp_path / "out", tmp_path / "staging"

    def build(
        item: PageSet, digests: dict[str, str], sets: dict[str, tuple[str, list[str]]]
    ) -> tuple[dict[str, str], dict[str, tuple[str, list[str]]]]:
        stats, digests, sets = write_site(
            [item], {}, staging, {}, out, digests, "s", None, sets, env
        )
        commit_changes(staging, out, stats.changed, stats.removed)
        return digests, sets

    digests, sets = build(player("1", "x"), {}, {})
    # The set's key and the CSV's context are digested, the HTML page's context is not.
    assert len(digested) == 2
    assert (out / "players/a.html").read_text() == "<p>x</p>"
    digests, sets = build(player("2", "y"), digests, sets)
    assert (out / "players/a.html").read_text() == "<p>y</p>"
    # Reused by its key; in the check mode, an unchanged key with other HTML is found.
    digests, sets = build(player("2", "y"), digests, sets)
    monkeypatch.setenv(CHECK_KEYS, "1")
    build(player("2", "y"), digests, sets)
    with pytest.raises(StalePageKey, match=r"players/a\.html"):
        build(player("2", "z"), digests, sets)


def test_a_game_fragment_is_rendered_once_and_kept(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from site_builder.incremental import BuildCache
    from site_builder.render import core_pages

    rendered: list[str] = []

    def context() -> dict[str, object]:
        rendered.append("moves")
        return {"moves": [{"number": "1.", "san": "<e4>"}]}

    def fragment(site) -> str:  # type: ignore[no-untyped-def]
        html = core_pages._fragment(site, "partials/game_moves.html", "game-1", "game-key", context)
        core_pages.store_fragments(site)  # as the build does after writing the site
        return str(html)

    with BuildCache(tmp_path / "memo") as memo:
        site = dataclasses.replace(
            small_site,
            cache=dataclasses.replace(small_site.cache, store=memo),
            state=dataclasses.replace(small_site.state, templates="t1", new_fragments={}),
        )
        first = fragment(site)
        assert "&lt;e4&gt;" in first and rendered == ["moves"]
        again = dataclasses.replace(
            small_site,
            cache=dataclasses.replace(small_site.cache, store=memo),
            state=dataclasses.replace(small_site.state, templates="t1", new_fragments={}),
        )
        assert fragment(again) == first and rendered == ["moves"]  # read, not rendered
        changed = dataclasses.replace(
            small_site,
            cache=dataclasses.replace(small_site.cache, store=memo),
            state=dataclasses.replace(small_site.state, templates="t2", new_fragments={}),
        )
        assert fragment(changed) == first and rendered == ["moves", "moves"]


def _site_items(version: str) -> list[Page | PageSet]:
    """Page sets (closures: they cannot be sent to a process, only inherited by a fork),
    templated pages and downloads; ``version`` changes every third player."""
    items: list[Page | PageSet] = []
    for i in range(24):
        text = f"{i}{version if i % 3 == 0 else ''}"

        def make(i: int = i, text: str = text) -> list[Page]:
            return [
                Page(f"players/{i}.html", "p.html", {"text": text}),
                Page(f"data/{i}.csv", "", {"bytes": Deferred(("csv", text), text.encode)}),
            ]

        items.append(PageSet(f"player|{i}", ("games", text), make))
    items += [Page(f"lists/{j}.html", "p.html", {"text": f"list {j}{version}"}) for j in range(5)]
    return items


def test_worker_processes_write_the_same_site_as_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = jinja2.Environment(loader=jinja2.DictLoader({"p.html": "<p>{{ text }}</p>"}))
    parent = os.getpid()
    pids: list[set[int]] = []
    hooks = output.WorkerHooks(start=lambda: None, harvest=os.getpid, absorb=pids.append)

    def build(version: str, workers: int, out: Path, old: Any) -> tuple[Any, ...]:
        staging = out.with_name(out.name + ".staging")
        stats, digests, sets = write_site(
            _site_items(version),
            {},
            staging,
            {},
            out,
            old[0],
            "shared",
            old_sets=old[1],
            env=env,
            workers=workers,
            hooks=hooks,
        )
        commit_changes(staging, out, stats.changed, stats.removed)
        files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.*")}
        return (stats, digests, sets, files)

    for workers in (1, 3):
        out = tmp_path / f"out{workers}"
        first = build("a", workers, out, ({}, None))
        second = build("b", workers, out, (first[1], first[2]))
        if workers == 1:
            one = (first, second)
    assert (first, second) == one  # stats, digests, page-set keys and every byte
    assert second[0].sets_reused == 16 and len(second[0].changed) == 8 * 2 + 5
    assert any(pid != parent for pid in pids)  # worker processes did take shares
    # A stale key found in a worker is raised in the parent.
    monkeypatch.setenv(CHECK_KEYS, "1")
    changed = _site_items("b")
    changed[1] = PageSet(
        "player|1",
        ("games", "1"),
        lambda: [
            Page("players/1.html", "p.html", {"text": "z"}),
            Page("data/1.csv", "", {"bytes": b"1"}),
        ],
    )
    with pytest.raises(StalePageKey, match=r"player\|1"):
        write_site(
            changed, {}, tmp_path / "s", {}, out, second[1], "shared", None, second[2], env, 3
        )


def test_pages_made_where_rendered_are_made_each_build_and_kept_by_their_digest(
    tmp_path: Path,
) -> None:
    """A family's pages as one item (issue 17): made only by the process that writes them,
    in every build; a page whose context is unchanged is kept, not rendered; no set key is
    recorded for the next build."""
    env = jinja2.Environment(loader=jinja2.DictLoader({"p.html": "<p>{{ text }}</p>"}))
    made: list[str] = []

    def family(text: str) -> PageSet:
        def make() -> list[Page]:
            made.append(text)
            return [Page("list.html", "p.html", {"text": text}), Page("other.html", "p.html", {})]

        return made_where_rendered("family|lists", make)

    out, staging = tmp_path / "out", tmp_path / "staging"
    digests: dict[str, str] = {}
    for builds, (text, rendered) in enumerate((("a", 3), ("a", 0), ("b", 1))):
        items = [family(text), Page("x.html", "p.html", {"text": "x"})]
        assert len(made) == builds  # the item does not make its pages
        stats, digests, sets = write_site(items, {}, staging, {}, out, digests, "s", None, {}, env)
        commit_changes(staging, out, stats.changed, stats.removed)
        assert stats.rendered == rendered and stats.pages == 3 and sets == {}
    assert made == ["a", "a", "b"]
    assert (out / "list.html").read_text() == "<p>b</p>"
    assert (out / "other.html").read_text() == "<p></p>"
