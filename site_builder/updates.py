"""What changed from one build to the next: snapshots of the site's lists and the updates
made by comparing two of them (issue 20).

A :class:`Snapshot` is the compact record of what a build published: each rating list
(player → rank and value, in the list page's order), the games and events with their page
paths, each event's best performances and the method settings' digest. :func:`diff` compares
two snapshots into an :class:`Update` (new and removed games and events, per list who entered,
who left and the biggest moves). Both are pure: an update is made from the two snapshots
only, never from file times or the clock, so the same builds give the same bytes. It is
dated by the latest date of its new games (else the site's as-of date) and named by a digest
of the two snapshots and the update before it (so an update that undoes another and a later
one that redoes it are two updates with two ids).

The thin IO shell at the end (:func:`advance`, :func:`keep`) reads the last snapshot and the
history of updates from the build cache, keyed by the output folder, and writes them back
after the pages are in place. The first build into an output folder has no snapshot to
compare with: it records none (its "What's new" page says so).

A list is named by its key and an edition (``""``: the current list), so editions of a list
(issue 20 item 2) can be snapshotted and compared as lists of their own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from site_builder.memo import Kind, entry

if TYPE_CHECKING:
    import pandas as pd

    from site_builder.incremental import BuildCache
    from site_builder.sitedata import SiteData

#: Version of the snapshot and update records (a change makes the build cache's old ones
#: unread: the next build is then a first build for the updates).
SCHEMA = 1
#: The biggest moves listed per list, in rank and in value.
MOVERS = 5
#: The best performances listed per method for a new event.
BEST = 3
#: Namespace of the updates' UUIDs (uuid5 of an update's digest): never change it, it keeps
#: every feed entry's id.
NAMESPACE = uuid.UUID("5b0f3c1e-8a57-4d2e-9f1c-2d6a0e7b4c19")
#: The published history, in the output folder.
HISTORY = "updates.json"
#: Settings sections that change no number (titles, paging, the move store's layout).
PRESENTATION_SECTIONS = ("site", "build", "editions")


@dataclass(frozen=True)
class ListSpec:
    """A rating list of the site, as its page shows it."""

    key: str
    title: str
    page: str  #: the list page, relative to the site root
    value: str  #: what the value is ("index", "Elo", ...)
    digits: int  #: decimals shown


#: The lists an update compares, in the order of the menus.
LISTS: tuple[ListSpec, ...] = (
    ListSpec("quality", "Play quality index", "index.html", "index", 1),
    ListSpec("elo", "Improved Elo", "elo.html", "Elo", 0),
    ListSpec("rapid", "Rapid", "rapid.html", "Elo", 0),
    ListSpec("blitz", "Blitz", "blitz.html", "Elo", 0),
    ListSpec("fighter", "Fighter list", "fighters.html", "short draw factor", 2),
    ListSpec("ipr", "Intrinsic rating (IPR)", "intrinsic.html", "IPR", 0),
    ListSpec("skill", "Bayesian skill", "skill.html", "c̄", 3),
)
SPECS = {s.key: s for s in LISTS}


@dataclass(frozen=True)
class Listing:
    """One list as published: its players in rank order with their values."""

    key: str  #: a :data:`LISTS` key
    rows: tuple[tuple[str, float | None], ...]  #: (player, value), rank 1 first
    edition: str = ""  #: "" for the current list; an edition's date otherwise


@dataclass(frozen=True)
class GameRef:
    game_id: str
    path: str
    white: str
    black: str
    result: str
    date: str  #: the PGN date, "YYYY.MM.DD" with "??" for unknown parts
    event: str  #: the event key


@dataclass(frozen=True)
class Performance:
    """A player's (or a game's) figure in one event by one method."""

    name: str  #: the player, or "White – Black" for a game
    path: str  #: their page
    value: float


@dataclass(frozen=True)
class EventRef:
    key: str
    path: str
    games: int
    first_date: str
    last_date: str
    #: method → the best performances, best first: "quality" (mean q of the player's games),
    #: "ipr" (the player's IPR in the event), "performance" (Elo performance), "game" (games
    #: by mean q of both sides)
    best: tuple[tuple[str, tuple[Performance, ...]], ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """What one build published, compactly."""

    as_of: str
    settings_digest: str  #: of the sections that change numbers (not [site] or [build])
    listings: tuple[Listing, ...]
    games: tuple[GameRef, ...]  #: by game id
    events: tuple[EventRef, ...]  #: by key
    players: tuple[tuple[str, str], ...]  #: (player, page path) of every player of the site
    schema: int = SCHEMA

    @property
    def digest(self) -> str:
        return _digest(to_json(self))


@dataclass(frozen=True)
class Move:
    """A player's place in a list before and after (None: not in the list)."""

    player: str
    path: str
    old_rank: int | None
    new_rank: int | None
    old_value: float | None
    new_value: float | None

    @property
    def places(self) -> int:
        """Places gained (negative: lost); 0 unless in the list before and after."""
        if self.old_rank is None or self.new_rank is None:
            return 0
        return self.old_rank - self.new_rank

    @property
    def change(self) -> float:
        """New value minus old (0 unless both are known)."""
        if self.old_value is None or self.new_value is None:
            return 0.0
        return self.new_value - self.old_value


@dataclass(frozen=True)
class ListChange:
    key: str
    title: str
    page: str
    value: str
    digits: int
    edition: str
    before: int  #: players listed before
    after: int  #: players listed after
    entered: tuple[Move, ...]  #: by new rank
    left: tuple[Move, ...]  #: by old rank
    by_rank: tuple[Move, ...]  #: the biggest moves in rank, biggest first
    by_value: tuple[Move, ...]  #: the biggest changes of value, biggest first
    #: players whose value became known (or n/a) without leaving the list, by new rank
    valued: tuple[Move, ...] = ()


@dataclass(frozen=True)
class Update:
    """What changed between two builds."""

    id: str  #: "urn:uuid:…", from the digest: the feed entry's id, never changing
    digest: str
    date: str  #: the latest date of the new games ("YYYY.MM.DD", "??" unknown), else as-of
    as_of: str
    previous_as_of: str
    new_games: tuple[GameRef, ...]
    removed_games: tuple[GameRef, ...]
    new_events: tuple[EventRef, ...]
    removed_events: tuple[EventRef, ...]
    lists: tuple[ListChange, ...]  #: the lists that changed, in :data:`LISTS` order
    settings_digest: str
    previous_settings_digest: str

    @property
    def settings_changed(self) -> bool:
        return self.settings_digest != self.previous_settings_digest

    @property
    def path(self) -> str:
        """Its page."""
        return f"updates/{self.date.replace('?', '0').replace('.', '-')}-{self.digest[:10]}.html"

    @property
    def timestamp(self) -> str:
        """:attr:`date` as an RFC 3339 date-time (see :func:`rfc3339`)."""
        return rfc3339(self.date)


def rfc3339(date: str) -> str:
    """A PGN date ("YYYY.MM.DD", "??" for unknown parts) as an RFC 3339 date-time at
    midnight UTC; an unknown month or day is the first, an unknown year 1970."""
    parts = [*date.split("."), "", ""][:3]
    y, m, d = (
        p if p.isdigit() else default
        for p, default in zip(parts, ("1970", "01", "01"), strict=True)
    )
    return f"{y}-{m}-{d}T00:00:00Z"


# --- snapshots ----------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _listed(frame: pd.DataFrame | None, column: str) -> list[tuple[str, float | None]]:
    if frame is None or frame.empty:
        return []
    shown = frame[frame["status"] == ""]
    return [(str(p), _num(v)) for p, v in zip(shown["player"], shown[column], strict=True)]


def list_rows(results: dict[str, Any]) -> dict[str, list[tuple[str, float | None]]]:
    """Each list of :data:`LISTS` as its page shows it: (player, value), rank 1 first."""
    quality = results.get("quality")
    res = results.get("results")
    return listed_rows(
        getattr(quality, "current", None),
        getattr(res, "lists", None) or {},
        getattr(results.get("intrinsic"), "players", None),
        getattr(results.get("bayesian"), "players", None),
    )


def listed_rows(
    quality: pd.DataFrame | None,
    lists: dict[str, pd.DataFrame],
    ipr: pd.DataFrame | None,
    skill: pd.DataFrame | None,
) -> dict[str, list[tuple[str, float | None]]]:
    """The lists of :data:`LISTS` from the families' frames (the quality index's current
    list, the results lists by scope, the IPR and skill lists): (player, value) of the
    players each page lists, rank 1 first."""
    from site_builder.metrics import results as rm

    out: dict[str, list[tuple[str, float | None]]] = {}
    out["quality"] = _listed(quality, "index")
    for key, name in (("elo", "current"), ("rapid", "rapid"), ("blitz", "blitz")):
        out[key] = _listed(lists.get(name), "rating")
    fighters = lists.get("fighter")
    out["fighter"] = (
        [] if fighters is None else _listed(rm.fighter_order(fighters).assign(status=""), "sdf")
    )
    out["ipr"] = _listed(ipr, "ipr")
    out["skill"] = _listed(skill, "c")
    return out


def _best(values: dict[str, float | None], path: Any, n: int = BEST) -> tuple[Performance, ...]:
    known = [(p, v) for p, v in values.items() if v is not None and not math.isnan(v)]
    known.sort(key=lambda t: (-t[1], t[0]))
    return tuple(Performance(p, path(p), v) for p, v in known[:n])


def event_refs(site: SiteData) -> tuple[EventRef, ...]:
    """Every event with its page and best performances, as its page computes them."""
    from site_builder.metrics import events
    from site_builder.render import summary

    min_games = site.settings.results.performance_min_games
    out = []
    for key, games in sorted(summary.events_of(site).items()):
        dates = sorted((g.date.sort_key, str(g.date)) for g in games)
        best: list[tuple[str, tuple[Performance, ...]]] = []
        for method, columns in (
            ("quality", summary.quality_event(site, key)),
            ("ipr", summary.intrinsic_event(site, key)),
        ):
            for c in columns:
                best.append((method, _best(c.values, site.player_path)))
        perf = {
            s.player: s.performance_figure(min_games).value
            for s in events.standings(games, site.elos)
        }
        best.append(("performance", _best(perf, site.player_path)))
        by_id = site.games_by_id
        top = summary.event_games_by_quality(site, key)[:BEST]
        best.append(
            (
                "game",
                tuple(
                    Performance(f"{by_id[gid].white} – {by_id[gid].black}", site.game_path(gid), q)
                    for gid, q, _qw, _qb in top
                ),
            )
        )
        out.append(
            EventRef(
                key,
                site.event_path(key),
                len(games),
                dates[0][1],
                dates[-1][1],
                tuple((m, p) for m, p in best if p),
            )
        )
    return tuple(out)


def method_settings_digest(site: SiteData) -> str:
    from site_builder.config import Settings

    sections = [
        f.name
        for f in dataclasses.fields(Settings)
        if f.name not in PRESENTATION_SECTIONS and hasattr(site.settings, f.name)
    ]
    return site.settings.digest(*sections)


def snapshot(site: SiteData) -> Snapshot:
    """The snapshot of a site whose families are computed."""
    rows = list_rows(site.state.results)
    listings = tuple(Listing(s.key, tuple(rows.get(s.key, []))) for s in LISTS)
    games = tuple(
        GameRef(
            g.game_id,
            site.game_path(g.game_id),
            g.white,
            g.black,
            g.result,
            str(g.date),
            _event_key(g),
        )
        for g in sorted(site.games, key=lambda g: g.game_id)
    )
    return Snapshot(
        as_of=str(site.as_of),
        settings_digest=method_settings_digest(site),
        listings=listings,
        games=games,
        events=event_refs(site),
        players=tuple((p, site.player_path(p)) for p in sorted(site.player_slugs)),
    )


def _event_key(game: Any) -> str:
    from site_builder.sitedata import event_key

    return event_key(game)


# --- the diff (pure) ----------------------------------------------------------------------


def _digest(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()
    return hashlib.sha256(blob).hexdigest()


def list_change(
    spec: ListSpec,
    old: Sequence[tuple[str, float | None]],
    new: Sequence[tuple[str, float | None]],
    paths: dict[str, str],
    edition: str = "",
    movers: int = MOVERS,
) -> ListChange | None:
    """Who entered, who left and the biggest moves between two editions of a list; None when
    nothing changed (same players, ranks and values)."""
    before = {p: (i, v) for i, (p, v) in enumerate(old, start=1)}
    after = {p: (i, v) for i, (p, v) in enumerate(new, start=1)}

    def move(p: str) -> Move:
        o, n = before.get(p), after.get(p)
        return Move(
            p,
            paths.get(p, ""),
            o[0] if o else None,
            n[0] if n else None,
            o[1] if o else None,
            n[1] if n else None,
        )

    entered = tuple(move(p) for p, _ in new if p not in before)
    left = tuple(move(p) for p, _ in old if p not in after)
    stayed = [move(p) for p, _ in new if p in before]
    by_rank = sorted(
        (m for m in stayed if m.places), key=lambda m: (-abs(m.places), m.new_rank or 0)
    )
    by_value = sorted(
        (m for m in stayed if m.change), key=lambda m: (-abs(m.change), m.new_rank or 0)
    )
    valued = tuple(m for m in stayed if (m.old_value is None) != (m.new_value is None))
    if not entered and not left and not by_rank and not by_value and not valued:
        return None
    return ListChange(
        spec.key,
        spec.title,
        spec.page,
        spec.value,
        spec.digits,
        edition,
        len(old),
        len(new),
        entered,
        left,
        tuple(by_rank[:movers]),
        tuple(by_value[:movers]),
        valued,
    )


def _date_key(date: str) -> tuple[int, int, int]:
    return tuple(int(p) if "?" not in p else 0 for p in date.split("."))  # type: ignore[return-value]


def diff(old: Snapshot, new: Snapshot, previous_id: str = "") -> Update | None:
    """The update from ``old`` to ``new`` (None when they are equal). ``previous_id`` is the
    id of the last update recorded, part of this one's digest."""
    old_digest, new_digest = old.digest, new.digest
    if old_digest == new_digest:
        return None
    digest = _digest([previous_id, old_digest, new_digest])
    old_games = {g.game_id: g for g in old.games}
    new_games = {g.game_id: g for g in new.games}
    added = tuple(g for gid, g in sorted(new_games.items()) if gid not in old_games)
    removed = tuple(g for gid, g in sorted(old_games.items()) if gid not in new_games)
    old_events = {e.key: e for e in old.events}
    new_events = {e.key: e for e in new.events}
    paths = dict(new.players)  # a player no longer in the site has no page to link
    old_lists = {(lst.key, lst.edition): lst.rows for lst in old.listings}
    changes = []
    for lst in new.listings:
        spec = SPECS.get(lst.key)
        if spec is None:
            continue
        change = list_change(
            spec, old_lists.get((lst.key, lst.edition), ()), lst.rows, paths, lst.edition
        )
        if change is not None:
            changes.append(change)
    date = max((g.date for g in added), key=_date_key, default=new.as_of)
    return Update(
        id=uuid.uuid5(NAMESPACE, digest).urn,
        digest=digest,
        date=date,
        as_of=new.as_of,
        previous_as_of=old.as_of,
        new_games=tuple(sorted(added, key=lambda g: (_date_key(g.date), g.event, g.game_id))),
        removed_games=removed,
        new_events=tuple(e for k, e in sorted(new_events.items()) if k not in old_events),
        removed_events=tuple(e for k, e in sorted(old_events.items()) if k not in new_events),
        lists=tuple(changes),
        settings_digest=new.settings_digest,
        previous_settings_digest=old.settings_digest,
    )


def summary_lines(update: Update, movers: int = 3) -> list[str]:
    """The update in a few lines for the terminal: the facts of its page."""

    def names(moves: Sequence[Move]) -> str:
        shown = "; ".join(m.player for m in moves[:movers])
        more = f" and {len(moves) - movers} more" if len(moves) > movers else ""
        return f"{len(moves)} ({shown}{more})"

    def fmt(value: float | None, digits: int) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    def count(n: int, what: str) -> str:
        return f"{n} {what}{'' if n == 1 else 's'}"

    out = [
        f"What's new ({update.date}): {count(len(update.new_games), 'new game')}, "
        f"{len(update.removed_games)} removed; {count(len(update.new_events), 'new event')}, "
        f"{len(update.removed_events)} removed; see {update.path}"
    ]
    out += [f"  new event: {e.key} ({count(e.games, 'game')})" for e in update.new_events]
    out += [f"  removed event: {e.key}" for e in update.removed_events]
    if update.settings_changed:
        out.append(
            f"  method settings changed ({update.previous_settings_digest[:8]} -> "
            f"{update.settings_digest[:8]}): numbers moved by a method change too"
        )
    for c in update.lists:
        parts = []
        if c.entered:
            parts.append(f"entered {names(c.entered)}")
        if c.left:
            parts.append(f"left {names(c.left)}")
        if c.by_rank:
            parts.append(
                "moved "
                + "; ".join(f"{m.player} {m.old_rank}->{m.new_rank}" for m in c.by_rank[:movers])
            )
        for label, found in (("values", c.by_value), ("value known/n/a", c.valued)):
            if found:
                parts.append(
                    f"{label} "
                    + "; ".join(
                        f"{m.player} {fmt(m.old_value, c.digits)}->{fmt(m.new_value, c.digits)}"
                        for m in found[:movers]
                    )
                )
        out.append(f"  {c.title}: " + " | ".join(parts))
    return out


# --- JSON ---------------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """A snapshot or update as plain JSON data (tuples as lists; properties included for an
    update: its page path and whether the settings changed)."""
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    names = _field_names(type(value))
    if names is None:
        return value
    data = {name: to_json(getattr(value, name)) for name in names}
    if isinstance(value, Update):
        return {**data, "path": value.path, "settings_changed": value.settings_changed}
    return data


#: The fields of each dataclass :func:`to_json` met (None: not a dataclass), looked up once a
#: class: a snapshot holds a record of every game.
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    if cls not in _FIELD_NAMES:
        is_record = dataclasses.is_dataclass(cls)
        _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)) if is_record else None
    return _FIELD_NAMES[cls]


def history_json(history: Sequence[Update]) -> bytes:
    """The published history (``updates.json``), newest first."""
    data = {"schema": SCHEMA, "updates": [to_json(u) for u in history]}
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True, allow_nan=False)
    return (text + "\n").encode("utf-8")


def history_from_json(data: bytes) -> tuple[Update, ...]:
    """The updates of a published ``updates.json`` (:func:`history_json`); () when it is not
    one of this schema."""

    def games(xs: list[dict[str, Any]]) -> tuple[GameRef, ...]:
        return tuple(GameRef(**x) for x in xs)

    def events(xs: list[dict[str, Any]]) -> tuple[EventRef, ...]:
        return tuple(
            EventRef(
                **{
                    **x,
                    "best": tuple(
                        (str(m), tuple(Performance(**p) for p in perfs)) for m, perfs in x["best"]
                    ),
                }
            )
            for x in xs
        )

    def moves(xs: list[dict[str, Any]]) -> tuple[Move, ...]:
        return tuple(Move(**x) for x in xs)

    try:
        found = json.loads(data)
        if found.get("schema") != SCHEMA:
            return ()
        out = []
        for u in found["updates"]:
            fields = {f.name: u[f.name] for f in dataclasses.fields(Update)}
            lists = tuple(
                ListChange(
                    **{
                        **c,
                        **{
                            k: moves(c.get(k, []))
                            for k in ("entered", "left", "by_rank", "by_value", "valued")
                        },
                    }
                )
                for c in u["lists"]
            )
            out.append(
                Update(
                    **{
                        **fields,
                        "new_games": games(u["new_games"]),
                        "removed_games": games(u["removed_games"]),
                        "new_events": events(u["new_events"]),
                        "removed_events": events(u["removed_events"]),
                        "lists": lists,
                    }
                )
            )
        return tuple(out)
    except (ValueError, TypeError, KeyError, AttributeError):
        return ()


def is_history(path: str) -> bool:
    """A file of the output made from the folder's history of updates (the What's new pages,
    ``updates.json``, ``feed.xml``): unlike every other page, it depends on the builds made
    into the folder before, not only on the content."""
    return path in {"updates.html", HISTORY, "feed.xml"} or path.startswith("updates/")


# --- the IO shell: the build cache --------------------------------------------------------


@dataclass
class Progress:
    """This build's update (None: nothing changed, or a first build) and the history with
    it, newest first. The build's snapshot is not held (it is as large as the lists): it
    waits in the build cache for :func:`keep`."""

    as_of: str  #: the snapshot's as-of date
    update: Update | None
    history: tuple[Update, ...]
    first: bool  #: no earlier snapshot of this output folder


def _keys(output_dir: Path) -> tuple[str, str, str]:
    """The build cache's keys of the folder's snapshot, its history, and the snapshot of a
    build whose pages are not yet in place."""
    where = str(output_dir.resolve())
    return (
        entry(Kind.UPDATE_SNAPSHOT, str(SCHEMA), where),
        entry(Kind.UPDATE_HISTORY, str(SCHEMA), where),
        entry(Kind.UPDATE_SNAPSHOT, str(SCHEMA), where, "pending"),
    )


def advance(site: SiteData, build_cache: BuildCache, output_dir: Path) -> Progress:
    """This build's update against the last build's snapshot of the same output folder.
    This build's snapshot goes into the build cache as pending: the folder's own snapshot
    and history change only in :func:`keep`."""
    snap_key, hist_key, pending_key = _keys(output_dir)
    old = build_cache.get(snap_key)
    kept = build_cache.get(hist_key)
    if kept is None:  # a new build cache: the history the folder published, if any
        published = output_dir / HISTORY
        kept = history_from_json(published.read_bytes()) if published.is_file() else ()
    history = tuple(kept)
    new = snapshot(site)
    build_cache.set(pending_key, new)
    if not isinstance(old, Snapshot):
        return Progress(new.as_of, None, history, first=True)
    update = diff(old, new, history[0].id if history else "")
    if update is not None:
        history = (update, *history)
    return Progress(new.as_of, update, history, first=False)


def keep(progress: Progress, build_cache: BuildCache, output_dir: Path) -> None:
    """Record the pending snapshot and the history, once the build's pages are in place."""
    snap_key, hist_key, pending_key = _keys(output_dir)
    new = build_cache.get(pending_key)
    if isinstance(new, Snapshot):
        build_cache.set(snap_key, new)
    build_cache.set(hist_key, progress.history)
    build_cache.delete(pending_key)


def report(progress: Progress) -> list[str]:
    """What the build command prints about the update (:func:`summary_lines`)."""
    if progress.update is not None:
        return summary_lines(progress.update)
    if progress.first:
        return ["What's new: the first build of this output folder, no earlier lists to compare."]
    return ["What's new: the games and lists are those of the last build (no update)."]
