"""Frozen value objects passed between the stages of a build."""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import ClassVar, TypeVar, overload

_T = TypeVar("_T")

_DATE_RE = re.compile(r"^(\d{4}|\?{4})\.(\d{2}|\?{2})\.(\d{2}|\?{2})$")


def event_title(name: str, year: int | None) -> str:
    """An event's name with its year ("World Championship 13th 1927"); the year is not
    repeated when the name already ends with it ("13th Norway Chess 2025")."""
    if not year:
        return name
    y = str(year)
    return name if name == y or name.endswith(f" {y}") else f"{name} {y}"


def refusing_other_layouts(cls: type[_T]) -> type[_T]:
    """Give a slotted frozen dataclass kept in the build cache a ``__getstate__`` (its field
    values as a tuple) and a ``__setstate__`` that takes them as a tuple or a list; a pickle
    of another layout (a dict of an earlier version) raises, so the build cache discards the
    entry as garbled instead of setting the fields to its keys. The fields the class names in
    ``SHARED_STRINGS`` are interned as they are read, as its ``__post_init__`` does.

    Set after ``@dataclass``, which replaces a class's own before Python 3.11.4. Unlike
    dataclass's own, neither calls :func:`dataclasses.fields` per object, and the values are
    set through the slots' descriptors: plies (millions in a large build) pickle faster
    (70,418 plies: loads 228 against 306 ms, dumps 161 against 260 ms)."""
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    values = operator.attrgetter(*names)
    slots = tuple(cls.__dict__[name] for name in names)
    one = len(names) == 1

    def __getstate__(self: object) -> tuple[object, ...]:
        return (values(self),) if one else values(self)

    def __setstate__(self: object, state: object) -> None:
        if not isinstance(state, list | tuple) or len(state) != len(slots):
            raise TypeError(f"a pickled {type(self).__name__} of another layout")
        for slot, value in zip(slots, state):  # noqa: B905 (lengths checked)
            slot.__set__(self, value)

    shared: tuple[str, ...] = getattr(cls, "SHARED_STRINGS", ())

    def __setstate_shared__(self: object, state: object) -> None:
        __setstate__(self, state)
        share_strings(self, shared)

    setattr(cls, "__getstate__", __getstate__)  # noqa: B010
    setattr(cls, "__setstate__", __setstate_shared__ if shared else __setstate__)  # noqa: B010
    return cls


def share_strings(obj: object, names: Iterable[str]) -> None:
    """Intern the string fields ``names`` of a frozen ``obj``: equal values, one object."""
    for name in names:
        value = getattr(obj, name)
        if type(value) is str:
            object.__setattr__(obj, name, sys.intern(value))


@refusing_other_layouts
@dataclass(frozen=True, order=True, slots=True)
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


class Tokens(Sequence[str]):
    """A game's moves (UCI) or SANs as one space-separated string, read as a tuple of
    strings. A tuple costs eight bytes of pointer a move on top of its strings, and a
    corpus holds every record; a move or SAN is never empty and never holds a space."""

    __slots__ = ("text",)

    def __init__(self, items: Iterable[str] | str = ()) -> None:
        self.text = items if isinstance(items, str) else " ".join(items)

    def __len__(self) -> int:
        return self.text.count(" ") + 1 if self.text else 0

    def _items(self) -> list[str]:
        return self.text.split(" ") if self.text else []

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return tuple(self._items())[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tokens):
            return self.text == other.text
        if isinstance(other, tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[type[Tokens], tuple[str]]:
        return (Tokens, (self.text,))


class Tags(Mapping[str, str]):
    """A game's PGN tags in file order, as one flat tuple (key, value, key, value, ...):
    a dict of a dozen tags and its read-only view cost about twice as much (504 against 272
    bytes), for every game of a corpus."""

    __slots__ = ("flat",)

    def __init__(self, tags: Mapping[str, str] | None = None) -> None:
        self.flat = tuple(sys.intern(s) for kv in (tags or {}).items() for s in kv)

    def __getitem__(self, key: str) -> str:
        flat = self.flat
        for i in range(0, len(flat), 2):
            if flat[i] == key:
                return flat[i + 1]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat[::2])

    def __len__(self) -> int:
        return len(self.flat) // 2

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.flat)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self) -> tuple[type[Tags], tuple[dict[str, str]]]:
        return (Tags, (dict(self.items()),))


@refusing_other_layouts
@dataclass(frozen=True, slots=True)
class GameRecord:
    """One accepted game. ``moves`` are UCI strings from the standard start position.

    A corpus holds every record, so a record is kept small: slots, its moves and SANs as
    :class:`Tokens`, its tags as :class:`Tags`; any sequence or mapping is accepted."""

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
    moves: Sequence[str]
    #: The moves in SAN without check signs (from the PGN, for display); may be empty.
    sans: Sequence[str] = field(default_factory=Tokens)
    tags: Mapping[str, str] = field(default_factory=Tags)
    #: "classical" | "rapid" | "blitz", and the rule that decided it.
    time_class: str = "classical"
    time_class_reason: str = ""

    #: Strings many games share (names, events, sites, rounds): one object a process, as
    #: the tags' values, instead of one a game (at 10× the demo the records took 68 MB as
    #: objects, 55 MB with these shared).
    SHARED_STRINGS: ClassVar[tuple[str, ...]] = (
        "white",
        "black",
        "result",
        "event",
        "site",
        "round",
        "eco",
        "time_class",
        "time_class_reason",
    )

    def __post_init__(self) -> None:
        for name in ("moves", "sans"):
            value = getattr(self, name)
            if not isinstance(value, Tokens):
                object.__setattr__(self, name, Tokens(value))
        if not isinstance(self.tags, Tags):
            object.__setattr__(self, "tags", Tags(self.tags))
        share_strings(self, self.SHARED_STRINGS)

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
