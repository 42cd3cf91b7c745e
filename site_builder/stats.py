"""What a build reports: its counts, and the seconds each phase took."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from site_builder.render.output import WriteStats


@dataclass
class BuildStats:
    games: int = 0
    files: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    analysed_games: int = 0
    positions: int = 0  # unique positions the site needs
    cache_hits: int = 0  # of those, read from the evaluation cache
    reused: int = 0  # of those, in games whose move rows the build cache kept
    analysed: int = 0  # positions sent to an engine
    searches: int = 0
    engine_seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    imported: int = 0
    pages: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Why this build differs from the last one (``--explain``).
    explanation: list[str] = field(default_factory=list)
    written: WriteStats | None = None
    #: Seconds each recomputed metric family took.
    family_seconds: dict[str, float] = field(default_factory=dict)
    #: Metric families recomputed (the others were unchanged and reused).
    recomputed: list[str] = field(default_factory=list)
    #: family → players whose per-player numbers were recomputed.
    recomputed_players: dict[str, set[str]] = field(default_factory=dict)
    #: time class → (first game re-rated, games) of each sequential rating run this build.
    elo_resumed: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: metric family (and kind of group) → groups computed and reused from the last build
    group_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: per-partition work of the families → partitions computed (not reused) this build
    partitions: dict[str, int] = field(default_factory=dict)
    #: partition results of the last build deleted from the build cache (no build uses them)
    partition_results_dropped: int = 0


class Clock:
    """Adds the seconds since the last lap (or since it was made) to ``stats.seconds``."""

    def __init__(self, stats: BuildStats) -> None:
        self.stats, self.last = stats, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stats.seconds[name] = self.stats.seconds.get(name, 0.0) + now - self.last
        self.last = now
