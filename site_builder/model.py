"""Frozen value objects passed between the stages of a build."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

_DATE_RE = re.compile(r"^(\d{4}|\?{4})\.(\d{2}|\?{2})\.(\d{2}|\?{2})$")


def event_title(name: str, year: int | None) -> str:
    """An event's name with its year ("World Championship 13th 1927"); the year is not
    repeated when the name already ends with it ("13th Norway Chess 2025")."""
    if not year:
        return name
    y = str(year)
    return name if name == y or name.endswith(f" {y}") else f"{name} {y}"


@dataclass(frozen=True, order=True)
class PgnDate:
    """A PGN date with unknown parts as ``None`` (``"1927.??.??"`` → year 1927)."""

    year: int | None
    month: int | None = None
    day: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> PgnDate:
        m = _DATE_RE.match((text or "").strip())
        if not m:
            # Lenient: take a leading year if any ("1927", "1927.?.?").
            y = re.match(r"^(\d{4})", (text or "").strip())
            return cls(int(y.group(1)) if y else None)
        parts = [None if "?" in p else int(p) for p in m.groups()]
        year, month, day = parts
        if month is not None and not 1 <= month <= 12:
            month, day = None, None
        if day is not None and not 1 <= day <= 31:
            day = None
        return cls(year, month, day)

    @property
    def sort_key(self) -> tuple[int, int, int]:
        return (self.year or 0, self.month or 0, self.day or 0)

    @property
    def months(self) -> float | None:
        """Months since year 0, mid-month/mid-year when unknown (for windows)."""
        if self.year is None:
            return None
        month = self.month if self.month is not None else 6.5
        return self.year * 12 + month - 1

    def __str__(self) -> str:
        y = f"{self.year:04d}" if self.year is not None else "????"
        m = f"{self.month:02d}" if self.month is not None else "??"
        d = f"{self.day:02d}" if self.day is not None else "??"
        return f"{y}.{m}.{d}"


@dataclass(frozen=True)
class GameRecord:
    """One accepted game. ``moves`` are UCI strings from the standard start position."""

    game_id: str
    source: str
    line: int
    white: str
    black: str
    result: str
    date: PgnDate
    event: str
    site: str
    round: str
    white_elo: int | None
    black_elo: int | None
    eco: str | None
    moves: tuple[str, ...]
    #: The moves in SAN without check signs (from the PGN, for display); may be empty.
    sans: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: "classical" | "rapid" | "blitz", and the rule that decided it.
    time_class: str = "classical"
    time_class_reason: str = ""

    def __post_init__(self) -> None:
        self._share_strings()

    def _share_strings(self) -> None:
        # A corpus repeats a few thousand move strings millions of times: one copy of each.
        object.__setattr__(self, "moves", tuple(map(sys.intern, self.moves)))
        object.__setattr__(self, "sans", tuple(map(sys.intern, self.sans)))
        tags = {sys.intern(k): sys.intern(v) for k, v in self.tags.items()}
        object.__setattr__(self, "tags", MappingProxyType(tags))

    def __getstate__(self) -> dict[str, object]:
        # mappingproxy does not pickle; the build cache stores records.
        state = dict(self.__dict__)
        state["tags"] = dict(self.tags)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self._share_strings()

    @property
    def plies(self) -> int:
        return len(self.moves)

    @property
    def full_moves(self) -> int:
        return (len(self.moves) + 1) // 2

    @property
    def score_white(self) -> float | None:
        return {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(self.result)

    def label(self) -> str:
        rnd = f", round {self.round}" if self.round and self.round not in {"?", "-"} else ""
        return f"{self.white} – {self.black}, {event_title(self.event, self.date.year)}{rnd}"


@dataclass(frozen=True, order=True)
class Problem:
    """Something wrong in the input, for the build report.

    ``severity`` is ``"skipped"`` (the game is not counted), ``"duplicate"`` (counted once,
    elsewhere) or ``"warning"`` (counted, but something was repaired or ignored).
    """

    source: str
    line: int
    severity: str
    game: str
    reason: str
