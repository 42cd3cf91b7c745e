"""Read PGN files into :class:`GameRecord` values; collect every problem, lose no good game.

Games are split on tag sections ourselves (not by blank lines), so a blank line inside the
moves or inside the tags (a ChessBase habit) does not cut a game in two, and every game
keeps the line number where it starts.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn

from site_builder.config import TimeControlSection
from site_builder.ingest.names import AliasTable
from site_builder.ingest.timecontrol import classify
from site_builder.model import GameRecord, PgnDate, Problem

_TAG_LINE = re.compile(r'^\s*\[\s*[A-Za-z0-9_]+\s+"')
#: PGN tag strings escape a quote as \" and a backslash as \\ (PGN standard 7.); python-chess
#: keeps the escapes.
_TAG_ESCAPE = re.compile(r'\\([\\"])')
_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}
_STANDARD_VARIANTS = {"", "standard", "chess", "normal", "from position"}


class _MainLine(chess.pgn.BaseVisitor["_MainLine"]):
    """What the build keeps of a game, read without building python-chess's game tree: the
    headers, the errors, and the main line's moves with the SAN to show for each (the PGN's
    own token when it is canonical: not UCI nor over-disambiguated, without its check sign;
    else python-chess's). Variations are still read, so a bad move in one is an error as it
    was with the tree, but their moves are not kept."""

    def begin_game(self) -> None:
        self.headers = chess.pgn.Headers()  # the seven tags' defaults, as a Game's
        self.errors: list[Exception] = []
        self.moves: list[chess.Move] = []
        self.sans: list[str] = []
        self._depth = 0  # variations open around the current move
        self._token: str | None = None

    def begin_headers(self) -> chess.pgn.Headers:
        return self.headers

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers[tagname] = tagvalue

    def begin_variation(self) -> None:
        self._depth += 1

    def end_variation(self) -> None:
        self._depth -= 1

    def visit_result(self, result: str) -> None:
        if self.headers.get("Result", "*") == "*":
            self.headers["Result"] = result

    def handle_error(self, error: Exception) -> None:
        self.errors.append(error)

    def parse_san(self, board: chess.Board, san: str) -> chess.Move:
        move = board.parse_san(san)
        self._token = san
        return move

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        if self._depth == 0:
            token = self._token
            san = token if token is not None and _looks_canonical(token) else board.san(move)
            self.sans.append(san.rstrip("+#"))
            self.moves.append(move)
        self._token = None

    def board_before_last(self) -> chess.Board:
        """The position before the main line's last move."""
        board = chess.Board()
        for move in self.moves[:-1]:
            board.push(move)
        return board

    def result(self) -> _MainLine:
        return self


Reader = Callable[
    [Path, str, AliasTable, TimeControlSection], tuple[list[GameRecord], list[Problem]]
]


@dataclass
class IngestResult:
    games: list[GameRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # source -> games accepted


#: Byte-order marks, longest first (UTF-32's little-endian mark starts like UTF-16's).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32 (little-endian)"),
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 (big-endian)"),
)
#: C0 controls but tab and line feed, DEL and the C1 controls: never text in a PGN, invisible
#: or harmful on a page (NUL is a parse error in HTML). Autoescape does not touch them.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _wide_encoding(data: bytes) -> tuple[str, str, int] | None:
    """(codec, name, BOM length) of a UTF-16 or UTF-32 file, else None. Without a BOM, a
    file whose every other byte is NUL (ASCII text in UTF-16) is UTF-16 too."""
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            return codec, f"{name[:-1]}, with a byte-order mark)", len(bom)
    head = data[:4096]
    if len(head) >= 16:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        half = len(head) // 2
        if odd > 0.4 * half and even < 0.05 * half:
            return "utf-16-le", "UTF-16 (little-endian, no byte-order mark)", 0
        if even > 0.4 * half and odd < 0.05 * half:
            return "utf-16-be", "UTF-16 (big-endian, no byte-order mark)", 0
    return None


def decode_pgn(data: bytes) -> tuple[str, str | None]:
    """Text of a PGN file: UTF-8 (with or without BOM), UTF-16 or UTF-32 (by BOM, or UTF-16
    by its NUL bytes), else Latin-1. Line ends become LF; control characters (but tab)
    become U+FFFD.

    Returns (text, warning or None).
    """
    notes = []
    wide = _wide_encoding(data)
    if wide is not None:
        codec, name, skip = wide
        text = data[skip:].decode(codec, errors="replace")
        notes.append(f"encoded in {name}, not UTF-8; read as {codec.upper()}")
        if "\ufffd" in text:
            notes.append("some bytes were not valid in that encoding (shown as \ufffd)")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            text = data.decode("latin-1")
            notes.append(f"not valid UTF-8 (byte {exc.start}); read as Latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text, controls = _CONTROLS.subn("\ufffd", text)
    if controls:
        notes.append(f"{controls} control characters replaced by \ufffd (is this a PGN text file?)")
    return text, "; ".join(notes) or None


def printable(text: str) -> str:
    """``text`` with control characters (but tab and line feed) replaced by U+FFFD."""
    return _CONTROLS.sub("\ufffd", text)


def split_games(text: str) -> Iterator[tuple[int, str]]:
    """Yield (first line number, game text). A game starts at a tag line after movetext."""
    lines = text.split("\n")
    start = 0
    seen_moves = False
    in_comment = False
    chunk: list[str] = []
    for number, line in enumerate(lines, start=1):
        is_tag = not in_comment and _TAG_LINE.match(line) is not None
        if is_tag and seen_moves:
            yield start, "\n".join(chunk)
            chunk, seen_moves = [], False
        if not chunk and not line.strip():
            continue
        if not chunk:
            start = number
        chunk.append(line)
        if not is_tag and line.strip() and not line.lstrip().startswith("%"):
            seen_moves = True
            in_comment = _comment_open_after(line, in_comment)
    if chunk:
        yield start, "\n".join(chunk)


def _comment_open_after(line: str, in_comment: bool) -> bool:
    for ch in line:
        if in_comment:
            if ch == "}":
                in_comment = False
        elif ch == "{":
            in_comment = True
        elif ch == ";":
            break
    return in_comment


_SAN = re.compile(
    r"^(?:[NBRQK][a-h1-8]?x?[a-h][1-8]|[a-h](?:x[a-h])?[1-8](?:=[NBRQ])?|O-O(?:-O)?)[+#]?$"
)


def _looks_canonical(token: str) -> bool:
    return _SAN.match(token) is not None


def _join_movetext(text: str) -> tuple[str, bool]:
    """Drop blank lines inside the moves (python-chess would end the game there).

    Returns (text, whether a blank line between two movetext lines was removed).
    """
    out: list[str] = []
    in_moves = joined = pending_blank = False
    for line in text.split("\n"):
        blank = not line.strip()
        if not in_moves:
            out.append(line)
            in_moves = not blank and not _TAG_LINE.match(line) and not line.lstrip().startswith("%")
        elif blank:
            pending_blank = True
        else:
            joined = joined or pending_blank
            pending_blank = False
            out.append(line)
    return "\n".join(out), joined


_MOVE_NUMBER = re.compile(r"^\d+\.*")


def _cut_short(text: str, game: _MainLine) -> str | None:
    """Why a game looks cut short (a truncated file), or None: the PGN standard ends the
    moves with the result, 1-0, 0-1, 1/2-1/2 or *."""
    movetext = "\n".join(
        line
        for line in text.split("\n")
        if not _TAG_LINE.match(line) and not line.lstrip().startswith("%")
    )
    movetext = re.sub(r"\{[^}]*\}?|;[^\n]*", " ", movetext)  # comments, even one cut open
    tokens = movetext.split()
    if not tokens or tokens[-1] in _RESULTS:
        return None
    last = _MOVE_NUMBER.sub("", tokens[-1]).rstrip("!?+#")
    if last and not last.startswith("$") and not last.endswith(")") and not _is_move(last, game):
        return f"the moves end in {tokens[-1]!r}, not a move or a result: the game was cut short"
    return "the moves end without a result (1-0, 0-1, 1/2-1/2 or *): the game may be cut short"


def _is_move(token: str, game: _MainLine) -> bool:
    """Whether ``token`` (SAN or UCI) is the main line's last move."""
    if not game.moves:
        return False
    board, move = game.board_before_last(), game.moves[-1]
    try:
        return board.parse_san(token) == move
    except ValueError:
        return token == move.uci()


def _elo(value: str | None) -> tuple[int | None, bool]:
    """(rating, was_garbage). Empty, '?', '-' and 0 mean unknown."""
    text = (value or "").strip()
    if text in {"", "?", "-", "0"}:
        return None, False
    if text.isdigit() and 100 <= int(text) <= 4000:
        return int(text), False
    return None, True


def _clean_tag(value: str | None) -> str:
    text = (value or "").strip()
    return "" if text in {"?", "-"} else text


def game_hash(white: str, black: str, date: PgnDate, result: str, moves: Iterable[str]) -> str:
    """Content hash of the normalised tags and the moves: the game's identity."""
    blob = "\x1f".join([white, black, str(date), result, " ".join(moves)])
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


def _describe(headers: chess.pgn.Headers) -> str:
    white = headers.get("White", "?")
    black = headers.get("Black", "?")
    event = headers.get("Event", "?")
    rnd = headers.get("Round", "?")
    return f"{white} – {black}, {event}, round {rnd}"


def parse_game(
    source: str,
    line: int,
    text: str,
    aliases: AliasTable,
    tc_rules: TimeControlSection,
) -> tuple[GameRecord | None, list[Problem]]:
    """One game's text → (record or None, problems)."""
    problems: list[Problem] = []

    def problem(severity: str, reason: str, desc: str) -> None:
        problems.append(Problem(source, line, severity, desc, reason))

    text, joined = _join_movetext(text)
    game = chess.pgn.read_game(io.StringIO(text), Visitor=_MainLine)
    if game is None:
        problem("skipped", "no game could be read here", text[:60].replace("\n", " "))
        return None, problems
    headers = game.headers
    for key, value in list(headers.items()):
        if "\\" in value:
            headers[key] = _TAG_ESCAPE.sub(r"\1", value)
    desc = _describe(headers)
    variant = headers.get("Variant", "").strip().lower()
    if variant not in _STANDARD_VARIANTS:
        problem("skipped", f"variant {headers.get('Variant')!r} is not standard chess", desc)
        return None, problems
    if "FEN" in headers or headers.get("SetUp", "0").strip() == "1":
        problem("skipped", "starts from a set-up position (FEN tag), not the initial one", desc)
        return None, problems
    if game.errors:
        reason = "; ".join(str(e) for e in game.errors[:3])
        problem("skipped", f"moves could not be read: {reason}", desc)
        return None, problems
    moves = tuple(m.uci() for m in game.moves)
    sans = tuple(game.sans)
    if not moves:
        problem("skipped", "the game has no moves", desc)
        return None, problems
    if joined:
        problem("warning", "blank line inside the moves; read as one game", desc)
    cut = _cut_short(text, game)
    if cut is not None:
        problem("warning", f"{cut}; its {len(moves)} plies are kept", desc)
    white = aliases.canonical(headers.get("White", ""))
    black = aliases.canonical(headers.get("Black", ""))
    for side, name in (("White", white), ("Black", black)):
        if name in {"", "?", "-"}:
            problem("skipped", f"{side} player's name is missing", desc)
            return None, problems
    result = headers.get("Result", "*").strip()
    if result not in _RESULTS:
        problem("warning", f"result {result!r} is not a PGN result; treated as '*'", desc)
        result = "*"
    white_elo, bad_w = _elo(headers.get("WhiteElo"))
    black_elo, bad_b = _elo(headers.get("BlackElo"))
    for side, bad in (("WhiteElo", bad_w), ("BlackElo", bad_b)):
        if bad:
            problem("warning", f"{side} {headers.get(side)!r} is not a rating; ignored", desc)
    date = PgnDate.parse(headers.get("Date"))
    eco = _clean_tag(headers.get("ECO")).upper() or None
    if eco is not None and not re.fullmatch(r"[A-E]\d\d", eco):
        problem("warning", f"ECO {eco!r} is not a code A00–E99; ignored", desc)
        eco = None
    tags = {k: v for k, v in headers.items()}
    time_class, tc_reason = classify(tags, tc_rules)
    record = GameRecord(
        game_id=game_hash(white, black, date, result, moves),
        source=source,
        line=line,
        white=white,
        black=black,
        result=result,
        date=date,
        event=_clean_tag(headers.get("Event")),
        site=_clean_tag(headers.get("Site")),
        round=_clean_tag(headers.get("Round")),
        white_elo=white_elo,
        black_elo=black_elo,
        eco=eco,
        moves=moves,
        sans=sans,
        tags=tags,
        time_class=time_class,
        time_class_reason=tc_reason,
    )
    return record, problems


def read_file(
    path: Path,
    source: str,
    aliases: AliasTable,
    tc_rules: TimeControlSection,
) -> tuple[list[GameRecord], list[Problem]]:
    """All games of one file, in file order, and the problems met."""
    games: list[GameRecord] = []
    problems: list[Problem] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [Problem(source, 0, "skipped", "(whole file)", f"cannot read file: {exc}")]
    text, warning = decode_pgn(data)
    if warning:
        problems.append(Problem(source, 1, "warning", "(whole file)", warning))
    for line, chunk in split_games(text):
        try:
            record, found = parse_game(source, line, chunk, aliases, tc_rules)
        except Exception as exc:
            record, found = (
                None,
                [Problem(source, line, "skipped", chunk[:60], f"parser error: {exc!r}")],
            )
        problems.extend(found)
        if record is not None:
            games.append(record)
    return games, problems


def _source(path: Path, base: Path) -> str:
    """The file's name on pages: its path under ``base``, control characters replaced."""
    return printable(path.relative_to(base).as_posix())


def pgn_files(games_dir: Path) -> list[Path]:
    """Every ``*.pgn`` file under ``games_dir``, sorted."""
    return sorted(p for p in games_dir.rglob("*") if p.suffix.lower() == ".pgn" and p.is_file())


def read_collection(
    games_dir: Path,
    aliases: AliasTable,
    tc_rules: TimeControlSection,
    relative_to: Path | None = None,
    reader: Reader | None = None,
) -> IngestResult:
    """Every ``*.pgn`` under ``games_dir`` (sorted), deduplicated by game hash.

    ``reader`` replaces :func:`read_file` (the build passes a cached one).
    """
    reader = reader or read_file
    result = IngestResult()
    base = relative_to or games_dir
    first_seen: dict[str, GameRecord] = {}
    paths = pgn_files(games_dir)
    prefetch = getattr(reader, "prefetch", None)
    if prefetch is not None:  # a cached reader parses the new files in parallel first
        prefetch([(p, _source(p, base)) for p in paths])
    for path in paths:
        source = _source(path, base)
        games, problems = reader(path, source, aliases, tc_rules)
        result.problems.extend(problems)
        accepted = 0
        for game in games:
            earlier = first_seen.get(game.game_id)
            if earlier is not None:
                result.problems.append(
                    Problem(
                        source,
                        game.line,
                        "duplicate",
                        game.label(),
                        f"same game as {earlier.source} line {earlier.line}; counted once",
                    )
                )
                continue
            first_seen[game.game_id] = game
            result.games.append(game)
            accepted += 1
        result.files[source] = accepted
    result.problems.sort()
    return result
