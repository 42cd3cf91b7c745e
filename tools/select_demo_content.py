#!/usr/bin/env python3
"""Select the demo game collections in ``content/games/`` from the shared data.

Only for regenerating the demo content: the site build never runs this script.
It needs the shared data at ``../shared`` relative to the repository root
(``../shared/data/...``, read only) and python-chess. It writes nothing but

- ``content/games/{world-championships,champions,tournaments,rapid-blitz,calibration}/``:
  PGN files, a SOURCE.txt per folder and the source's LICENSE.txt where it has one;
- ``content/aliases.toml``.

Games are copied verbatim (tags and movetext as in the source); only line endings
(CRLF → LF), trailing blanks and blank lines are normalised, so that every game is
``tags, one blank line, movetext`` with one blank line between games. The same
shared data always gives byte-identical output.

Usage: ``python tools/select_demo_content.py [--shared PATH]``
"""

from __future__ import annotations

import argparse
import re
import shutil
import textwrap
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from io import StringIO
from pathlib import Path

import chess
import chess.pgn

REPO = Path(__file__).resolve().parents[1]
CONTENT = REPO / "content"
GAMES = CONTENT / "games"

#: Positions analysed by the engine: from this full move on, forced moves excluded.
FIRST_ANALYSED_MOVE = 9
#: The analysis budget (positions) for the classical content except calibration/
#: (75,000 for all of it, less the 1,500 of the first, smaller calibration/, when
#: calibration/ got a budget of its own; this keeps champions/ as it was).
POSITION_BUDGET = 73_500
#: At most this many games per player-year in ``champions/``.
PLAYER_YEAR_CAP = 30
#: Fewer games than this in the year before a match: the predictions say "not enough data".
MIN_PREVIOUS_YEAR = 10
CALIBRATION_MILEPOSTS = tuple(range(2000, 2900, 100))
#: Both Elo tags within this band around a milepost, their mean nearest to it (the
#: seed's band, SEED_WINDOW, is too narrow for the demo data: 29 games in all; ±50
#: still leaves 2000 and 2100 with under 20 games each). The demo's content/site.toml sets
#: ``[intrinsic] milepost_width`` to the same band (the default is the seed's).
CALIBRATION_WINDOW = 75
SEED_WINDOW = 20
CALIBRATION_CAP = 60
#: The analysis budget (positions) of calibration/, apart from POSITION_BUDGET.
CALIBRATION_BUDGET = 25_000

WCC_FILE = "champions-derived/wcc_matches_1886-2024_from_pgnmentor.pgn"
TOURNAMENTS = "tournaments"
SSP_FILE = "ratings/scid-fide-2021/spelling_peak2550.ssp"

RESULTS = frozenset({"1-0", "0-1", "1/2-1/2", "*"})


# --------------------------------------------------------------------------- PGN


@dataclass
class Game:
    """One game as it stands in its source file."""

    source: str  #: path relative to shared/data
    number: int  #: 1-based position in the source file
    header_lines: list[str]
    movetext_lines: list[str]
    tags: dict[str, str]

    def tag(self, name: str) -> str:
        return self.tags.get(name, "").strip()

    @property
    def text(self) -> str:
        return "\n".join(self.header_lines) + "\n\n" + "\n".join(self.movetext_lines) + "\n"

    @property
    def year(self) -> int | None:
        head = self.tag("Date")[:4]
        return int(head) if head.isdigit() else None

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        """SAN moves as written, without numbers, comments, variations, NAGs or result."""
        return move_tokens(" ".join(self.movetext_lines))

    @cached_property
    def parsed(self) -> chess.pgn.Game:
        game = chess.pgn.read_game(StringIO(self.text))
        return game if game is not None else chess.pgn.Game()

    @cached_property
    def positions(self) -> int:
        return analysed_positions(self.parsed)

    def describe(self) -> str:
        return (
            f"{self.source}#{self.number} {self.tag('White')} - {self.tag('Black')}, "
            f"{self.tag('Event')} {self.tag('Date')} round {self.tag('Round')}"
        )


_TAG = re.compile(r'^\[(\w+)\s+"(.*)"\s*\]$')
_COMMENT = re.compile(r"\{[^}]*\}|;[^\n]*")
_VARIATION = re.compile(r"\([^()]*\)")
_MOVE_NUMBER = re.compile(r"\d+\.(?:\.\.)?")


def move_tokens(movetext: str) -> tuple[str, ...]:
    text = _COMMENT.sub(" ", movetext)
    while _VARIATION.search(text):
        text = _VARIATION.sub(" ", text)
    text = _MOVE_NUMBER.sub(" ", text)
    return tuple(
        t.rstrip("!?+#") for t in text.split() if t not in RESULTS and not t.startswith("$")
    )


def analysed_positions(game: chess.pgn.Game) -> int:
    """Positions the engine analyses: from full move 9 on, with more than one legal move."""
    board = game.board()
    count = 0
    for move in game.mainline_moves():
        if board.fullmove_number >= FIRST_ANALYSED_MOVE and board.legal_moves.count() > 1:
            count += 1
        board.push(move)
    return count


def decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_games(text: str) -> Iterator[tuple[list[str], list[str]]]:
    """(tag lines, movetext lines) per game; blank lines only separate, never count."""
    tags: list[str] = []
    moves: list[str] = []
    blank_after_tags = False
    for raw in text.split("\n"):
        line = raw.rstrip()
        if not line.strip():
            blank_after_tags = bool(tags)
            continue
        if line.startswith("["):
            if moves or (tags and blank_after_tags):
                yield tags, moves
                tags, moves = [], []
            tags.append(line)
            blank_after_tags = False
        else:
            moves.append(line)
    if tags or moves:
        yield tags, moves


def parse_tags(lines: Iterable[str]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for line in lines:
        match = _TAG.match(line)
        if match:
            tags[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
    return tags


class Shared:
    """Read-only access to ``shared/data``, each file parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, list[Game]] = {}

    def games(self, rel: str) -> list[Game]:
        if rel not in self._cache:
            text = decode((self.root / rel).read_bytes())
            self._cache[rel] = [
                Game(rel, number, tags, moves, parse_tags(tags))
                for number, (tags, moves) in enumerate(split_games(text), start=1)
            ]
        return self._cache[rel]

    def text(self, rel: str) -> str:
        return decode((self.root / rel).read_bytes())

    def champion_files(self) -> list[str]:
        """Stems of the 22 career files in champions/."""
        return sorted(p.stem for p in (self.root / "champions").glob("*.pgn"))


# --------------------------------------------------------------------------- names


def fold(text: str) -> str:
    """Accents off, case folded: ``"Kántor"`` → ``"kantor"``."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


_NAME_NOISE = re.compile(r"\(.*?\)|\[.*?\]|#.*$")


def name_words(name: str) -> list[str]:
    return re.findall(r"[^\W\d_]+", fold(_NAME_NOISE.sub(" ", name)))


def same_person_loose(a: str, b: str) -> bool:
    """For duplicate detection only: the two spellings share a word of 2+ letters."""
    return bool({w for w in name_words(a) if len(w) > 1} & set(name_words(b)))


#: Order-free key of a spelling: its folded words with their counts.
NameKey = frozenset[tuple[str, int]]


# --------------------------------------------------------------------------- dates


def date_key(game: Game) -> tuple[int, int, int]:
    parts = [*game.tag("Date").split("."), "", "", ""][:3]
    year, month, day = (int(p) if p.isdigit() else 0 for p in parts)
    return year, month, day


def full_date(game: Game) -> bool:
    return all(date_key(game))


def round_key(game: Game) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", game.tag("Round")))


def chronological(game: Game) -> tuple[object, ...]:
    return (date_key(game), game.tag("Event"), round_key(game), game.source, game.number)


def even_indices(n: int, k: int) -> list[int]:
    """k indices spread evenly over range(n) (the centres of k equal slices)."""
    return list(range(n)) if k >= n else [(2 * i + 1) * n // (2 * k) for i in range(k)]


# --------------------------------------------------------------------------- duplicates


class GameIndex:
    """Games already taken: a game is a duplicate when Date, Result and moves agree
    and each side's names share a word (so "Gukesh,D" matches "Gukesh, D")."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[object, ...], list[Game]] = defaultdict(list)

    @staticmethod
    def _key(game: Game) -> tuple[object, ...]:
        return (game.tag("Date"), game.tag("Result"), game.tokens)

    def find(self, game: Game) -> Game | None:
        for other in self._by_key.get(self._key(game), []):
            if same_person_loose(game.tag("White"), other.tag("White")) and same_person_loose(
                game.tag("Black"), other.tag("Black")
            ):
                return other
        return None

    def add(self, game: Game) -> None:
        self._by_key[self._key(game)].append(game)

    def add_all(self, games: Iterable[Game]) -> None:
        for game in games:
            self.add(game)


def unique(games: Iterable[Game], seen: GameIndex) -> tuple[list[Game], list[Game]]:
    """(games not yet in ``seen``, duplicates); the kept ones are added to ``seen``."""
    kept: list[Game] = []
    dropped: list[Game] = []
    for game in games:
        if seen.find(game) is None:
            seen.add(game)
            kept.append(game)
        else:
            dropped.append(game)
    return kept, dropped


# --------------------------------------------------------------------------- output model


@dataclass
class Folder:
    """One content folder: its PGN files, whether the engine analyses it, its SOURCE.txt."""

    name: str
    analysed: bool
    files: dict[str, list[Game]] = field(default_factory=dict)
    source_text: str = ""
    licence: str | None = None  #: shared/data path of a LICENSE file to copy

    @property
    def games(self) -> int:
        return sum(len(g) for g in self.files.values())

    @property
    def positions(self) -> int:
        if not self.analysed:
            return 0
        return sum(g.positions for games in self.files.values() for g in games)


# --------------------------------------------------------------------------- 1. title matches


@dataclass(frozen=True)
class Match:
    year: int
    players: tuple[str, str]  #: slugs in the order of the file name
    event: str  #: Event tag in the pgnmentor WCC file
    historical: int  #: games in the match according to the record books
    note: str = ""

    @property
    def filename(self) -> str:
        return f"{self.year}-{self.players[0]}-{self.players[1]}.pgn"


MATCHES = (
    Match(1894, ("lasker", "steinitz"), "World Championship 5th", 19),
    Match(1927, ("alekhine", "capablanca"), "World Championship 13th", 34),
    Match(1935, ("euwe", "alekhine"), "World Championship 16th", 30),
    Match(1960, ("botvinnik", "tal"), "World Championship 23th", 21),
    Match(1969, ("spassky", "petrosian"), "World Championship 27th", 23),
    Match(
        1972,
        ("fischer", "spassky"),
        "World Championship 28th",
        21,
        "20 games played + game 2 forfeited by Fischer, recorded as '1.d4 0-1'",
    ),
    Match(1985, ("karpov", "kasparov"), "World Championship 32th-KK2", 24),
    Match(2000, ("kasparov", "kramnik"), "Braingames WCC", 15),
    Match(2013, ("anand", "carlsen"), "WCh 2013", 10),
    Match(2024, ("ding", "gukesh"), "WCh 2024", 14),
)

#: Where tournaments/ holds the same match: why the pgnmentor copy was kept.
WCC_ALTERNATIVES = {
    1894: (
        "tournaments/18940315-18940526-world-ch05.pgn",
        "has exact dates, Site and Opening tags, but anachronistic retro-Elo tags "
        "(Lasker 2714, Steinitz 2631 - there was no Elo in 1894; the site would take "
        "them as real ratings), spells Steinitz 'Wilhelm' unlike the career files, and "
        "has two different Event tags in one match",
    ),
    2024: (
        "tournaments/20241125-20241212-wch-2024.pgn (and world-ch-ding-gukesh.pgn)",
        "has Ding's Elo wrong (2270 instead of 2728) and no BlackElo in game 2; the "
        "other copy has White/Black 'Gukesh D #GM IND [2794] 2006.05.29'",
    ),
}


def match_games(shared: Shared, match: Match) -> list[Game]:
    return [
        g for g in shared.games(WCC_FILE) if g.tag("Event") == match.event and g.year == match.year
    ]


def compare_moves(ours: Sequence[Game], other: Sequence[Game]) -> str:
    """How two copies of a match differ, game by game in round order."""
    pairs = zip(sorted(ours, key=round_key), sorted(other, key=round_key), strict=False)
    differ = [a.tag("Round") for a, b in pairs if a.tokens != b.tokens]
    if not differ:
        return "same moves in every game"
    return f"moves differ in games {', '.join(differ)} (both copies legal)"


def select_world_championships(shared: Shared, seen: GameIndex) -> Folder:
    folder = Folder("world-championships", analysed=True)
    rows = []
    for match in MATCHES:
        games = sorted(match_games(shared, match), key=round_key)
        kept, dup = unique(games, seen)
        assert not dup, f"duplicate games inside the {match.year} match"
        folder.files[match.filename] = kept
        status = "ok" if len(kept) == match.historical else "MISMATCH"
        rows.append(
            f"  {match.filename:<30} Event {match.event!r:<32} {len(kept):>3} games, "
            f"historical {match.historical:>3}: {status}"
            + (f" ({match.note})" if match.note else "")
        )
    alt_lines = []
    for year, (path, why) in WCC_ALTERNATIVES.items():
        (match,) = [m for m in MATCHES if m.year == year]
        other = shared.games(path.split(" ")[0])
        moves = compare_moves(folder.files[match.filename], other)
        alt_lines.append(f"  {year}: {path}: {len(other)} games, {moves}; it {why}.")
    folder.source_text = wcc_source_text(shared, rows, alt_lines)
    return folder


def wcc_source_text(shared: Shared, rows: list[str], alt_lines: list[str]) -> str:
    return "\n".join(
        [
            "world-championships/: all games of ten world-championship title matches.",
            "",
            f"Origin: shared/data/{WCC_FILE}",
            "  (the shared folder's provenance follows, copied from its SOURCE.txt files)",
            "",
            indent(shared.text("champions-derived/SOURCE.txt")),
            indent(shared.text("champions/SOURCE.txt")),
            "Licence: none stated by pgnmentor.com (game scores are facts).",
            "",
            "Selection rule: every game of the WCC file whose Event tag is the match's",
            "event and whose Date year is the match year, in round order. One file per match.",
            "",
            "Game counts checked against the historical record:",
            *rows,
            "",
            "tournaments/ also holds two of these matches; the pgnmentor copies were kept:",
            *alt_lines,
            "",
            "Notes: the pgnmentor match games before 2000 have Date 'YYYY.??.??' (year only)",
            "and empty Elo tags before 1970.",
            LAYOUT_NOTE,
        ]
    )


LAYOUT_NOTE = (
    "Games are verbatim; only CRLF → LF, trailing blanks and blank lines were normalised\n"
    "(tags, one blank line, movetext; one blank line between games).\n"
    "Written by tools/select_demo_content.py (needs ../shared; only for regenerating the demo).\n"
)


def wrap(text: str, prefix: str = "     ") -> str:
    return textwrap.fill(text, width=88, initial_indent=prefix, subsequent_indent=prefix)


def indent(text: str, prefix: str = "  | ") -> str:
    return "\n".join(prefix + line for line in text.strip().split("\n")) + "\n"


# --------------------------------------------------------------------------- 2. champions

#: The spellings under which each champion appears in the pgnmentor career files
#: (checked: every career-file game of the relevant years has one of them).
PLAYERS: dict[str, tuple[str, frozenset[str]]] = {
    "alekhine": ("Alekhine", frozenset({"Alekhine, Alexander"})),
    "anand": ("Anand", frozenset({"Anand, Viswanathan", "Anand,V"})),
    "botvinnik": ("Botvinnik", frozenset({"Botvinnik, Mikhail"})),
    "capablanca": ("Capablanca", frozenset({"Capablanca, Jose Raul"})),
    "carlsen": ("Carlsen", frozenset({"Carlsen,M", "Carlsen,Magnus"})),
    "ding": ("Ding", frozenset({"Ding Liren"})),
    "euwe": ("Euwe", frozenset({"Euwe, Max"})),
    "fischer": ("Fischer", frozenset({"Fischer, Robert James"})),
    "gukesh": ("Gukesh", frozenset({"Gukesh,D", "Gukesh D"})),
    "karpov": ("Karpov", frozenset({"Karpov, Anatoly", "Karpov,An", "Karpov,Ana"})),
    "kasparov": ("Kasparov", frozenset({"Kasparov, Gary", "Kasparov,G"})),
    "kramnik": ("Kramnik", frozenset({"Kramnik, Vladimir", "Kramnik,V"})),
    "lasker": ("Lasker", frozenset({"Lasker, Emanuel"})),
    "petrosian": ("Petrosian", frozenset({"Petrosian, Tigran V"})),
    "spassky": ("Spassky", frozenset({"Spassky, Boris V", "Spassky,B"})),
    "steinitz": ("Steinitz", frozenset({"Steinitz, William"})),
    "tal": ("Tal", frozenset({"Tal, Mihail"})),
}

#: Event-name words that mark a game as not classical (case-insensitive substrings).
NON_CLASSICAL_SUBSTRINGS = (
    "blitz",
    "rapid",
    "speed",
    "bullet",
    "armageddon",
    "simul",
    "odds",
    "blind",
    "online",
    "internet",
    "exh",
    "consult",
    "computer",
    "titled tue",
    "chess.com",
    "play-in",
    "tiebreak",
    "tie-break",
    "vs the world",
    "-mundo",
    "g/",
)
#: The same as whole words: "sim", "TB" (tiebreak), "Bl" (blitz), "5'" (5 minutes).
NON_CLASSICAL_WORDS = re.compile(r"\bsim\b|\btb\b|\bbl\b|\d+'", re.IGNORECASE)
#: Events that were not classical although the name does not say so (event prefix → why).
KNOWN_NON_CLASSICAL = {
    "Siemens Giants": "Frankfurt Chess Classic, rapid (25 min)",
    "Fujitsu-Siemens Giants": "Frankfurt Chess Classic, rapid (25 min)",
    "Cuadrangular UNAM": "UNAM festival 2012: rapid and blindfold knock-out",
    "5th Classic GpA 2013": "London Chess Classic 2013 'Super 16': rapid 25+10",
    "5th Classic KO 2013": "London Chess Classic 2013 'Super 16': rapid 25+10",
    "GRENKE Chess Classic 2024": "Karlsruhe 2024: 45 min + 10 s (rapid)",
    "GRENKE Chess Classic 4-6": "Karlsruhe 2024 tiebreak",
    "GRENKE Chess Playoffs": "Karlsruhe 2024 play-off",
    "Global Chess League": "team league, rapid",
    "PRO League": "online rapid",
    "Airthings Masters": "online (Champions Chess Tour)",
    "Chessable Masters": "online (Champions Chess Tour)",
}
#: Opponents that are chess programs (start of the folded name).
ENGINE = re.compile(r"(deep (junior|blue|fritz)|x3d fritz|fritz \d|hiarcs|shredder|rybka|hydra\b)")
#: A player with this many games on one fully known date was not playing classical chess.
MAX_CLASSICAL_PER_DAY = 2


def non_classical_reason(game: Game) -> str | None:
    event = game.tag("Event")
    low = event.casefold()
    for word in NON_CLASSICAL_SUBSTRINGS:
        if word in low:
            return f"event name contains {word!r}"
    found = NON_CLASSICAL_WORDS.search(event)
    if found:
        return f"event name contains {found.group(0)!r}"
    for prefix, why in KNOWN_NON_CLASSICAL.items():
        if event.startswith(prefix):
            return why
    if any(c in game.tag("White") + game.tag("Black") for c in "/:"):
        return "consultation game (several players on one side)"
    if any(ENGINE.match(fold(game.tag(side))) for side in ("White", "Black")):
        return "game against a computer program"
    return None


def plays(game: Game, slug: str) -> bool:
    names = PLAYERS[slug][1]
    return game.tag("White") in names or game.tag("Black") in names


@dataclass
class PlayerYear:
    slug: str
    year: int
    match: Match
    candidates: list[Game] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)
    taken: list[Game] = field(default_factory=list)

    @property
    def filename(self) -> str:
        return f"{self.slug}-{self.year}.pgn"

    @property
    def is_previous_year(self) -> bool:
        return self.year < self.match.year


def career_games(shared: Shared, slug: str, year: int) -> list[Game]:
    """The player's games of that year from all 22 career files (own file first)."""
    own = PLAYERS[slug][0]
    files = [own, *(f for f in shared.champion_files() if f != own)]
    return [
        g
        for name in files
        for g in shared.games(f"champions/{name}.pgn")
        if g.year == year and plays(g, slug)
    ]


def crowded_events(games: Iterable[Game]) -> set[str]:
    """Events in which the player played more than the classical maximum on one known day."""
    per_day = Counter((g.tag("Event"), g.tag("Date")) for g in games if full_date(g))
    return {event for (event, _), n in per_day.items() if n > MAX_CLASSICAL_PER_DAY}


def exclusion_reason(
    game: Game, crowded: set[str], match: Match, match_index: GameIndex
) -> str | None:
    if game.tag("Event") in crowded:
        return f"more than {MAX_CLASSICAL_PER_DAY} games on one day"
    if match_index.find(game) is not None or is_match_event(game, match):
        return "game of the title match"
    if game.parsed.errors or not game.tokens:
        return "moves cannot be read"
    return None


def build_player_year(shared: Shared, py: PlayerYear, match_index: GameIndex, cap: int) -> None:
    games, _ = unique(career_games(shared, py.slug, py.year), GameIndex())
    classical = []
    for game in games:
        reason = non_classical_reason(game)
        if reason is None:
            classical.append(game)
        else:
            py.excluded[f"{game.tag('Event')} ({reason})"] += 1
    crowded = crowded_events(classical)
    for game in classical:
        reason = exclusion_reason(game, crowded, py.match, match_index)
        if reason is None:
            py.candidates.append(game)
        else:
            py.excluded[f"{game.tag('Event')} ({reason})"] += 1
    py.candidates.sort(key=chronological)
    py.taken = [py.candidates[i] for i in even_indices(len(py.candidates), cap)]


def is_match_event(game: Game, match: Match) -> bool:
    return game.tag("Event") == match.event and game.year == match.year


def player_years() -> list[PlayerYear]:
    return [
        PlayerYear(slug, year, match)
        for match in MATCHES
        for slug in match.players
        for year in (match.year - 1, match.year)
    ]


def select_champions(shared: Shared, seen: GameIndex, wcc: Folder, cap: int) -> Folder:
    folder = Folder("champions", analysed=True)
    match_index = GameIndex()
    match_index.add_all(g for games in wcc.files.values() for g in games)
    plan = player_years()
    for py in plan:
        build_player_year(shared, py, match_index, cap)
    shared_games: list[str] = []
    for py in plan:
        kept, dup = unique(py.taken, seen)
        folder.files[py.filename] = sorted(kept, key=chronological)
        shared_games += [f"{py.filename}: {g.describe()}" for g in dup]
    folder.source_text = champions_source_text(shared, plan, folder, shared_games, cap)
    return folder


def champions_source_text(
    shared: Shared, plan: list[PlayerYear], folder: Folder, shared_games: list[str], cap: int
) -> str:
    lines = [
        "champions/: classical games of both players of each title match in",
        "world-championships/, from the calendar year before the match and the match year.",
        "",
        "Origin: shared/data/champions/<Name>.pgn (all 22 career files are searched, so",
        "a game between two champions is found in either file).",
        "  (the shared folder's provenance follows, copied from its SOURCE.txt)",
        "",
        indent(shared.text("champions/SOURCE.txt")),
        "Licence: none stated by pgnmentor.com (game scores are facts).",
        "",
        "Selection rule, per player and year:",
        "  1. every game of the year (Date tag) in which the player is White or Black under",
        wrap(
            "one of the spellings: "
            + "; ".join(f"{s}: {' | '.join(sorted(n))}" for s, (_, n) in sorted(PLAYERS.items()))
        ),
        "  2. duplicates removed: same Date, Result and moves, and each side's names share",
        "     a word (covers the brief's (White, Black, Date, Result, moves) key);",
        "  3. classical only, judged by the event name: dropped when it contains",
        wrap(", ".join(NON_CLASSICAL_SUBSTRINGS) + ", or the words sim, TB, Bl (blitz),"),
        "     N' (minutes); consultation games (several names on one side); games against",
        "     a chess program (e.g. 'DEEP JUNIOR 6' at Dortmund 2000); these events",
        "     whose names do not say so:",
        *(f"       {k}*: {v}" for k, v in KNOWN_NON_CLASSICAL.items()),
        "     and whole events in which the player played more than "
        f"{MAX_CLASSICAL_PER_DAY} games on one fully",
        "     known date (e.g. '1st China Chess King 2024': 6 games on one day);",
        "  4. the title-match games removed (same key as 2, or the match's Event and year);",
        f"  5. at most {cap} games: sorted by (Date, Event, Round, file, position),",
        f"     take the games at the centres of {cap} equal slices of that list",
        f"     (indices (2i+1)*n // {2 * cap}), i.e. spread evenly over the year in date order.",
        f"     The cap is the largest value up to {PLAYER_YEAR_CAP} for which the classical",
        f"     content but calibration/ stays within the budget of {POSITION_BUDGET:,} positions",
        f"     (full move {FIRST_ANALYSED_MOVE} on, forced moves excluded):",
        "{budget}",
        "  6. a game chosen for two player-years (champion against champion) is written",
        "     once, in the first file in match order; a player-year without games gets",
        "     no file.",
        "",
        "Per file: classical games found -> written (and what was left out):",
    ]
    for py in plan:
        written = len(folder.files[py.filename])
        flag = ""
        if py.is_previous_year and len(py.candidates) < MIN_PREVIOUS_YEAR:
            flag = f"  << fewer than {MIN_PREVIOUS_YEAR} in the year before the match: "
            flag += "predictions will say 'not enough data'"
        lines.append(
            f"  {py.filename:<20} ({py.match.year} match) {len(py.candidates):>3} found, "
            f"{len(py.taken):>3} taken, {written:>3} written{flag}"
        )
        events = Counter(g.tag("Event") for g in folder.files[py.filename])
        lines += [f"      {n:>3} {ev}" for ev, n in sorted(events.items())]
        lines += [f"      left out {n:>3}: {why}" for why, n in sorted(py.excluded.items())]
    lines += ["", "Games chosen for two player-years, written only in the first file:"]
    lines += [f"  {s}" for s in shared_games] or ["  none"]
    lines += ["", LAYOUT_NOTE]
    return "\n".join(lines)


# --------------------------------------------------------------------------- 3. tournaments

TATA = f"{TOURNAMENTS}/20250118-20250202-87th-tata-steel-masters.pgn"
NORWAY = f"{TOURNAMENTS}/20250526-20250606-13th-norway-chess-2025.pgn"
NORWAY_ARMAGEDDON = f"{TOURNAMENTS}/20250526-20250606-13th-norway-armageddon.pgn"
WORLD_RAPID = f"{TOURNAMENTS}/20241226-20241228-world-rapid-2024.pgn"
EURO_BLITZ = f"{TOURNAMENTS}/20251130-20251130-european-blitz-championship-2025.pgn"


def elo_count(games: Iterable[Game]) -> tuple[int, int]:
    games = list(games)
    both = sum(1 for g in games if elo(g, "White") and elo(g, "Black"))
    return both, len(games)


def pairing_key(game: Game) -> tuple[str, str, str]:
    return game.tag("Round"), game.tag("White"), game.tag("Black")


def norway_check(shared: Shared) -> list[str]:
    """Is the classical file free of armageddon games, and do the two files pair up?"""
    classical = shared.games(NORWAY)
    armageddon = shared.games(NORWAY_ARMAGEDDON)
    pairing = {pairing_key(g): g for g in classical}
    draws = [g for g in classical if g.tag("Result") == "1/2-1/2"]
    matched = [g for g in armageddon if pairing_key(g) in pairing]
    same = {g.tokens for g in classical} & {g.tokens for g in armageddon}
    drawn = sum(1 for g in matched if pairing[pairing_key(g)].tag("Result") == "1/2-1/2")
    events = sorted({g.tag("Event") for g in classical})
    return [
        f"  {NORWAY}: {len(classical)} games, Event {events}; 6 players double round robin",
        f"  = 30 games, so no armageddon game is mixed in ({len(same)} games share moves",
        f"  with the armageddon file). {len(draws)} classical draws; the armageddon file",
        f"  has {len(armageddon)} games, {len(matched)} of them on a classical pairing",
        f"  (same round, same colours), {drawn} of those after a classical draw.",
    ]


def select_tournaments(shared: Shared, seen: GameIndex) -> Folder:
    folder = Folder("tournaments", analysed=True, licence=f"{TOURNAMENTS}/LICENSE.txt")
    notes = []
    for rel in (TATA, NORWAY):
        kept, dup = unique(shared.games(rel), seen)
        assert not dup, f"{rel}: {len(dup)} games already in the content"
        folder.files[Path(rel).name] = kept
        both, total = elo_count(kept)
        notes.append(f"  {Path(rel).name}: all {total} games; both Elo tags in {both}.")
    folder.source_text = "\n".join(
        [
            "tournaments/: two elite round robins of 2025, classical games, whole files.",
            "",
            f"Origin: shared/data/{TATA}",
            f"        shared/data/{NORWAY}",
            "  (the shared folder's provenance follows, copied from its SOURCE.txt)",
            indent(shared.text(f"{TOURNAMENTS}/SOURCE.txt")),
            "Licence: MIT, LICENSE.txt beside this file (copied from shared/data/tournaments/).",
            "",
            "Selection rule: the whole files.",
            *notes,
            "Norway Chess 2025 check (the armageddon games are in ../rapid-blitz/):",
            *norway_check(shared),
            "",
            LAYOUT_NOTE,
        ]
    )
    return folder


# --------------------------------------------------------------------------- 4. rapid and blitz


def select_rapid_blitz(shared: Shared, seen: GameIndex) -> Folder:
    folder = Folder("rapid-blitz", analysed=False, licence=f"{TOURNAMENTS}/LICENSE.txt")
    notes = []
    for rel in (WORLD_RAPID, EURO_BLITZ, NORWAY_ARMAGEDDON):
        games = shared.games(rel)
        already = sum(1 for g in games if seen.find(g) is not None)
        seen.add_all(games)
        folder.files[Path(rel).name] = games
        both, total = elo_count(games)
        events = sorted({g.tag("Event") for g in games})
        notes.append(
            f"  {Path(rel).name}: all {total} games, Event {events}; both Elo tags in "
            f"{both}; {already} also elsewhere in the content."
        )
    folder.source_text = "\n".join(
        [
            "rapid-blitz/: rapid, blitz and armageddon games for the results statistics only",
            "(the engine does not analyse them).",
            "",
            *(f"Origin: shared/data/{rel}" for rel in (WORLD_RAPID, EURO_BLITZ, NORWAY_ARMAGEDDON)),
            "  (the shared folder's provenance follows, copied from its SOURCE.txt)",
            indent(shared.text(f"{TOURNAMENTS}/SOURCE.txt")),
            "Licence: MIT, LICENSE.txt beside this file (copied from shared/data/tournaments/).",
            "",
            "Selection rule: the whole files (the Norway armageddon games are those of the",
            "open section, the pair of ../tournaments/ Norway Chess 2025; the women's",
            "armageddon file was not taken).",
            *notes,
            "",
            LAYOUT_NOTE,
        ]
    )
    return folder


# --------------------------------------------------------------------------- 5. calibration

#: Every tournament file is searched, in file-name (date) order, then the fixture below.
CALIBRATION_FIXTURE = "fixtures/grandswiss2017/GrandSwissPalma2017.pgn"
WORLD_CUP = "20230730-20230824-fide-world-cup.pgn"
#: Elo tags before the first FIDE list (1971) are retrospective estimates, not ratings.
FIRST_RATED_YEAR = 1971
#: A TimeControl tag whose first period is shorter than this (seconds) is not classical.
MIN_CLASSICAL_SECONDS = 3600
#: Tournament files whose events are not classical although no tag says so.
CALIBRATION_NOT_CLASSICAL = {
    "20241217-20241219-cct-final-rr-2024.pgn": "Champions Chess Tour final: online rapid",
    "20250304-20250306-champions-showdown-kings.pgn": "Champions Showdown: Chess960",
    "20241215-20241215-dutch-e-chess-championship-open.pgn": "online, 3 min + 3 s",
}


def elo(game: Game, side: str) -> int | None:
    value = game.tag(f"{side}Elo")
    return int(value) if value.isdigit() and int(value) > 0 else None


def milepost(game: Game, window: int = CALIBRATION_WINDOW) -> int | None:
    """The milepost M with both Elo tags within ±window of M (the nearest to their mean
    when two qualify; the lower on a tie)."""
    white, black = elo(game, "White"), elo(game, "Black")
    if white is None or black is None:
        return None
    fits = [
        post
        for post in CALIBRATION_MILEPOSTS
        if abs(white - post) <= window and abs(black - post) <= window
    ]
    return min(fits, key=lambda post: (abs(white + black - 2 * post), post)) if fits else None


def base_seconds(game: Game) -> int | None:
    """First period of the TimeControl tag in seconds ("5400+30" → 5400, "40/5400:..." → 5400)."""
    first = game.tag("TimeControl").split(":")[0].split("+")[0].split("/")[-1]
    return int(first) if first.isdigit() else None


def crowded_tournament_events(games: Iterable[Game]) -> set[str]:
    """Events in which some player played more than the classical maximum on one known day."""
    per_day: Counter[tuple[str, str, str]] = Counter()
    for game in games:
        if full_date(game):
            for side in ("White", "Black"):
                per_day[(game.tag("Event"), game.tag("Date"), game.tag(side))] += 1
    return {event for (event, _, _), n in per_day.items() if n > MAX_CLASSICAL_PER_DAY}


def calibration_exclusion(name: str, game: Game, crowded: set[str]) -> str | None:
    """Why a source game cannot be a classical rated game, or None."""
    if name in CALIBRATION_NOT_CLASSICAL:
        return CALIBRATION_NOT_CLASSICAL[name]
    reason = non_classical_reason(game)
    if reason is not None:
        return reason
    if game.year is None or game.year < FIRST_RATED_YEAR:
        return f"before {FIRST_RATED_YEAR}: retrospective Elo tags"
    seconds = base_seconds(game)
    if seconds is not None and seconds < MIN_CLASSICAL_SECONDS:
        return f"TimeControl {game.tag('TimeControl')}"
    if name == WORLD_CUP:
        numbers = round_key(game)
        if not (len(numbers) == 2 and numbers[1] in (1, 2)):
            return "World Cup tiebreak (game 3 or later of a round)"
    if game.tag("Event") in crowded:
        return f"a player has more than {MAX_CLASSICAL_PER_DAY} games on one day"
    return None


def spread_pick(groups: Sequence[Sequence[Game]], k: int) -> list[Game]:
    """Up to k games: quotas dealt round-robin over the groups, then evenly spaced picks."""
    quotas = [0] * len(groups)
    remaining = k
    while remaining and any(q < len(g) for q, g in zip(quotas, groups, strict=True)):
        for i, group in enumerate(groups):
            if remaining and quotas[i] < len(group):
                quotas[i] += 1
                remaining -= 1
    return [
        group[j]
        for group, quota in zip(groups, quotas, strict=True)
        for j in even_indices(len(group), quota)
    ]


#: An Elo tag this far below the player's FIDE rating of the year is taken as wrong.
ELO_TOLERANCE = 150
SSP_LAST_YEAR = 2021  #: the spelling file's ratings end with the April 2021 list


class EloCheck:
    """Elo tags against the FIDE histories of the scid spelling file (peak >= 2550)."""

    def __init__(self, players: list[SspPlayer]) -> None:
        self._by_key: dict[NameKey, list[SspPlayer]] = defaultdict(list)
        for player in players:
            for spelling in {player.name, *player.variants}:
                self._by_key[full_key(spelling)].append(player)

    def reference(self, name: str, year: int) -> tuple[int, int] | None:
        """(FIDE rating, its year): the last list of the game year, or the latest before."""
        found = self._by_key.get(full_key(name), [])
        if len(found) != 1:
            return None
        years = [y for y in found[0].elo if y <= year]
        return (found[0].elo[max(years)][-1], max(years)) if years else None

    def problem(self, game: Game) -> str | None:
        for side in ("White", "Black"):
            tag, year = elo(game, side), game.year
            ref = self.reference(game.tag(side), year) if tag and year else None
            if ref is None or tag is None or year is None:
                continue
            too_high = year <= SSP_LAST_YEAR and tag > ref[0] + ELO_TOLERANCE
            if tag < ref[0] - ELO_TOLERANCE or too_high:
                return f"{game.tag(side)} {side}Elo {tag}, FIDE {ref[1]}: {ref[0]}"
        return None


def source_label(rel: str) -> str:
    """Short name of a source: "tournaments/20180924-20181005-olympiad-43.pgn" → "olympiad-43"."""
    stem = Path(rel).stem
    return stem.split("-", 2)[2] if stem[:8].isdigit() else stem


@dataclass
class CalibrationStats:
    classical: Counter[str] = field(default_factory=Counter)
    rated: Counter[str] = field(default_factory=Counter)
    excluded: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    per_post: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    seed_band: Counter[int] = field(default_factory=Counter)
    duplicates: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    wrong_elo: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    #: analysed games elsewhere in the content that fall in a milepost band
    elsewhere: dict[int, list[Game]] = field(default_factory=lambda: defaultdict(list))


def calibration_sources(shared: Shared) -> list[str]:
    names = sorted(p.name for p in (shared.root / TOURNAMENTS).glob("*.pgn"))
    return [f"{TOURNAMENTS}/{name}" for name in names] + [CALIBRATION_FIXTURE]


def calibration_candidates(
    shared: Shared, seen: GameIndex, stats: CalibrationStats, check: EloCheck
) -> dict[int, list[list[Game]]]:
    """Per milepost, per source (in source order): the usable games in file order."""
    by_post: dict[int, list[list[Game]]] = {p: [] for p in CALIBRATION_MILEPOSTS}
    taken = GameIndex()  #: the same game in two source files counts once
    for rel in calibration_sources(shared):
        games = shared.games(rel)
        crowded = crowded_tournament_events(
            g for g in games if calibration_exclusion(Path(rel).name, g, set()) is None
        )
        per_post: dict[int, list[Game]] = defaultdict(list)
        for game in games:
            why = calibration_exclusion(Path(rel).name, game, crowded)
            if why is not None:
                stats.excluded[rel][why] += 1
                continue
            stats.classical[rel] += 1
            if elo(game, "White") and elo(game, "Black"):
                stats.rated[rel] += 1
            post = milepost(game)
            if post is None:
                continue
            problem = check.problem(game)
            if problem:
                stats.wrong_elo[post].append(f"{game.describe()}: {problem}")
                continue
            if seen.find(game) is not None:
                stats.duplicates[post].append(game.describe())
                continue
            if taken.find(game) is not None:
                continue
            taken.add(game)
            stats.per_post[post][rel] += 1
            stats.seed_band[post] += milepost(game, SEED_WINDOW) == post
            per_post[post].append(game)
        for post, found in sorted(per_post.items()):
            by_post[post].append(found)
    return by_post


def pick_within_budget(
    candidates: dict[int, list[list[Game]]], elsewhere: dict[int, list[Game]]
) -> tuple[int, dict[int, list[Game]], list[str]]:
    """The largest per-milepost cap up to CALIBRATION_CAP whose picks stay within budget;
    the analysed games already in the content count towards a milepost's cap."""
    tried = []
    for cap in range(CALIBRATION_CAP, 0, -1):
        picked = {
            post: spread_pick(candidates[post], max(0, cap - len(elsewhere[post])))
            for post in CALIBRATION_MILEPOSTS
        }
        total = sum(g.positions for games in picked.values() for g in games)
        tried.append(f"cap {cap}: {total:,}")
        if total <= CALIBRATION_BUDGET:
            return cap, picked, tried
    raise SystemExit(f"one calibration game per milepost exceeds {CALIBRATION_BUDGET:,} positions")


def select_calibration(shared: Shared, seen: GameIndex, analysed: Sequence[Folder]) -> Folder:
    folder = Folder("calibration", analysed=True, licence=f"{TOURNAMENTS}/LICENSE.txt")
    stats = CalibrationStats()
    for other in analysed:
        for games in other.files.values():
            for game in games:
                post = milepost(game)
                if post is not None:
                    stats.elsewhere[post].append(game)
    check = EloCheck(read_ssp(shared.text(SSP_FILE)))
    candidates = calibration_candidates(shared, seen, stats, check)
    cap, picked, tried = pick_within_budget(candidates, stats.elsewhere)
    rows = []
    for post in CALIBRATION_MILEPOSTS:
        games = picked[post]
        seen.add_all(games)
        folder.files[f"elo-{post}.pgn"] = games
        usable = sum(stats.per_post[post].values())
        positions = sum(g.positions for g in games)
        in_seed = sum(1 for g in games if milepost(g, SEED_WINDOW) == post)
        elsewhere = stats.elsewhere[post]
        other_positions = sum(g.positions for g in elsewhere)
        short = " (all usable taken)" if len(games) == usable else ""
        rows.append(
            f"  elo-{post}.pgn: {usable:>3} usable, {len(stats.wrong_elo[post])} with a wrong "
            f"Elo tag, {len(stats.duplicates[post])} already in the content; "
            f"{len(games):>3} taken{short}, {positions:>5,} positions, {in_seed} of them "
            f"within ±{SEED_WINDOW}"
        )
        by_source = Counter(source_label(g.source) for g in games)
        if by_source:
            rows.append(wrap(", ".join(f"{n} {s}" for s, n in sorted(by_source.items())), "      "))
        if elsewhere:
            rows.append(
                f"      + {len(elsewhere)} analysed games elsewhere in the content in this "
                f"band ({other_positions:,} positions), used by the calibration as well"
            )
        rows += [f"      wrong Elo: {line}" for line in stats.wrong_elo[post]]
    folder.source_text = calibration_source_text(shared, stats, rows, cap, tried)
    return folder


def calibration_source_text(
    shared: Shared, stats: CalibrationStats, rows: list[str], cap: int, tried: list[str]
) -> str:
    sources = calibration_sources(shared)
    source_rows = []
    for rel in sources:
        excluded = stats.excluded.get(rel, Counter())
        line = (
            f"  {source_label(rel)}: {stats.classical[rel]} classical, "
            f"{stats.rated[rel]} with both Elo tags"
        )
        if excluded:
            line += "; left out: " + "; ".join(f"{n} {why}" for why, n in sorted(excluded.items()))
        source_rows.append(line)
    fixture_source = shared.root / Path(CALIBRATION_FIXTURE).parent / "SOURCE.txt"
    return "\n".join(
        [
            "calibration/: rated classical games for the Elo calibration of the intrinsic",
            "ratings, one file per milepost.",
            "",
            f"Origin: every file in shared/data/{TOURNAMENTS}/ (listed below) and",
            f"        shared/data/{CALIBRATION_FIXTURE}",
            "  (the shared folders' provenance follows, copied from their SOURCE.txt)",
            indent(shared.text(f"{TOURNAMENTS}/SOURCE.txt")),
            indent(fixture_source.read_text(encoding="utf-8")),
            "Licence: MIT for the tournaments files, LICENSE.txt beside this file (copied from",
            "shared/data/tournaments/); none stated for the Grand Swiss fixture (game scores",
            "are facts).",
            "",
            "Selection rule:",
            "  1. classical games only: not when the event name says rapid, blitz, armageddon,",
            "     online, TB etc. (the list of ../champions/SOURCE.txt), not when a",
            f"     TimeControl tag gives a first period under {MIN_CLASSICAL_SECONDS} s, not",
            f"     whole events in which a player has more than {MAX_CLASSICAL_PER_DAY} games on",
            "     one date,",
            "     not the World Cup tiebreaks (game 3 or later of a round), not these files:",
            *(f"       {k}: {v}" for k, v in CALIBRATION_NOT_CLASSICAL.items()),
            f"     and not games before {FIRST_RATED_YEAR} (their Elo tags are retrospective);",
            f"  2. WhiteElo and BlackElo both present and both within ±{CALIBRATION_WINDOW} of the",
            f"     same milepost M in {CALIBRATION_MILEPOSTS[0]}, {CALIBRATION_MILEPOSTS[1]}, ...,",
            f"     {CALIBRATION_MILEPOSTS[-1]} (the nearest to their mean when two qualify). The",
            f"     seed (Regan & Haworth) uses ±{SEED_WINDOW}; the site's [intrinsic]",
            "     milepost_width option sets the band the calibration uses (the demo's",
            f"     site.toml sets {CALIBRATION_WINDOW}, as here; the default, {SEED_WINDOW}, "
            "applies the",
            "     seed's band to these games);",
            "  3. games whose Elo tag is demonstrably wrong are skipped: a player found (exact",
            "     spelling or variant) in the scid spelling file",
            f"     shared/data/{SSP_FILE}",
            f"     whose tag lies more than {ELO_TOLERANCE} below the last FIDE rating of the game",
            f"     year (or of the latest year before it; the file ends in {SSP_LAST_YEAR}), or,",
            f"     for games up to {SSP_LAST_YEAR}, more than {ELO_TOLERANCE} above it;",
            "  4. games already elsewhere in the content are not copied (the site calibrates",
            "     on every analysed rated game of the content, so they count all the same);",
            "     a game found in two source files is taken once;",
            f"  5. at most {cap} games per milepost, counting the analysed games of the band",
            "     already in the content; spread over the sources: quotas dealt",
            "     round-robin over the sources in the order below, then evenly spaced games",
            "     within each source in file order. The cap is the largest up to",
            f"     {CALIBRATION_CAP} for which the folder stays within {CALIBRATION_BUDGET:,}",
            "     analysed positions",
            f"     (full move {FIRST_ANALYSED_MOVE} on, forced moves excluded); a milepost",
            "     without new games gets no file:",
            wrap(", ".join(tried)),
            "",
            "Sources, in selection order (classical games, of them with both Elo tags):",
            *source_rows,
            "",
            "Per milepost:",
            *rows,
            "",
            "Note: the sources carry Elo tags for only about a third of the players (per",
            "player, not per game; in the Olympiads and the World Cup almost only for",
            "surnames A-K), so few games have both players rated near a milepost, and the",
            "low mileposts stay thin whatever the band. Where a tag can be checked it is",
            "wrong for roughly one player in eight, usually far too low (e.g. Abasov 2210",
            "and Ding Liren 2270: their first FIDE ratings), so the tags of the players",
            "who cannot be checked deserve caution as well.",
            "",
            LAYOUT_NOTE,
        ]
    )


# --------------------------------------------------------------------------- 6. aliases


@dataclass
class SspPlayer:
    name: str
    variants: list[str] = field(default_factory=list)
    #: FIDE ratings by year, in list order ("%Elo 2019:2650,2655,..." lines)
    elo: dict[int, list[int]] = field(default_factory=dict)


def parse_elo_line(body: str) -> dict[int, list[int]]:
    history: dict[int, list[int]] = {}
    for part in body.split()[1:]:
        year, _, values = part.partition(":")
        ratings = [int(v) for v in values.split(",") if v.isdigit()]
        if year.isdigit() and ratings:
            history[int(year)] = ratings
    return history


def read_ssp(text: str) -> list[SspPlayer]:
    """Player section of a scid spelling file: unindented names, indented '= variant'."""
    players: list[SspPlayer] = []
    in_players = False
    for line in text.split("\n"):
        if line.startswith("@"):
            in_players = line.startswith("@PLAYER")
            continue
        body = line.split("#", 1)[0].rstrip()
        if not in_players or not body.strip():
            continue
        if not line[0].isspace():
            players.append(SspPlayer(body.strip()))
        elif body.strip().startswith("=") and players:
            players[-1].variants.append(body.strip()[1:].strip())
        elif body.strip().startswith("%Elo") and players:
            players[-1].elo.update(parse_elo_line(body.strip()))
    return players


@dataclass(frozen=True)
class Parsed:
    """A spelling read as (surname words, given-name words); initials keep one letter each."""

    surname: tuple[str, ...]
    given: tuple[str, ...]
    #: ChessBase-style shortened first name: "Adams,Mi", "Karpov,Ana", "Nakamura,Hi"
    truncated: bool = False

    @property
    def initials_only(self) -> bool:
        return bool(self.given) and all(len(w) == 1 for w in self.given)

    @property
    def abbreviated(self) -> bool:
        return self.initials_only or self.truncated

    @property
    def initials(self) -> str:
        return "".join(w[0] for w in self.given)


def given_words(text: str) -> tuple[str, ...]:
    """Given names; capital clusters such as "TL" or "A.J." are split into initials."""
    clean = _NAME_NOISE.sub(" ", text)
    words: list[str] = []
    for word in re.findall(r"[^\W\d_]+", clean):
        if word.isupper() and len(word) <= 3:
            words += list(fold(word))
        else:
            words.append(fold(word))
    return tuple(words)


_TRUNCATED = re.compile(r"[A-Z][a-z]{1,2}")  #: right after the comma, no space


def parses(name: str) -> list[Parsed]:
    """Ways to read a spelling: "Last, First"; without a comma first or last word as surname."""
    clean = _NAME_NOISE.sub(" ", name)
    if "," in clean:
        last, first = clean.split(",", 1)
        truncated = _TRUNCATED.fullmatch(first.rstrip("0123456789 ")) is not None
        return [Parsed(tuple(name_words(last)), given_words(first), truncated)]
    words = clean.split()
    if len(words) < 2:
        return [Parsed(tuple(name_words(clean)), ())]
    return [
        Parsed(tuple(name_words(words[0])), given_words(" ".join(words[1:]))),
        Parsed(tuple(name_words(words[-1])), given_words(" ".join(words[:-1]))),
    ]


def full_key(name: str) -> NameKey:
    """Order-free spelling key: "Wei, Yi", "Wei Yi" and "Yi Wei" give the same key."""
    return frozenset(Counter(name_words(name)).items())


def initials_match(short: Parsed, long: Parsed) -> bool:
    """An abbreviation fits a full name: "Carlsen, M" fits "Carlsen, Magnus", "Petrosian, T"
    fits "Petrosian, Tigran V", "Adams,Mi" fits "Adams, Michael"."""
    if short.surname != long.surname or long.abbreviated or not long.given:
        return False
    if short.truncated:
        return long.given[0].startswith(short.given[0])
    return short.initials_only and long.initials.startswith(short.initials)


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


SSP_PREFIX = "\x00ssp:"  #: union-find node of a spelling-file player


def ssp_index(players: list[SspPlayer]) -> tuple[dict[NameKey, set[int]], list[Parsed]]:
    by_key: dict[NameKey, set[int]] = defaultdict(set)
    for i, player in enumerate(players):
        for spelling in (player.name, *player.variants):
            by_key[full_key(spelling)].add(i)
    return by_key, [parses(p.name)[0] for p in players]


@dataclass
class AliasResult:
    table: dict[str, list[str]]
    ambiguous: list[str]


def link_spellings(names: list[str], players: list[SspPlayer]) -> tuple[UnionFind, list[str]]:
    uf = UnionFind()
    ambiguous: list[str] = []
    by_key, ssp_parsed = ssp_index(players)
    full: list[tuple[str, Parsed]] = []
    for name in names:
        uf.find(name)
        matches = by_key.get(full_key(name), set())
        if len(matches) == 1:
            uf.union(name, f"{SSP_PREFIX}{next(iter(matches))}")
        uf.union(name, f"\x00key:{sorted(full_key(name))}")
        full += [(name, p) for p in parses(name) if not p.abbreviated]
    for _, (_, names_of) in sorted(PLAYERS.items()):
        group = sorted(n for n in names_of if n in uf.parent)
        for other in group[1:]:
            uf.union(group[0], other)
    by_surname: dict[tuple[str, ...], list[tuple[str, Parsed]]] = defaultdict(list)
    for name, parsed in full:
        by_surname[parsed.surname].append((name, parsed))
    ssp_by_surname: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, parsed in enumerate(ssp_parsed):
        ssp_by_surname[parsed.surname].append(i)
    link_numbered(names, uf)
    for name in names:
        for short in (p for p in parses(name) if p.abbreviated):
            fits = {
                uf.find(n) for n, long in by_surname[short.surname] if initials_match(short, long)
            }
            fits |= {
                uf.find(f"{SSP_PREFIX}{i}")
                for i in ssp_by_surname[short.surname]
                if initials_match(short, ssp_parsed[i])
            }
            if len(fits) == 1:
                uf.union(name, next(iter(fits)))
            elif len(fits) > 1:
                ambiguous.append(name)
    return uf, sorted(set(ambiguous))


def link_numbered(names: list[str], uf: UnionFind) -> None:
    """scid-style namesake numbers: "Fedoseev,Vl3" is "Fedoseev, Vladimir3"."""
    numbered: dict[tuple[tuple[str, ...], str], list[tuple[str, str]]] = defaultdict(list)
    for name in names:
        match = re.search(r"(\d+)\s*$", name)
        if match and "," in name:
            parsed = parses(name)[0]
            numbered[(parsed.surname, match.group(1))].append((name, "".join(parsed.given)))
    for group in numbered.values():
        longest = max(group, key=lambda item: len(item[1]))
        for name, given in group:
            if longest[1].startswith(given):
                uf.union(name, longest[0])


def fide_form(name: str) -> str:
    """FIDE's "Last, First" with one space after the comma: "Gukesh D" → "Gukesh, D"."""
    clean = re.sub(r"\s+", " ", _NAME_NOISE.sub(" ", name)).strip()
    clean = re.sub(r"\d+$", "", clean).strip()  # scid numbers namesakes: "Sokolov, Ivan1"
    if "," in clean:
        last, first = clean.split(",", 1)
        return f"{last.strip()}, {first.strip().rstrip('.')}".strip(", ")
    head, _, rest = clean.partition(" ")
    return f"{head}, {rest}" if rest else head


def canonical_name(group: list[str], ssp_names: list[str]) -> str:
    if len(ssp_names) == 1:
        return fide_form(ssp_names[0])

    def richness(name: str) -> tuple[int, int, str]:
        given = parses(fide_form(name))[0].given
        return (-sum(len(w) for w in given), -int("," in name), name)

    return fide_form(min(group, key=richness))


def build_aliases(names: Iterable[str], players: list[SspPlayer]) -> AliasResult:
    spellings = sorted({n for n in names if n.strip() and n.strip() not in {"?", "-"}})
    uf, ambiguous = link_spellings(spellings, players)
    groups: dict[str, list[str]] = defaultdict(list)
    ssp_of: dict[str, list[str]] = defaultdict(list)
    for node in list(uf.parent):
        root = uf.find(node)
        if node.startswith(SSP_PREFIX):
            ssp_of[root].append(players[int(node[len(SSP_PREFIX) :])].name)
        elif not node.startswith("\x00"):
            groups[root].append(node)
    table: dict[str, list[str]] = {}
    for root, group in groups.items():
        if len(group) < 2:
            continue
        canon = canonical_name(group, sorted(set(ssp_of[root])))
        table[canon] = sorted(n for n in group if n != canon)
    return AliasResult(dict(sorted(table.items(), key=lambda kv: fold(kv[0]))), ambiguous)


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def aliases_toml(result: AliasResult) -> str:
    lines = [
        "# Player-name aliases for the demo content, written by tools/select_demo_content.py.",
        "# canonical name = [variants...]; only spellings that occur in content/games/ and",
        "# collide with another spelling of the same player are listed. Variants were found by",
        "# normalising case, accents, punctuation, word order and initials, and through the",
        "# scid spelling file shared/data/" + SSP_FILE + " (GPL-2+; FIDE April 2021).",
        "# Canonical form: 'Last, First' as in FIDE (the scid/FIDE spelling where known).",
        "",
    ]
    for canon, variants in result.table.items():
        lines.append(f"{toml_string(canon)} = [{', '.join(toml_string(v) for v in variants)}]")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- writing


def write_folder(shared: Shared, folder: Folder) -> None:
    target = GAMES / folder.name
    target.mkdir(parents=True, exist_ok=True)
    for old in [*target.glob("*.pgn"), target / "SOURCE.txt", target / "LICENSE.txt"]:
        old.unlink(missing_ok=True)
    for name, games in sorted(folder.files.items()):
        if games:
            (target / name).write_text("\n".join(g.text for g in games), encoding="utf-8")
    (target / "SOURCE.txt").write_text(folder.source_text.rstrip() + "\n", encoding="utf-8")
    if folder.licence:
        shutil.copyfile(shared.root / folder.licence, target / "LICENSE.txt")


def broken_games(folders: Iterable[Folder]) -> list[str]:
    out = []
    for folder in folders:
        for name, games in sorted(folder.files.items()):
            for game in games:
                if game.parsed.errors or not game.tokens:
                    why = game.parsed.errors[0] if game.parsed.errors else "no moves"
                    out.append(f"{folder.name}/{name}: {game.describe()}: {why}")
    return out


def report(folders: Sequence[Folder], aliases: AliasResult, say: Callable[[str], None]) -> None:
    say(f"{'folder':<22}{'files':>6}{'games':>8}{'positions':>11}")
    for folder in folders:
        positions = f"{folder.positions:>11,}" if folder.analysed else f"{'(not analysed)':>15}"
        files = sum(1 for games in folder.files.values() if games)
        say(f"{folder.name:<22}{files:>6}{folder.games:>8}{positions}")
    total = sum(f.positions for f in folders if f.name != "calibration")
    status = "within" if total <= POSITION_BUDGET else "OVER"
    budget = f"({status} its budget of {POSITION_BUDGET:,})"
    say(f"{'analysed but calibration':<36}{total:>11,}  {budget}")
    calibration = sum(f.positions for f in folders if f.name == "calibration")
    status = "within" if calibration <= CALIBRATION_BUDGET else "OVER"
    say(f"{'calibration':<36}{calibration:>11,}  ({status} its budget of {CALIBRATION_BUDGET:,})")
    variants = sum(len(v) for v in aliases.table.values())
    say(f"aliases.toml: {len(aliases.table)} players, {variants} variant spellings")
    if aliases.ambiguous:
        say(f"initials left unresolved (several candidates): {', '.join(aliases.ambiguous)}")
    for line in broken_games(folders):
        say(f"moves unreadable: {line}")


def per_file_table(folders: Sequence[Folder], say: Callable[[str], None]) -> None:
    for folder in folders:
        for name, games in sorted(folder.files.items()):
            positions = sum(g.positions for g in games) if folder.analysed else 0
            say(f"  {folder.name}/{name:<58}{len(games):>6}{positions:>9,}")


def select_all(shared: Shared, cap: int) -> list[Folder]:
    seen = GameIndex()
    wcc = select_world_championships(shared, seen)
    folders = [
        wcc,
        select_champions(shared, seen, wcc, cap),
        select_tournaments(shared, seen),
        select_rapid_blitz(shared, seen),
    ]
    return [*folders, select_calibration(shared, seen, [f for f in folders if f.analysed])]


def select_within_budget(shared: Shared) -> tuple[int, list[Folder]]:
    """The selection with the largest player-year cap that keeps the positions in budget."""
    tried = []
    for cap in range(PLAYER_YEAR_CAP, 0, -1):
        folders = select_all(shared, cap)
        total = sum(f.positions for f in folders if f.name != "calibration")
        tried.append(f"cap {cap}: {total:,}")
        if total <= POSITION_BUDGET:
            champions = folders[1]
            champions.source_text = champions.source_text.replace(
                "{budget}", wrap(", ".join(tried))
            )
            return cap, folders
    raise SystemExit(f"even one game per player-year exceeds {POSITION_BUDGET:,} positions")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shared",
        type=Path,
        default=REPO.parent / "shared",
        help="the shared folder (default: ../shared beside the repository)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also list every file")
    args = parser.parse_args(argv)
    shared = Shared(args.shared / "data")
    cap, folders = select_within_budget(shared)
    names = [
        g.tag(side)
        for folder in folders
        for games in folder.files.values()
        for g in games
        for side in ("White", "Black")
    ]
    aliases = build_aliases(names, read_ssp(shared.text(SSP_FILE)))
    for folder in folders:
        write_folder(shared, folder)
    (CONTENT / "aliases.toml").write_text(aliases_toml(aliases), encoding="utf-8")
    if args.verbose:
        per_file_table(folders, print)
    print(f"champions/: at most {cap} games per player-year (largest cap within the budget)")
    report(folders, aliases, print)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
