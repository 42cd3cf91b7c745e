"""ECO names and classification from the moves with the shipped lichess table."""

from __future__ import annotations

import chess

from site_builder.ingest.eco import ECO_DIR, lichess_table, parse_moves


def uci_of(sans: str) -> list[str]:
    board = chess.Board()
    return [board.push_san(s).uci() for s in sans.split()]


def test_table_is_shipped_with_its_licence() -> None:
    assert sorted(p.name for p in ECO_DIR.glob("*.tsv")) == [f"{v}.tsv" for v in "abcde"]
    assert (ECO_DIR / "COPYING.txt").exists() and "CC0" in (ECO_DIR / "SOURCE.txt").read_text()
    table = lichess_table()
    assert len(table.lines) == 3807
    names = table.names
    assert len(names) == 500 and min(names) == "A00" and max(names) == "E99"
    assert names["B90"] == "Sicilian Defense: Najdorf Variation"


def test_classify_by_the_deepest_position() -> None:
    table = lichess_table()
    najdorf = table.classify(uci_of("e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6"))
    assert najdorf is not None and najdorf.eco == "B90"
    ruy = table.classify(uci_of("e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O"))
    assert ruy is not None and ruy.eco == "C90" and ruy.name == "Ruy Lopez: Closed"


def test_transpositions_are_found() -> None:
    # The Queen's Gambit Declined with Nf3, reached from 1.d4 and from 1.Nf3.
    table = lichess_table()
    direct = table.classify(uci_of("d4 d5 c4 e6 Nc3 Nf6 Nf3"))
    moved = table.classify(uci_of("Nf3 d5 d4 Nf6 c4 e6 Nc3"))
    assert direct is not None and moved is not None
    assert direct.eco == moved.eco == "D37"


def test_no_moves_and_bad_moves() -> None:
    table = lichess_table()
    assert table.classify([]) is None
    first = table.classify(["e2e4", "zzzz"])
    assert first is not None and first.eco == "B00"
    assert parse_moves("1. e4 e5 2. Nf3") == ("e4", "e5", "Nf3")
