"""The one mechanism behind player and game page keys: a family's blocks are made from its
view alone, and a view is digested by exactly what it holds (``render/views.py``)."""

from __future__ import annotations

import inspect
import pickle

import pandas as pd
import pytest

from site_builder.families import metric_families
from site_builder.render import edition_pages
from site_builder.render.views import PlayerYears, Rows, columns_except
from site_builder.render.writer import Digested


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "player": ["A", "B", "A"],
            "game_id": ["g1", "g1", "g2"],
            "q": [51.5, 48.0, 60.25],
            "order": [3, 4, 7],
        }
    )


def test_blocks_are_made_from_the_view_alone() -> None:
    """Every hook that makes a player's or a game's blocks or downloads takes one argument,
    the view, and every family with such blocks gathers a view: nothing a block shows can
    come from outside the view (and so from outside the page key)."""
    checked = 0
    for fam in metric_families():
        for view, made in (
            (fam.player_view, (fam.player_sections, fam.player_files)),
            (fam.game_view, (fam.game_sections,)),
        ):
            hooks = [h for h in made if h is not None]
            assert bool(hooks) == (view is not None), fam.name
            if view is not None:
                assert list(inspect.signature(view).parameters)[:1] == ["site"], fam.name
            for hook in hooks:
                params = list(inspect.signature(hook).parameters)
                assert len(params) == 1 and params != ["site"], (fam.name, hook.__name__)
                checked += 1
    assert checked >= 9  # six families' player blocks, three families' game blocks


def test_rows_are_digested_by_the_rows_they_show() -> None:
    frame = _frame()
    shown = ("player", "game_id", "q")
    a = Rows(frame, "player", "A", shown)
    assert [r["q"] for r in a.records()] == [51.5, 60.25]
    assert len(a) == 2 and len(Rows(frame, "player", "Z", shown)) == 0
    assert a.values("game_id") == ["g1", "g2"]
    # A column left out is neither read nor digested.
    with pytest.raises(KeyError):
        a.records()[0]["order"]
    moved = frame.assign(order=[30, 40, 70])
    assert Digested(a).sha == Digested(Rows(moved, "player", "A", shown)).sha
    # A shown value, another player's row or the rows' order are.
    for changed in (
        frame.assign(q=[51.5, 48.0, 60.5]),
        frame.iloc[[2, 1, 0]],
    ):
        assert Digested(a).sha != Digested(Rows(changed, "player", "A", shown)).sha
    b = Digested(Rows(frame, "player", "B", shown)).sha
    assert b == Digested(Rows(frame.assign(q=[51.5, 48.0, 61.0]), "player", "B", shown)).sha
    # Pickled as its hashes, never as the frame it reads.
    assert len(pickle.dumps(a)) < 200
    assert columns_except(frame, ("order",)) == shown


def test_rows_of_every_column_are_rounded_as_shown_too() -> None:
    frame = _frame()
    a = Rows(frame, "player", "A", digits=(("q", 0),))
    assert [r["q"] for r in a.records()] == [52.0, 60.0]
    below = frame.assign(q=[51.6, 48.0, 60.4])  # the same to the digit shown
    assert Digested(a).sha == Digested(Rows(below, "player", "A", digits=(("q", 0),))).sha
    past = frame.assign(q=[52.6, 48.0, 60.25])
    assert Digested(a).sha != Digested(Rows(past, "player", "A", digits=(("q", 0),))).sha


def test_a_view_of_a_rating_by_year() -> None:
    summary = pd.DataFrame({"player": ["A"], "ipr": [2700.0]})
    years = pd.DataFrame({"player": ["A", "A"], "year": [2020, 2021], "ipr": [2650.0, 2710.0]})
    view = PlayerYears.of("A", "", summary, years, "data/players/a-ipr-years")
    assert view is not None and [y["year"] for y in view.years.records()] == [2020, 2021]  # type: ignore[union-attr]
    assert PlayerYears.of("Z", "", summary, years, "base") is None
    # A status (the family n/a for everyone) is shown to every player, listed or not.
    na = PlayerYears.of("Z", "n/a: no calibration", summary, years, "base")
    assert na is not None and na.status and na.years is None


def test_a_new_edition_changes_the_view_of_a_player_it_does_not_list() -> None:
    """The player's table has a row per edition: a new edition must change the page's key
    even for a player the edition does not list (a real bug of the hand-kept inputs)."""
    found = {"elo": [("2024-01-01", 3, 2712.5)]}
    before = edition_pages.PlayerView("A", ("2024-01-01",), found)
    after = edition_pages.PlayerView("A", ("2024-01-01", "2024-04-01"), found)
    assert Digested(before).sha != Digested(after).sha
    rows = edition_pages.player_sections(after)[0].context["rows"]
    assert [r["label"] for r in rows] == ["Apr 2024", "Jan 2024"]
    assert rows[0]["cells"] == [None]


def test_a_value_digested_and_not_held_pickles_as_one_held() -> None:
    """A game's row in page keys is kept as its digest only (``Digested.only_digest``): the
    same key as the row itself would give, without the row."""
    row = {"game_id": "g1", "white": "A", "black": "B", "moves": 41, "elo": None}
    kept = Digested.only_digest(dict(row))
    assert kept.value is None
    assert kept.sha == Digested(row).sha
    assert pickle.dumps(kept) == pickle.dumps(Digested(row))
