"""The compact parts of a game record read as the tuples and dicts they replace."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from site_builder.model import GameRecord, PgnDate, Tags, Tokens

TOKEN = st.text(st.characters(blacklist_characters=" "), min_size=1, max_size=6)


@given(st.lists(TOKEN, max_size=40), st.integers(-50, 50), st.integers(-50, 50))
def test_tokens_read_as_the_tuple(items: list[str], i: int, j: int) -> None:
    want = tuple(items)
    got = Tokens(items)
    assert len(got) == len(want)
    assert tuple(got) == want
    assert got == want and got == list(want)
    assert got[i:j] == want[i:j]
    assert bool(got) == bool(want)
    if -len(want) <= i < len(want):
        assert got[i] == want[i]
    assert repr(got) == repr(want)
    back = pickle.loads(pickle.dumps(got))
    assert back == got and hash(back) == hash(got)


@given(st.dictionaries(TOKEN, st.text(max_size=20), max_size=15))
def test_tags_read_as_the_dict(tags: dict[str, str]) -> None:
    got = Tags(tags)
    assert list(got) == list(tags)  # file order
    assert dict(got.items()) == tags and got == tags
    for key, value in tags.items():
        assert got[key] == value and got.get(key) == value
    assert got.get("\x00missing") is None
    assert sorted(got.items()) == sorted(tags.items())
    assert pickle.loads(pickle.dumps(got)) == got


def test_record_takes_tuples_and_pickles() -> None:
    values: dict[str, Any] = {
        "game_id": "g1", "source": "games/a.pgn", "line": 1, "white": "A", "black": "B",
        "result": "1-0", "date": PgnDate.parse("2024.05.??"), "event": "E", "site": "S",
        "round": "1", "white_elo": 2700, "black_elo": None, "eco": "C42",
        "moves": ("e2e4", "e7e5", "g1f3"), "sans": ("e4", "e5", "Nf3"),
        "tags": {"Event": "E", "White": "A"},
    }  # fmt: skip
    record = GameRecord(**values)
    assert isinstance(record.moves, Tokens) and isinstance(record.tags, Tags)
    assert record.moves == ("e2e4", "e7e5", "g1f3") and record.plies == 3
    assert record.full_moves == 2 and record.sans[-1] == "Nf3"
    assert not hasattr(record, "__dict__")  # slots
    back = pickle.loads(pickle.dumps(record))
    assert back == record and back.tags["White"] == "A" and back.date.month == 5


def test_records_share_their_names_events_and_sites() -> None:
    """Two games of one player and event hold one object for each shared string, whether
    made from a PGN or read from two pickles (the build cache keeps a file's records in one)."""

    def record(game_id: str) -> GameRecord:
        # Strings made at run time, equal but not the same objects, as a parser makes them.
        return GameRecord(
            game_id, "games/a.pgn", 1, "".join(["Carlsen, ", "Magnus"]), "".join(["B", "x"]),
            "".join(["1", "-0"]), PgnDate.parse("2024.05.??"), "".join(["Ev", "ent 9"]),
            "".join(["Wijk ", "aan Zee"]), "".join(["1", "3"]), None, None, "".join(["C", "42"]),
            ("e2e4",), tags={"Event": "".join(["Ev", "ent 9"])},
        )  # fmt: skip

    one, two = record("g1"), record("g2")
    back = pickle.loads(pickle.dumps(one)), pickle.loads(pickle.dumps(two))
    for name in GameRecord.SHARED_STRINGS:
        assert getattr(one, name) is getattr(two, name), name
        assert getattr(back[0], name) is getattr(back[1], name) is getattr(one, name), name
    assert one.event is one.tags["Event"] and back[1] == two


def test_a_pickle_of_another_layout_is_refused_not_misread() -> None:
    """A record or ply pickled by an earlier version (its fields as a dict) must not set the
    fields to the dict's keys: it raises, and the build cache then discards the entry."""
    from site_builder.analysis.positions import Ply

    ply = Ply(0, 1, True, "", "e2e4", "e4", False, False, 20)
    assert pickle.loads(pickle.dumps(ply)) == ply
    blank = object.__new__(Ply)
    with pytest.raises(TypeError, match="another layout"):
        blank.__setstate__({"ply": 0, "move_number": 1})
    record = object.__new__(GameRecord)
    with pytest.raises(TypeError, match="another layout"):
        record.__setstate__({"game_id": "g1"})


def test_plies_and_records_pickle_their_values_and_read_the_earlier_list_layout() -> None:
    """The pickle holds the field values as a tuple; a build cache written before (the same
    values as a list, dataclass's own ``__getstate__``) reads the same."""
    from site_builder.analysis.positions import Ply

    ply = Ply(3, 2, False, "k", "g8f6", "Nf6", False, True, 29)
    assert ply.__getstate__() == (3, 2, False, "k", "g8f6", "Nf6", False, True, 29)  # type: ignore[attr-defined]
    earlier = object.__new__(Ply)
    earlier.__setstate__([3, 2, False, "k", "g8f6", "Nf6", False, True, 29])  # type: ignore[attr-defined]
    assert earlier == ply and earlier.legal == 29 and earlier.repetition
    with pytest.raises(TypeError, match="another layout"):
        object.__new__(Ply).__setstate__((3, 2, False))  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        earlier.ply = 4  # type: ignore[misc]


def test_dates_and_filled_elos_read_the_earlier_list_layout() -> None:
    """Dates and filled Elos (one or two a game, unpickled by every render worker) pickle
    their values as a tuple and read a build cache written before (a list)."""
    from site_builder.metrics.elo_fill import PlayerElo

    date = PgnDate(1972, 7, None)
    assert date.__getstate__() == (1972, 7, None)  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(date)) == date
    earlier = object.__new__(PgnDate)
    earlier.__setstate__([1972, 7, None])  # type: ignore[attr-defined]
    assert earlier == date and earlier.months == date.months and earlier < PgnDate(1972, 8)
    elo = PlayerElo(2785, "g17")
    assert pickle.loads(pickle.dumps(elo)) == elo and elo.filled
    old = object.__new__(PlayerElo)
    old.__setstate__([2785, "g17"])  # type: ignore[attr-defined]
    assert old == elo
    for blank in (object.__new__(PgnDate), object.__new__(PlayerElo)):
        with pytest.raises(TypeError, match="another layout"):
            blank.__setstate__({"year": 1972})  # type: ignore[attr-defined]
