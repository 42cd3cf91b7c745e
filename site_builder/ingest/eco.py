"""ECO codes: names from the lichess opening table, and classification from the moves.

The table (``site_builder/data/eco/*.tsv``, CC0, see SOURCE.txt there) lists 3,807 lines
with their ECO code. A game is classified by position, so transpositions are found: the
game's moves are replayed and the last position that is the end of a table line decides.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import chess

ECO_DIR = Path(__file__).resolve().parent.parent / "data" / "eco"
_CODE = re.compile(r"^[A-E]\d\d$")
_MOVE_NUMBER = re.compile(r"^\d+\.+$")


@dataclass(frozen=True)
class Opening:
    eco: str
    name: str
    #: SAN moves of the table line.
    moves: tuple[str, ...]


@dataclass
class EcoTable:
    lines: list[Opening]
    _positions: dict[str, Opening] | None = field(default=None, repr=False)

    @property
    def names(self) -> dict[str, str]:
        """ECO code → the name of its shortest line (the family name, e.g. "Sicilian Defense")."""
        best: dict[str, Opening] = {}
        for line in self.lines:
            have = best.get(line.eco)
            if have is None or (len(line.moves), line.name) < (len(have.moves), have.name):
                best[line.eco] = line
        return {code: o.name for code, o in sorted(best.items())}

    @property
    def max_plies(self) -> int:
        return max((len(o.moves) for o in self.lines), default=0)

    def positions(self) -> dict[str, Opening]:
        """EPD of each line's final position → the line (the longest line wins a tie)."""
        if self._positions is None:
            ends: dict[str, list[Opening]] = {}
            # Lines in move order share prefixes: undo back to the common prefix, then play on.
            board = chess.Board()
            path: tuple[str, ...] = ()
            for line in sorted(self.lines, key=lambda o: (o.moves, o.eco, o.name)):
                common = 0
                while common < min(len(path), len(line.moves)) and (
                    path[common] == line.moves[common]
                ):
                    common += 1
                for _ in range(len(path) - common):
                    board.pop()
                for san in line.moves[common:]:
                    board.push_san(san)
                path = line.moves
                ends.setdefault(board.epd(), []).append(line)
            # On a shared position the longest line wins (then ECO and name, for determinism).
            self._positions = {
                epd: max(lines, key=lambda o: (len(o.moves), o.eco, o.name))
                for epd, lines in ends.items()
            }
        return self._positions

    def classify(self, moves: Sequence[str]) -> Opening | None:
        """The opening of a game given in UCI moves: the deepest table position reached."""
        positions = self.positions()
        board = chess.Board()
        found: Opening | None = None
        for uci in moves[: self.max_plies]:
            try:
                board.push_uci(uci)
            except ValueError:
                break
            hit = positions.get(board.epd())
            if hit is not None:
                found = hit
        return found


def parse_moves(pgn: str) -> tuple[str, ...]:
    """SAN moves of a table line ("1. e4 e5 2. Nf3" → ("e4", "e5", "Nf3"))."""
    return tuple(tok for tok in pgn.split() if not _MOVE_NUMBER.match(tok))


def read_table(folder: Path) -> EcoTable:
    lines: list[Opening] = []
    for path in sorted(folder.glob("*.tsv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                code = row["eco"].strip()
                if _CODE.match(code):
                    lines.append(Opening(code, row["name"].strip(), parse_moves(row["pgn"])))
    return EcoTable(lines)


@cache
def lichess_table() -> EcoTable:
    """The shipped lichess table (read once per process)."""
    return read_table(ECO_DIR)
