"""Time-control classes: the rules of ingest/timecontrol.py and their order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from site_builder.config import TimeControlSection
from site_builder.ingest.timecontrol import DEFAULT_REASON, classify, expected_seconds, is_default

TC = TimeControlSection()


def test_fide_boundaries_on_the_timecontrol_tag() -> None:
    # FIDE: blitz 10 minutes or less (base + 60 × increment), rapid below 60 minutes.
    assert classify({"TimeControl": "600"}, TC)[0] == "blitz"
    assert classify({"TimeControl": "180+2"}, TC)[0] == "blitz"  # 300 s
    assert classify({"TimeControl": "601"}, TC)[0] == "rapid"
    assert classify({"TimeControl": "900+10"}, TC)[0] == "rapid"  # 1500 s
    assert classify({"TimeControl": "3540+0"}, TC)[0] == "rapid"
    assert classify({"TimeControl": "3600"}, TC)[0] == "classical"
    assert classify({"TimeControl": "40/7200:3600"}, TC)[0] == "classical"
    assert expected_seconds("900+10") == 1500
    assert expected_seconds("G/90") is None


def test_keywords_from_event_eventtype_and_round() -> None:
    assert classify({"Event": "World Rapid 2024"}, TC) == ("rapid", "keyword 'rapid' in event")
    assert classify({"Event": "13th Norway Armageddon"}, TC)[0] == "blitz"
    assert classify({"Event": "Open", "EventType": "swiss (blitz)"}, TC)[0] == "blitz"
    assert classify({"Event": "Wijk", "Round": "tiebreak 1"}, TC)[0] == "rapid"
    assert classify({"Event": "Clock simul Kasparov"}, TC)[0] == "rapid"
    # A keyword beats the TimeControl tag.
    assert classify({"Event": "Blitz", "TimeControl": "5400+30"}, TC)[0] == "blitz"


def test_knockout_tiebreaks_are_rapid() -> None:
    # FIDE World Cup 2023: games 1 and 2 of a mini-match are classical, 3 on are tiebreaks.
    cls, reason = classify({"Event": "FIDE World Cup 2023", "Round": "4.3"}, TC)
    assert cls == "rapid" and "tiebreak" in reason
    assert classify({"Event": "FIDE World Cup 2023", "Round": "4.2"}, TC)[0] == "classical"
    assert classify({"Event": "FIDE-Wch k.o.", "Round": "2.5"}, TC)[0] == "rapid"
    # Not a knock-out event: round 9.3 is the third board of round 9.
    assert classify({"Event": "Norway Chess", "Round": "9.3"}, TC)[0] == "classical"


def test_known_classical_events_and_the_default() -> None:
    assert classify({"Event": "45th Olympiad 2024"}, TC) == (
        "classical",
        "keyword 'olympiad' in event",
    )
    assert classify({"Event": "World Championship 13th"}, TC)[0] == "classical"
    cls, reason = classify({"Event": "New York"}, TC)
    assert cls == "classical" and reason == DEFAULT_REASON and is_default(reason)
    assert not is_default(classify({"Event": "WCh 2024"}, TC)[1])


def test_rules_are_configurable() -> None:
    rules = TimeControlSection(rapid_keywords=("active",), classical_keywords=())
    assert classify({"Event": "Active chess 1988"}, rules)[0] == "rapid"
    assert is_default(classify({"Event": "Olympiad"}, rules)[1])
    strict = TimeControlSection(knockout_classical_games=4)
    assert classify({"Event": "World Cup", "Round": "1.4"}, strict)[0] == "classical"


@given(st.dictionaries(st.sampled_from(["Event", "EventType", "Round", "TimeControl"]), st.text()))
def test_every_game_gets_a_class_and_a_reason(tags: dict[str, str]) -> None:
    cls, reason = classify(tags, TC)
    assert cls in {"classical", "rapid", "blitz"} and reason
