"""Analysis settings that change an engine's answer, and the cache keys built from them."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

import chess

#: Bump when the stored value's layout changes.
SCHEMA = 1


@dataclass(frozen=True)
class AnalysisSpec:
    """Everything that changes an evaluation (METHODS.md section 0b).

    ``engine`` is the name and version the engine reports (``id name``), e.g.
    ``"Stockfish 15.1"``; ``binary`` identifies the executable that answered
    (:func:`engine_identity`), or is :data:`IMPORTED` for evaluations read from a file, so
    another program that calls itself by the same name never shares its cache entries.
    Exactly one of ``depth`` and ``nodes`` is non-zero.
    """

    engine: str
    depth: int
    nodes: int
    multipv: int
    hash_mb: int
    threads: int
    binary: str = ""

    @property
    def limit_text(self) -> str:
        if not self.depth and not self.nodes:
            return "the depth the comments' engine used"
        return f"depth {self.depth}" if self.depth else f"{self.nodes} nodes"

    @property
    def knows_best_move(self) -> bool:
        """False for evaluations imported from PGN comments: they name no best move."""
        return self.threads > 0

    @property
    def key(self) -> str:
        limit = f"d{self.depth}" if self.depth else f"n{self.nodes}"
        engine = f"{self.engine}#{self.binary}" if self.binary else self.engine
        return (
            f"{engine}|{limit}|pv{self.multipv}|hash{self.hash_mb}|threads{self.threads}|s{SCHEMA}"
        )

    def imported(self) -> AnalysisSpec:
        """The same settings, keyed as evaluations imported from an analysis file."""
        return replace(self, binary=IMPORTED)

    def describe(self) -> str:
        if not self.knows_best_move:
            return f"{self.engine} (one line per position, best move unknown)"
        return (
            f"{self.engine}, {self.limit_text}, multi-PV {self.multipv}, "
            f"Threads {self.threads}, Hash {self.hash_mb} MB"
        )


#: ``binary`` of evaluations imported from files: the build reads them after its own.
IMPORTED = "imported"

_identities: dict[tuple[str, int, int], str] = {}


def engine_identity(path: str) -> str:
    """What identifies the executable at ``path``: a digest of its resolved path and bytes.

    Computed once per process for each (path, modification time, size).
    """
    real = Path(path).resolve()
    st = os.stat(real)
    memo = (str(real), st.st_mtime_ns, st.st_size)
    found = _identities.get(memo)
    if found is None:
        content = hashlib.sha256(real.read_bytes()).hexdigest()
        found = hashlib.sha256(f"{real}\0{content}".encode()).hexdigest()[:16]
        _identities[memo] = found
    return found


@functools.lru_cache(maxsize=65536)
def move_of(uci: str) -> chess.Move:
    """``chess.Move.from_uci(uci)``, parsed once per distinct string (fewer than 30,000 parse:
    squares, promotions, drops): the games' moves, the engines' best moves and the imported
    lines are read ply by ply, millions of times. A string that does not parse raises
    ValueError, each time."""
    return chess.Move.from_uci(uci)


def position_key(board: chess.Board) -> str:
    """The position as analysed: EPD plus the halfmove clock.

    The engine sees exactly this (a FEN with no move history), so the cached value depends on
    nothing else. The halfmove clock is kept because Stockfish scales its evaluation by it.
    It is ``f"{board.epd()} {board.halfmove_clock}"``, with the placement made by
    :func:`board_fen` (tested against python-chess's).
    """
    ep = board.ep_square if board.has_legal_en_passant() else None
    return (
        f"{board_fen(board)} {'w' if board.turn else 'b'} {board.castling_xfen()} "
        f"{chess.SQUARE_NAMES[ep] if ep is not None else '-'} {board.halfmove_clock}"
    )


_SYMBOLS = [
    (colour, piece_type, chess.Piece(piece_type, colour).symbol())
    for colour in chess.COLORS
    for piece_type in chess.PIECE_TYPES
]
_RUNS = [("1" * n, str(n)) for n in range(8, 1, -1)]


def board_fen(board: chess.BaseBoard) -> str:
    """``board.board_fen()`` of a standard board, made from the pieces' bitboards: three
    times faster than python-chess's square-by-square walk, which took 40% of replaying the
    games for their position keys."""
    cells = ["1"] * 64
    for colour, piece_type, symbol in _SYMBOLS:
        pieces = board.pieces_mask(piece_type, colour)
        while pieces:
            lowest = pieces & -pieces
            cells[lowest.bit_length() - 1] = symbol
            pieces ^= lowest
    fen = "/".join("".join(cells[rank : rank + 8]) for rank in range(56, -8, -8))
    for run, count in _RUNS:  # longest first: "11" inside "111" is not replaced early
        fen = fen.replace(run, count)
    return fen


def board_from_key(key: str) -> chess.Board:
    """Inverse of :func:`position_key` (full-move number set to 1: it changes nothing)."""
    epd, clock = key.rsplit(" ", 1)
    return chess.Board(f"{epd} {clock} 1")


def pv_key(spec: AnalysisSpec | str, position: str) -> str:
    """The key of a position's lines (``spec``: the spec or its :attr:`~AnalysisSpec.key`)."""
    return f"pv|{spec if isinstance(spec, str) else spec.key}|{position}"


def move_key(spec: AnalysisSpec | str, position: str, uci: str) -> str:
    """The key of one move's score in a position (``spec`` as in :func:`pv_key`)."""
    return f"mv|{spec if isinstance(spec, str) else spec.key}|{position}|{uci}"
