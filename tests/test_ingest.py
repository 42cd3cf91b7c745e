"""Reading PGN: encodings, broken games, duplicates, aliases, line numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.config import TimeControlSection
from site_builder.errors import ConfigError
from site_builder.ingest.names import AliasTable, tidy
from site_builder.ingest.pgn import decode_pgn, read_collection, read_file, split_games
from site_builder.ingest.timecontrol import classify, expected_seconds

TC = TimeControlSection()


def read(path: Path, aliases: AliasTable | None = None):
    return read_file(path, path.name, aliases or AliasTable({}), TC)


def test_utf8_bom_is_read(data_dir: Path) -> None:
    games, problems = read(data_dir / "fixtures/pgn-edge-cases/utf8-bom.pgn")
    # Both games have no moves: skipped with a reason, not a crash.
    assert games == []
    assert [p.reason for p in problems] == ["the game has no moves"] * 2
    assert problems[0].line == 1


def test_chessbase_blank_line_inside_tags(data_dir: Path) -> None:
    games, problems = read(data_dir / "fixtures/pgn-edge-cases/chessbase-empty-line.pgn")
    assert len(games) == 1 and problems == []
    assert games[0].white == "Stockfish 8" and games[0].black == "AlphaZero"
    assert games[0].plies > 100


def test_uci_moves_are_read(data_dir: Path) -> None:
    games, problems = read(data_dir / "fixtures/pgn-edge-cases/uci-moves.pgn")
    assert len(games) == 1 and problems == []
    assert games[0].moves[:2] == ("g1f3", "c7c5")


@pytest.mark.parametrize(
    "name",
    ["antichess-programfox.pgn", "cutechess-fischerrandom.pgn", "saturs-jannlee-zh-lichess.pgn"],
)
def test_variants_are_skipped_with_reason(data_dir: Path, name: str) -> None:
    games, problems = read(data_dir / "fixtures/pgn-edge-cases" / name)
    assert games == []
    assert problems and all("not standard chess" in p.reason for p in problems)


def test_crlf_and_blank_line_inside_moves(data_dir: Path) -> None:
    games, problems = read(data_dir / "broken/crlf-blank-line.pgn")
    assert len(games) == 2
    assert [(p.line, p.reason) for p in problems] == [
        (1, "blank line inside the moves; read as one game")
    ]
    # The blank line did not cut game 1: it runs to its real end.
    assert games[0].plies > 60
    assert games[0].white_elo is None and games[0].black_elo is None
    assert games[1].line > games[0].line


def test_latin1_file_is_read_with_a_warning(data_dir: Path) -> None:
    games, problems = read(data_dir / "broken/latin1.pgn")
    assert len(games) == 1
    assert "Hérmann" in games[0].white + games[0].black
    assert problems[0].severity == "warning" and "Latin-1" in problems[0].reason


def test_broken_games_are_reported_and_good_ones_kept(data_dir: Path) -> None:
    games, problems = read(data_dir / "broken/broken-moves.pgn")
    reasons = {p.line: p.reason for p in problems}
    assert len(games) == 2  # the good game and the (in-file) duplicate candidate
    # "Qxz9" is no move at all; python-chess drops it and then meets Black's 'e5' as White.
    assert reasons[1].startswith("moves could not be read: illegal san: 'e5'")
    assert any("set-up position" in r for r in reasons.values())
    assert any("variant 'Atomic'" in r for r in reasons.values())
    assert all(p.line > 0 and p.source == "broken-moves.pgn" for p in problems)
    assert all("–" in p.game for p in problems)


def test_collection_dedupes_and_applies_aliases(data_dir: Path) -> None:
    aliases = AliasTable.load(data_dir / "broken/aliases.toml")
    result = read_collection(data_dir / "broken", aliases, TC)
    dupes = [p for p in result.problems if p.severity == "duplicate"]
    assert len(dupes) == 2
    # Files are read in sorted order: the copy in broken-moves.pgn comes first.
    assert (dupes[0].source, dupes[0].line) == ("crlf-blank-line.pgn", 1)
    assert "same game as broken-moves.pgn line" in dupes[0].reason
    # The UTF-16 copy of latin1.pgn's game is read as the same game.
    assert (dupes[1].source, dupes[1].reason) == (
        "utf16.pgn",
        "same game as latin1.pgn line 1; counted once",
    )
    players = {g.white for g in result.games} | {g.black for g in result.games}
    assert players == {"Steinitz, William", "Zukertort, Johannes Hermann"}
    assert len(result.games) == 6
    ids = [g.game_id for g in result.games]
    assert len(ids) == len(set(ids))


def test_alias_table() -> None:
    table = AliasTable({"Carlsen, M.": "Carlsen, Magnus", "Magnus Carlsen": "Carlsen, Magnus"})
    assert table.canonical("Carlsen,  M.") == "Carlsen, Magnus"
    assert table.canonical("magnus carlsen") == "Carlsen, Magnus"
    assert table.canonical("Carlsen,Magnus") == "Carlsen, Magnus"
    assert table.canonical("Caruana, Fabiano") == "Caruana, Fabiano"


def test_alias_conflict_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "aliases.toml"
    path.write_text('"A, B" = ["X"]\n"C, D" = ["X"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="'X' is listed under both"):
        AliasTable.load(path)


def test_grand_prix_fixture_reads_completely(data_dir: Path) -> None:
    result = read_collection(data_dir / "fixtures/grandswiss2017", AliasTable({}), TC)
    assert len(result.games) == 81
    assert result.problems == []
    assert all(g.white_elo and g.black_elo and g.eco for g in result.games)


def test_forfeits_without_moves_are_reported(data_dir: Path) -> None:
    games, problems = read(data_dir / "fixtures/pgn2tex-examples/tatamast22.pgn")
    assert len(games) == 87
    assert len(problems) == 4 and all("Dubov" in p.game for p in problems)


def test_decode_handles_bom_crlf_and_latin1() -> None:
    assert decode_pgn(b'\xef\xbb\xbf[A "b"]\r\n')[0] == '[A "b"]\n'
    text, warning = decode_pgn(b'[White "M\xfcller"]')
    assert text == '[White "Müller"]' and warning is not None


def test_truncated_game_is_reported(data_dir: Path) -> None:
    # Cut mid-move ("44.Ne") with no result: it was kept without a word.
    games, problems = read(data_dir / "broken/truncated.pgn")
    assert len(games) == 1 and len(games[0].moves) == 86
    assert [(p.severity, p.line, p.reason) for p in problems] == [
        (
            "warning",
            1,
            "the moves end in '44.Ne', not a move or a result: the game was cut short; "
            "its 86 plies are kept",
        )
    ]


def test_game_cut_between_moves_is_reported(data_dir: Path) -> None:
    text = (data_dir / "broken/truncated.pgn").read_text(encoding="utf-8")
    games, problems = read_file_text(text.rsplit(" ", 1)[0] + "\n")  # up to "43...Bd8"
    assert len(games) == 1 and len(games[0].moves) == 86
    assert [p.reason for p in problems] == [
        "the moves end without a result (1-0, 0-1, 1/2-1/2 or *): the game may be cut short; "
        "its 86 plies are kept"
    ]
    # A whole game, a comment or a variation before the result: no warning.
    for ending in ("1-0", "{ resigns } 1-0", "(43...Bb6) 1-0", "$1 1-0", "*"):
        games, problems = read_file_text(text.rsplit(" ", 1)[0] + " " + ending + "\n")
        assert len(games) == 1 and problems == []


def read_file_text(text: str) -> tuple[list, list]:
    from site_builder.ingest.pgn import parse_game

    record, problems = parse_game("t.pgn", 1, text, AliasTable({}), TC)
    return ([record] if record is not None else []), problems


def test_utf16_is_read_and_named(data_dir: Path) -> None:
    # Was "not valid UTF-8; read as Latin-1" and "the game has no moves".
    games, problems = read(data_dir / "broken/utf16.pgn")
    latin1, _ = read(data_dir / "broken/latin1.pgn")
    assert [g.game_id for g in games] == [g.game_id for g in latin1]
    assert games[0].white == "Zukertort, Johannes Hérmann"
    assert [(p.severity, p.reason) for p in problems] == [
        (
            "warning",
            "encoded in UTF-16 (little-endian, with a byte-order mark), not UTF-8; "
            "read as UTF-16-LE",
        )
    ]


@pytest.mark.parametrize(
    ("codec", "bom", "name"),
    [
        ("utf-16-le", b"\xff\xfe", "UTF-16 (little-endian, with a byte-order mark)"),
        ("utf-16-be", b"\xfe\xff", "UTF-16 (big-endian, with a byte-order mark)"),
        ("utf-32-le", b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with a byte-order mark)"),
        ("utf-32-be", b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with a byte-order mark)"),
        ("utf-16-le", b"", "UTF-16 (little-endian, no byte-order mark)"),
        ("utf-16-be", b"", "UTF-16 (big-endian, no byte-order mark)"),
    ],
)
def test_wide_encodings_are_decoded(codec: str, bom: bytes, name: str) -> None:
    pgn = '[White "Müller, Jörg"]\r\n[Black "Ω"]\r\n\r\n1. e4 e5 1-0\r\n'
    text, warning = decode_pgn(bom + pgn.encode(codec))
    assert text == pgn.replace("\r\n", "\n")
    assert warning == f"encoded in {name}, not UTF-8; read as {codec.upper()}"


def test_control_bytes_never_reach_pages(tmp_path: Path) -> None:
    # A garbage file's control bytes were copied into report.html (via the problem texts).
    path = tmp_path / "garbage.pgn"
    path.write_bytes(
        b'[White "A\x01\x1b[31mB"]\n[Black "C\x00D"]\n\n1. e4\x07 e5 \x9b 1-0\n\x02\x03'
    )
    games, problems = read(path)
    shown = [g.white for g in games] + [g.black for g in games]
    shown += [p.game for p in problems] + [p.reason for p in problems]
    assert shown and not any(re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", s) for s in shown)
    assert games[0].white == "A\ufffd\ufffd[31mB"
    assert any("control characters replaced" in p.reason for p in problems)
    # The file's name too.
    path.rename(tmp_path / "garb\x1bage.pgn")
    result = read_collection(tmp_path, AliasTable({}), TC)
    assert {g.source for g in result.games} == {"garb\ufffdage.pgn"}
    assert {p.source for p in result.problems} == {"garb\ufffdage.pgn"}


def test_time_control_classes() -> None:
    assert expected_seconds("40/7200:20/3600:900+30") == 7200
    assert classify({"TimeControl": "900+10"}, TC)[0] == "rapid"
    assert classify({"TimeControl": "180+2"}, TC)[0] == "blitz"
    assert classify({"TimeControl": "5400+30"}, TC)[0] == "classical"
    assert classify({"Event": "World Rapid 2024"}, TC)[0] == "rapid"
    assert classify({"Event": "Norway Chess Armageddon"}, TC)[0] == "blitz"
    assert classify({"Event": "London"}, TC) == (
        "classical",
        "default: no TimeControl tag and no rapid/blitz keyword",
    )


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_reader_never_crashes_on_garbage(text: str) -> None:
    for line, chunk in split_games(text):
        assert line >= 1 and chunk


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_tidy_is_idempotent(name: str) -> None:
    assert tidy(tidy(name)) == tidy(name)
