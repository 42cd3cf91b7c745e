"""Settings: frozen dataclasses loaded from ``content/site.toml``.

Every section is a dataclass whose fields are the keys a user may set. Unknown keys,
wrong types and out-of-range values fail at once with a message naming the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from site_builder.errors import ConfigError

DEFAULT_ENGINE = "/usr/games/stockfish"


@dataclass(frozen=True)
class SiteSection:
    title: str = "Chess ratings by quality of play"
    description: str = "Players rated by the quality of their moves, analysed by a chess engine."
    #: "YYYY.MM.DD" or "" = the latest game date in the content.
    as_of: str = ""
    #: Rows of a list page; a longer list is split into pages (name.html, name-2.html, ...).
    rows_per_page: int = 2000
    #: The address the site is published at ("https://example.org/chess/"), for the
    #: absolute links of the feed (feed.xml); "" = links relative to the feed.
    base_url: str = ""


@dataclass(frozen=True)
class ContentSection:
    #: Folder (relative to the content dir) searched recursively for ``*.pgn``.
    games: str = "games"
    #: Alias table: canonical name = [variants].
    aliases: str = "aliases.toml"
    #: Shipped analysis exports imported into the cache before analysing.
    analysis: str = "analysis"


@dataclass(frozen=True)
class AnalysisSection:
    #: "engine": analyse with the UCI engine below; "pgn-eval": use evaluations imported
    #: from [%eval] comments (`site-builder analysis import FILE.pgn`), one line per position.
    source: str = "engine"
    engine: str = DEFAULT_ENGINE
    #: Fixed search depth (plies). Use ``nodes`` instead by setting depth = 0.
    depth: int = 10
    nodes: int = 0
    multipv: int = 10
    hash_mb: int = 16
    threads: int = 1
    #: Engine processes; 0 = one per core.
    workers: int = 0
    #: First full move analysed (the earliest any method needs; METHODS.md section 7).
    first_move: int = 9
    #: Time-control classes whose games are analysed.
    classes: tuple[str, ...] = ("classical",)
    #: Glob patterns (relative to the games folder) of files not analysed.
    exclude: tuple[str, ...] = ()
    #: Seconds an engine may take for one position before it is killed and restarted.
    deadline_s: float = 0.0
    #: Tries before a position that keeps failing is reported and skipped.
    max_tries: int = 3
    #: Positions sent to an engine at once.
    chunk_size: int = 50


@dataclass(frozen=True)
class QualitySection:
    """Play quality index (METHODS.md section 1)."""

    first_move: int = 12
    clip_cp: int = 300
    window_cp: int = 200
    window_months: int = 24
    #: Games needed in the window for a player to enter the rating list.
    min_games: int = 5
    mate_cp: int = 10000


@dataclass(frozen=True)
class TimeControlSection:
    """Rules for classical / rapid / blitz (METHODS.md section 0; ingest/timecontrol.py)."""

    # "playoff" is not a keyword: historical title playoffs were classical games.
    rapid_keywords: tuple[str, ...] = ("rapid", "tiebreak", "tie-break")
    blitz_keywords: tuple[str, ...] = ("blitz", "armageddon", "bullet")
    #: Keywords of games that are not serious classical play; counted as rapid unless blitz.
    other_keywords: tuple[str, ...] = ("simul", "blindfold", "online", "exhibition")
    #: Knock-out events: a Round "match.game" with game > knockout_classical_games is a
    #: (rapid) tiebreak, as in the FIDE World Cup.
    knockout_keywords: tuple[str, ...] = ("world cup", "k.o.", "knockout", "knock-out")
    knockout_classical_games: int = 2
    #: Events known to be classical (checked after the TimeControl tag).
    classical_keywords: tuple[str, ...] = (
        "classical",
        "classic",
        "world championship",
        "wch",
        "candidates",
        "candidats",
        "olympiad",
        "tata steel",
        "hoogovens",
        "corus",
    )
    #: Seconds for a 60-move game (base + 60 × increment): at most ``blitz_max_s`` is blitz,
    #: below ``rapid_max_s`` rapid (FIDE: 10 minutes or less; more than 10 and less than 60).
    blitz_max_s: int = 600
    rapid_max_s: int = 3600


@dataclass(frozen=True)
class ResultsSection:
    """Fischl's results statistics (METHODS.md section 2). Owned by metrics/results.py."""

    #: Current lists: player rating, opponent Elo tag, games; window in months to as-of.
    current_min_elo: int = 2500
    current_opponent_min_elo: int = 2400
    current_months: int = 24
    fighter_min_elo: int = 2600
    #: Historic lists: games from ``historic_since`` on, 2400+ players against 2300+.
    historic_since: int = 1972
    historic_min_elo: int = 2400
    historic_opponent_min_elo: int = 2300
    #: Before ``historic_since`` no FIDE ratings exist: 0 = no rating condition.
    early_min_elo: int = 0
    early_opponent_min_elo: int = 0
    min_games: int = 50
    annual_min_games: int = 20
    annual_min_games_current_year: int = 10
    rapid_min_games: int = 20
    rapid_annual_min_games: int = 10
    blitz_min_games: int = 10
    historic_early_min_games: int = 20
    historic_early_until: int = 1950
    #: Improved Elo: start without an Elo tag; K = k_numerator / clamp(gm, gm_min, gm_max).
    start_elo: int = 2200
    k_numerator: float = 1200.0
    gm_min: int = 70
    gm_max: int = 150
    gm_months: int = 24
    #: FIDE's cap on the rating difference in the expected score.
    expected_cap: int = 400
    rapid_k: float = 20.0
    blitz_k: float = 20.0
    rapid_since: int = 2000
    blitz_since: int = 2000
    #: Rapid and blitz lists need no player rating (Fischl: games against 2400+ only).
    rapid_min_elo: int = 0
    #: Short Draw Factor: 3 points per half-move under 45, at most 45; Elo term
    #: (Elo_w + 50 − Elo_b) / 8.
    sdf_plies: int = 45
    sdf_points_per_ply: float = 3.0
    sdf_max_penalty: float = 45.0
    sdf_white_bonus: float = 50.0
    sdf_elo_divisor: float = 8.0
    #: Sacrifice: down at least this many pawns for at least this many half-moves.
    sacrifice_deficit: int = 1
    sacrifice_plies: int = 6
    #: Endgame performance: games of at least this many moves, balance at the check move
    #: (after Black's move) within ± this many pawns.
    endgame_min_moves: int = 50
    endgame_check_move: int = 40
    endgame_max_balance: int = 1
    #: Classes whose games make the ECO draw percentages (METHODS: all games).
    opening_classes: tuple[str, ...] = ("classical", "rapid", "blitz")
    #: ECO codes drawn on the opening chart need this many games (the table lists all).
    opening_chart_min_games: int = 10
    #: Players drawn on the rating-history chart.
    chart_players: int = 8
    #: Lists side by side: also every player with this many classical games in the current
    #: window (beside the players of the current lists).
    lists_min_games: int = 10
    #: A player who returns after this many months without a game of the class restarts at
    #: their Elo tag (0 = never; METHODS: the tag at first appearance only).
    reseed_months: int = 0
    #: Elo performance: a missing Elo tag is filled from the same player's tags in the same
    #: event and class, else from their nearest game of the same class within this many
    #: months (0 = the same event only).
    elo_fill_months: int = 3
    #: Elo performance: n/a with fewer games than this against a rated opponent.
    performance_min_games: int = 5


@dataclass(frozen=True)
class ConformanceSection:
    """Alliot's conformance, gain and Markov predictors (METHODS.md section 3)."""

    first_move: int = 10
    #: Scores are clipped to ±clip_pawns first: a mate is a decided position, not an error.
    clip_pawns: float = 10.0
    gb_limit_pawns: float = 2.0
    k1: float = 1.44
    k2: float = -3.53
    #: x (pawns) of the conformance predictor: share of moves with conformance ≤ x.
    predictor_x: float = 0.3
    #: Conformance the predictor and the Nelder–Mead fit use: "raw", "gb" or "ponderated".
    predictor_kind: str = "ponderated"
    #: Conformance drawn on the champions page ("strength at 0 cp / ≤ 0.3 pawn").
    strength_kind: str = "raw"
    #: Games (with both sides counted) needed before α, β and the constants are fitted.
    min_fit_games: int = 30
    fit_max_evals: int = 400
    n0: int = 29
    b_pawns: float = 2.2
    #: "alliot" (default), "step" (Ferreira) or "tanh"
    gain_vector: str = "alliot"
    tanh_a: float = 1.16
    #: Conformance whose distribution the gain predictor uses.
    gain_kind: str = "raw"
    markov_min_row: int = 20
    markov_mirror_black: bool = False
    #: Pseudo-counts of the all-players row given to an extreme row (≤ −200 or ≥ +200 cp)
    #: whose moves never left the class, so that the chain has one closed class.
    markov_exit_pseudo: float = 2.0
    #: Moves (turns) a player-year needs to enter comparisons.
    min_moves: int = 200
    #: The head-to-head compares every pair of these many player-years at most: the
    #: eligible ones with the most counted moves (pairs grow as the square of the count).
    head_to_head_max: int = 300
    #: Title matches: games in these folders (relative to the games folder) …
    title_folders: tuple[str, ...] = ("world-championships",)
    #: … or whose event name matches one of these regular expressions (case-insensitive) …
    title_events: tuple[str, ...] = (
        r"\bworld\s+championship\b",
        r"\bwch\b",
        r"\bwcc\b",
    )
    #: … and none of these.
    title_exclude: tuple[str, ...] = (
        r"\bk\.?o\.?(\b|$)",
        r"candidat",
        r"\bteam\b",
        r"\bwomen",
        r"\bjunior",
        r"\bsenior",
        r"\bcup\b",
        r"\b(rapid|blitz|armageddon)\b",
        r"\bu\d\d\b",
    )
    #: A decisive title-match game this short (half-moves) is a forfeit, left out of the score.
    forfeit_max_plies: int = 2

    def __post_init__(self) -> None:
        kinds = ("raw", "gb", "ponderated")
        for key in ("predictor_kind", "strength_kind", "gain_kind"):
            if getattr(self, key) not in kinds:
                raise ConfigError(
                    f"[conformance] {key} = {getattr(self, key)!r}: use one of {list(kinds)}"
                )
        vectors = ("alliot", "step", "tanh")
        if self.gain_vector not in vectors:
            raise ConfigError(
                f"[conformance] gain_vector = {self.gain_vector!r}: use one of {list(vectors)}"
            )
        import re

        for key in ("title_events", "title_exclude"):
            for pattern in getattr(self, key):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(
                        f"[conformance] {key}: {pattern!r} is not a regular expression: {exc}"
                    ) from exc


@dataclass(frozen=True)
class IntrinsicSection:
    """Regan & Haworth's intrinsic ratings (METHODS.md section 4)."""

    #: Candidate lines N per turn (the played move is added when it is outside them).
    lines: int = 10
    first_move: int = 9
    #: Turns whose position score |e_best| exceeds this are skipped.
    max_eval_cp: int = 300
    tie_penalty_pawns: float = 0.03
    #: "percentile" (default), "ml" or "mm_ad": the fit used for the calibration and the IPRs.
    fit: str = "percentile"
    milepost_step: int = 100
    milepost_min: int = 2000
    milepost_max: int = 2800
    #: Both players within ± this of a milepost: 20 as METHODS.md and the seed. The demo's
    #: content/site.toml sets 75, the band its calibration set was selected with.
    milepost_width: int = 20
    #: Glob patterns (relative to the games folder) of the files whose rated games make the
    #: Elo calibration: the intrinsic buckets and the Bayesian Elo groups. Empty: every rated
    #: game (METHODS.md). A fixed set keeps the scale still when tournaments are added.
    calibration_games: tuple[str, ...] = ()
    #: Turns a milepost bucket needs to be fitted.
    min_turns: int = 500
    #: A bucket with more turns is fitted on whole games drawn by a seeded hash of their ids,
    #: until this many turns, and at least min_turns (its counts, mean Elo and IPR use every
    #: turn). 0: every turn.
    calibration_max_turns: int = 30000
    #: Fitted buckets the Elo calibration needs.
    min_buckets: int = 3
    #: Turns a player, player-year or event needs for an IPR.
    ipr_min_turns: int = 150
    #: The rating list: each player's last two years (to their own latest game).
    window_months: int = 24
    bootstrap: int = 1000
    seed: int = 20111
    #: The Elo grid of calibrated agents an IPR is chosen from.
    elo_grid_min: int = 1000
    elo_grid_max: int = 3600
    elo_grid_step: int = 25

    def __post_init__(self) -> None:
        if self.fit not in ("percentile", "ml", "mm_ad"):
            raise ConfigError(f'[intrinsic] fit = {self.fit!r}: use "percentile", "ml" or "mm_ad"')
        if self.milepost_min > self.milepost_max:
            raise ConfigError("[intrinsic] milepost_min must not exceed milepost_max")
        if self.elo_grid_max - self.elo_grid_min < 4 * self.elo_grid_step:
            raise ConfigError("[intrinsic] the Elo grid needs at least five points")


@dataclass(frozen=True)
class BayesianSection:
    """Di Fatta, Haworth & Regan's Bayesian skill (METHODS.md section 5)."""

    #: Candidates: the top ``lines`` lines plus the played move when it is outside them.
    lines: int = 10
    first_move: int = 13
    k_pawns: float = 0.1
    c_min: float = 0.0
    c_max: float = 5.0
    coarse_step: float = 0.1
    fine_step: float = 0.001
    #: Adaptive grid: keep the points whose log posterior is within this of the maximum.
    narrow_log: float = 20.0
    #: Elo groups: both players within ± this of a milepost of [intrinsic]: 10 as METHODS.md
    #: and the seed (the demo's content/site.toml sets 75).
    group_width: int = 10
    #: Turns a player or player-year needs to be listed.
    min_turns: int = 100
    #: Turns a game side needs to count in the winners / losers / drawers table: shorter
    #: sides' posteriors stay near the middle of the flat prior (not in METHODS.md).
    side_min_turns: int = 20
    #: Turns an Elo group needs to enter the Elo mapping.
    group_min_turns: int = 500
    window_months: int = 24

    def __post_init__(self) -> None:
        if self.c_min >= self.c_max:
            raise ConfigError("[bayesian] c_min must be below c_max")
        if self.fine_step > self.coarse_step:
            raise ConfigError("[bayesian] fine_step must not exceed coarse_step")


#: The periods an edition can be published at: months between two editions.
EDITION_PERIODS = {"monthly": 1, "quarterly": 3, "yearly": 12}


@dataclass(frozen=True)
class EditionsSection:
    """Editions of the rating lists through time (issue 20): each list as it stood at the
    start of every period since ``since``, from the games played before."""

    #: "" (no editions), "monthly", "quarterly" or "yearly".
    every: str = ""
    #: The first edition ("YYYY.MM.DD"): editions fall on the first day of a month (of a
    #: quarter: January, April, July, October; of a year: January), from this date on.
    since: str = ""


@dataclass(frozen=True)
class BuildSection:
    #: Partitions of the move store (by player): the unit a worker reads and the build
    #: recomputes. A partition's rows are read into memory at once, so a large site wants
    #: about one partition per 200,000 analysed moves. Changing it rewrites the store.
    partitions: int = 64


@dataclass(frozen=True)
class Settings:
    site: SiteSection = field(default_factory=SiteSection)
    content: ContentSection = field(default_factory=ContentSection)
    analysis: AnalysisSection = field(default_factory=AnalysisSection)
    quality: QualitySection = field(default_factory=QualitySection)
    time_control: TimeControlSection = field(default_factory=TimeControlSection)
    results: ResultsSection = field(default_factory=ResultsSection)
    conformance: ConformanceSection = field(default_factory=ConformanceSection)
    intrinsic: IntrinsicSection = field(default_factory=IntrinsicSection)
    bayesian: BayesianSection = field(default_factory=BayesianSection)
    editions: EditionsSection = field(default_factory=EditionsSection)
    build: BuildSection = field(default_factory=BuildSection)

    def digest(self, *sections: str) -> str:
        """md5 of the sorted JSON of the named sections (all when none named)."""
        data = dataclasses.asdict(self)
        if sections:
            data = {k: data[k] for k in sorted(sections)}
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.md5(blob).hexdigest()


_RANGES: dict[tuple[str, str], tuple[float, float]] = {
    ("site", "rows_per_page"): (2, 1_000_000),
    ("build", "partitions"): (1, 100_000),
    ("conformance", "first_move"): (1, 500),
    ("conformance", "clip_pawns"): (2, 200),
    ("conformance", "gb_limit_pawns"): (0.01, 100),
    ("conformance", "k1"): (0.01, 1000),
    ("conformance", "k2"): (-1000, -0.01),
    ("conformance", "predictor_x"): (0, 2),
    ("conformance", "min_fit_games"): (3, 10**7),
    ("conformance", "fit_max_evals"): (1, 100000),
    ("conformance", "n0"): (0, 200),
    ("conformance", "b_pawns"): (0, 100),
    ("conformance", "tanh_a"): (0.001, 100),
    ("conformance", "markov_min_row"): (0, 100000),
    ("conformance", "markov_exit_pseudo"): (0, 100000),
    ("conformance", "min_moves"): (1, 10**7),
    # Its pairs grow as its square: 1,000 is 1,000,000 pairs (152 MB of stationary vectors,
    # downloads of about 100 MB); beyond, the matrices outgrow a machine's memory.
    ("conformance", "head_to_head_max"): (2, 1_000),
    ("conformance", "forfeit_max_plies"): (0, 20),
    ("analysis", "depth"): (0, 60),
    ("analysis", "nodes"): (0, 10**10),
    ("analysis", "multipv"): (1, 500),
    ("analysis", "hash_mb"): (1, 65536),
    ("analysis", "threads"): (1, 1024),
    ("analysis", "workers"): (0, 1024),
    ("analysis", "first_move"): (1, 500),
    ("analysis", "deadline_s"): (0, 86400),
    ("analysis", "max_tries"): (1, 100),
    ("analysis", "chunk_size"): (1, 10000),
    ("quality", "first_move"): (1, 500),
    ("quality", "clip_cp"): (1, 100000),
    ("quality", "window_cp"): (1, 100000),
    ("quality", "window_months"): (1, 1200),
    ("quality", "min_games"): (1, 100000),
    ("quality", "mate_cp"): (100, 10**6),
    ("time_control", "knockout_classical_games"): (1, 100),
    ("time_control", "blitz_max_s"): (1, 86400),
    ("time_control", "rapid_max_s"): (1, 86400),
    ("results", "current_min_elo"): (0, 4000),
    ("results", "current_opponent_min_elo"): (0, 4000),
    ("results", "current_months"): (1, 1200),
    ("results", "fighter_min_elo"): (0, 4000),
    ("results", "historic_since"): (1000, 3000),
    ("results", "historic_min_elo"): (0, 4000),
    ("results", "historic_opponent_min_elo"): (0, 4000),
    ("results", "early_min_elo"): (0, 4000),
    ("results", "early_opponent_min_elo"): (0, 4000),
    ("results", "min_games"): (1, 100000),
    ("results", "annual_min_games"): (1, 100000),
    ("results", "annual_min_games_current_year"): (1, 100000),
    ("results", "rapid_min_games"): (1, 100000),
    ("results", "rapid_annual_min_games"): (1, 100000),
    ("results", "blitz_min_games"): (1, 100000),
    ("results", "historic_early_min_games"): (1, 100000),
    ("results", "historic_early_until"): (1000, 3000),
    ("results", "start_elo"): (0, 4000),
    ("results", "k_numerator"): (0.001, 100000),
    ("results", "gm_min"): (1, 100000),
    ("results", "gm_max"): (1, 100000),
    ("results", "gm_months"): (1, 1200),
    ("results", "expected_cap"): (1, 4000),
    ("results", "rapid_k"): (0.001, 1000),
    ("results", "blitz_k"): (0.001, 1000),
    ("results", "rapid_since"): (1000, 3000),
    ("results", "blitz_since"): (1000, 3000),
    ("results", "rapid_min_elo"): (0, 4000),
    ("results", "sdf_plies"): (0, 1000),
    ("results", "sdf_points_per_ply"): (0, 1000),
    ("results", "sdf_max_penalty"): (0, 100000),
    ("results", "sdf_white_bonus"): (-1000, 1000),
    ("results", "sdf_elo_divisor"): (0.001, 10000),
    ("results", "sacrifice_deficit"): (1, 39),
    ("results", "sacrifice_plies"): (1, 1000),
    ("results", "endgame_min_moves"): (1, 1000),
    ("results", "endgame_check_move"): (1, 1000),
    ("results", "endgame_max_balance"): (0, 39),
    ("results", "chart_players"): (0, 100),
    ("results", "lists_min_games"): (1, 100000),
    ("results", "opening_chart_min_games"): (1, 100000),
    ("results", "reseed_months"): (0, 12000),
    ("results", "elo_fill_months"): (0, 1200),
    ("results", "performance_min_games"): (1, 100000),
    ("intrinsic", "lines"): (2, 50),
    ("intrinsic", "first_move"): (1, 500),
    ("intrinsic", "max_eval_cp"): (1, 100000),
    ("intrinsic", "tie_penalty_pawns"): (0, 1),
    ("intrinsic", "milepost_step"): (10, 1000),
    ("intrinsic", "milepost_min"): (0, 4000),
    ("intrinsic", "milepost_max"): (0, 4000),
    ("intrinsic", "milepost_width"): (0, 500),
    ("intrinsic", "min_turns"): (10, 10**8),
    ("intrinsic", "min_buckets"): (2, 100),
    ("intrinsic", "calibration_max_turns"): (0, 10**9),
    ("intrinsic", "ipr_min_turns"): (10, 10**8),
    ("intrinsic", "window_months"): (1, 1200),
    ("intrinsic", "bootstrap"): (20, 100000),
    ("intrinsic", "seed"): (0, 2**32 - 1),
    ("intrinsic", "elo_grid_min"): (0, 4000),
    ("intrinsic", "elo_grid_max"): (0, 5000),
    ("intrinsic", "elo_grid_step"): (1, 200),
    ("bayesian", "lines"): (1, 500),
    ("bayesian", "first_move"): (1, 500),
    ("bayesian", "k_pawns"): (0.001, 100),
    ("bayesian", "c_min"): (0, 100),
    ("bayesian", "c_max"): (0.01, 100),
    ("bayesian", "coarse_step"): (0.0001, 10),
    ("bayesian", "fine_step"): (0.00001, 10),
    ("bayesian", "narrow_log"): (1, 1000),
    ("bayesian", "group_width"): (0, 500),
    ("bayesian", "min_turns"): (1, 10**8),
    ("bayesian", "side_min_turns"): (1, 10**8),
    ("bayesian", "group_min_turns"): (1, 10**8),
    ("bayesian", "window_months"): (1, 1200),
}

_CLASSES = {"classical", "rapid", "blitz"}

#: Settings that bound a range from below and above: (section, lower, upper).
_ORDERED = (
    ("results", "gm_min", "gm_max"),
    ("intrinsic", "milepost_min", "milepost_max"),
    ("intrinsic", "elo_grid_min", "elo_grid_max"),
)


def _check_value(where: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        (item_hint, _ellipsis) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return tuple(_check_value(f"{where}[{i}]", v, item_hint) for i, v in enumerate(value))
    if origin in (types.UnionType, typing.Union):
        for arg in typing.get_args(hint):
            try:
                return _check_value(where, value, arg)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} has the wrong type")
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected a whole number, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def _build_section(name: str, cls: type[Any], table: Any) -> Any:
    if not isinstance(table, dict):
        raise ConfigError(f"[{name}] must be a table, got {table!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"[{name}] unknown setting {unknown[0]!r}; known settings: {', '.join(sorted(known))}"
        )
    values = {}
    for key, raw in table.items():
        where = f"[{name}] {key}"
        value = _check_value(where, raw, hints[key])
        lo_hi = _RANGES.get((name, key))
        if lo_hi is not None and not lo_hi[0] <= value <= lo_hi[1]:
            raise ConfigError(f"{where} = {value!r} is outside {lo_hi[0]:g}..{lo_hi[1]:g}")
        values[key] = value
    return cls(**values)


def settings_from_dict(data: dict[str, Any]) -> Settings:
    hints = typing.get_type_hints(Settings)
    sections = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(data) - sections)
    if unknown:
        raise ConfigError(
            f"unknown section [{unknown[0]}] in site.toml; known: {', '.join(sorted(sections))}"
        )
    built = {name: _build_section(name, hints[name], data[name]) for name in data}
    settings = Settings(**built)
    _check_consistency(settings)
    return settings


def _check_consistency(s: Settings) -> None:
    for section, low, high in _ORDERED:
        table = getattr(s, section)
        if getattr(table, low) > getattr(table, high):
            raise ConfigError(
                f"[{section}] {low} = {getattr(table, low)!r} exceeds "
                f"{high} = {getattr(table, high)!r}"
            )
    a = s.analysis
    if (a.depth > 0) == (a.nodes > 0):
        raise ConfigError(
            "[analysis] set exactly one of depth and nodes (the other to 0); "
            f"got depth = {a.depth}, nodes = {a.nodes}"
        )
    if a.source not in {"engine", "pgn-eval"}:
        raise ConfigError(f'[analysis] source = {a.source!r}: use "engine" or "pgn-eval"')
    bad = sorted(set(a.classes) - _CLASSES)
    if bad:
        raise ConfigError(f"[analysis] classes: unknown class {bad[0]!r}; use {sorted(_CLASSES)}")
    if s.site.as_of:
        from site_builder.model import PgnDate

        d = PgnDate.parse(s.site.as_of)
        if d.year is None or str(d) != s.site.as_of:
            raise ConfigError(f"[site] as_of = {s.site.as_of!r} is not a date like 2025.12.31")
    _check_editions(s.editions)
    if s.site.base_url:
        from urllib.parse import urlsplit

        u = urlsplit(s.site.base_url)
        if u.scheme not in {"http", "https"} or not u.netloc or u.query or u.fragment:
            raise ConfigError(
                f"[site] base_url = {s.site.base_url!r} is not an http(s) address like "
                '"https://example.org/chess/" (or "" for relative links)'
            )


def _check_editions(e: EditionsSection) -> None:
    from site_builder.model import PgnDate

    if e.every not in {"", *EDITION_PERIODS}:
        raise ConfigError(
            f"[editions] every = {e.every!r}: use "
            + ", ".join(f'"{p}"' for p in EDITION_PERIODS)
            + ' or "" (no editions)'
        )
    if e.since:
        d = PgnDate.parse(e.since)
        if d.year is None or d.month is None or d.day is None or str(d) != e.since:
            raise ConfigError(f"[editions] since = {e.since!r} is not a date like 2023.01.01")
    elif e.every:
        raise ConfigError(
            f'[editions] every = "{e.every}" needs since, the date of the first edition '
            '(like "2023.01.01")'
        )


def load_settings(
    content_dir: Path, overrides: dict[str, dict[str, Any]] | None = None
) -> Settings:
    """Read ``content_dir/site.toml`` (optional) and apply command-line overrides."""
    path = content_dir / "site.toml"
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    for section, values in (overrides or {}).items():
        data.setdefault(section, {}).update(values)
    return settings_from_dict(data)
