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
    """Rules for classical / rapid / blitz (METHODS.md section 0)."""

    # "playoff" is not a keyword: historical title playoffs were classical games.
    rapid_keywords: tuple[str, ...] = ("rapid", "tiebreak", "tie-break")
    blitz_keywords: tuple[str, ...] = ("blitz", "armageddon", "bullet")
    #: Keywords of games that are not serious classical play; counted as rapid unless blitz.
    other_keywords: tuple[str, ...] = ("simul", "blindfold", "online", "exhibition")
    #: Base+increment seconds: a game of expected duration (base + 40 × increment)
    #: below ``blitz_max_s`` is blitz, below ``rapid_max_s`` rapid (FIDE's 10 and 60 minutes).
    blitz_max_s: int = 600
    rapid_max_s: int = 3600


@dataclass(frozen=True)
class ResultsSection:
    """Fischl's results statistics (METHODS.md section 2). Owned by metrics/results.py."""

    current_min_elo: int = 2500
    current_opponent_min_elo: int = 2400
    fighter_min_elo: int = 2600
    historic_since: int = 1972
    historic_min_elo: int = 2400
    historic_opponent_min_elo: int = 2300
    min_games: int = 50
    annual_min_games: int = 20
    annual_min_games_current_year: int = 10
    rapid_min_games: int = 20
    rapid_annual_min_games: int = 10
    blitz_min_games: int = 10
    historic_early_min_games: int = 20
    historic_early_until: int = 1950
    start_elo: int = 2200
    k_numerator: float = 1200.0
    gm_min: int = 70
    gm_max: int = 150
    rapid_k: float = 20.0
    blitz_k: float = 20.0
    rapid_since: int = 2000


@dataclass(frozen=True)
class ConformanceSection:
    """Alliot's conformance, gain and Markov predictors (METHODS.md section 3)."""

    first_move: int = 10
    gb_limit_pawns: float = 2.0
    k1: float = 1.44
    k2: float = -3.53
    n0: int = 29
    b_pawns: float = 2.2
    #: "alliot" (default), "step" (Ferreira) or "tanh"
    gain_vector: str = "alliot"
    markov_min_row: int = 20
    markov_mirror_black: bool = False
    markov_max_pairs: int = 200
    #: Moves (turns) a player-year needs to enter comparisons.
    min_moves: int = 200


@dataclass(frozen=True)
class IntrinsicSection:
    """Regan & Haworth's intrinsic ratings (METHODS.md section 4)."""

    lines: int = 10
    first_move: int = 9
    max_eval_cp: int = 300
    tie_penalty_pawns: float = 0.03
    #: "percentile" (default), "ml" or "mm_ad"
    fit: str = "percentile"
    milepost_step: int = 100
    milepost_min: int = 2000
    milepost_max: int = 2800
    milepost_width: int = 20
    min_turns: int = 500
    bootstrap: int = 200
    seed: int = 20111


@dataclass(frozen=True)
class BayesianSection:
    """Di Fatta, Haworth & Regan's Bayesian skill (METHODS.md section 5)."""

    lines: int = 10
    first_move: int = 13
    k_pawns: float = 0.1
    c_min: float = 0.0
    c_max: float = 5.0
    coarse_step: float = 0.1
    fine_step: float = 0.001
    group_width: int = 10
    min_turns: int = 100


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

    def digest(self, *sections: str) -> str:
        """md5 of the sorted JSON of the named sections (all when none named)."""
        data = dataclasses.asdict(self)
        if sections:
            data = {k: data[k] for k in sorted(sections)}
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.md5(blob).hexdigest()


_RANGES: dict[tuple[str, str], tuple[float, float]] = {
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
}

_CLASSES = {"classical", "rapid", "blitz"}


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
    a = s.analysis
    if (a.depth > 0) == (a.nodes > 0):
        raise ConfigError(
            "[analysis] set exactly one of depth and nodes (the other to 0); "
            f"got depth = {a.depth}, nodes = {a.nodes}"
        )
    bad = sorted(set(a.classes) - _CLASSES)
    if bad:
        raise ConfigError(f"[analysis] classes: unknown class {bad[0]!r}; use {sorted(_CLASSES)}")
    if s.site.as_of:
        from site_builder.model import PgnDate

        d = PgnDate.parse(s.site.as_of)
        if d.year is None or str(d) != s.site.as_of:
            raise ConfigError(f"[site] as_of = {s.site.as_of!r} is not a date like 2025.12.31")


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
