"""Reading PGN: encodings, broken games, duplicates, aliases, line numbers."""

from __future__ import annotations

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
    assert len(dupes) == 1
    # Files are read in sorted order: the copy in broken-moves.pgn comes first.
    assert (dupes[0].source, dupes[0].line) == ("crlf-blank-line.pgn", 1)
    assert "same game as broken-moves.pgn line" in dupes[0].reason
    players = {g.white for g in result.games} | {g.black for g in result.games}
    assert players == {"Steinitz, William", "Zukertort, Johannes Hermann"}
    assert len(result.games) == 5
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
