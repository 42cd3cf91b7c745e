"""Big lists and the search index cut into pieces a page loads only when needed (pure).

The search box's index is split by the two-letter pieces ("grams") of the names: a query
loads the shard of its rarest gram (every name that matches the query contains it), so it
sees every match and ranks them as one index would. A list longer than the site's
``rows_per_page`` is split into static pages with a pager; its filter box loads, on demand,
one compact script of the list's names and the page each is on.

Every file is a script that stores its data in ``window.SITE_SHARDS[key]``: a page opened
from file:// may load scripts but not fetch JSON.
"""

from __future__ import annotations

import dataclasses
import heapq
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from site_builder.config import Settings
from site_builder.render.charts import to_script_json
from site_builder.render.writer import Deferred, Page

#: The search box's manifest (the path every page names) and where its shards live.
SEARCH_INDEX = "assets/search-index.js"
SEARCH_DIR = "assets/search"
#: Where the name shards of paged lists live.
LIST_DIR = "assets/lists"
#: Matches the search box shows (site.js shows as many).
SHOWN = 12
#: JavaScript's ``\s``: the query is cut into terms at these, so no gram spans one.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACES = re.compile(f"[{_JS_SPACE}]+")
_COMBINING = re.compile("[\u0300-\u036f]")


def fold(text: str) -> str:
    """site.js's ``fold``: accents dropped (NFD, combining marks removed), lower case."""
    return _COMBINING.sub("", unicodedata.normalize("NFD", text)).lower()


def grams(key: str) -> set[str]:
    """The grams of a folded name: every two adjacent characters of each word, and a
    one-character word itself. A query term of two or more characters is in a name only
    if each of its grams is."""
    out: set[str] = set()
    for word in _SPACES.split(key):
        if len(word) == 1:
            out.add(word)
        out.update(word[i : i + 2] for i in range(len(word) - 1))
    return out


def shard_name(gram: str) -> str:
    """A gram's file name stem: its UTF-8 bytes in hex (safe on every file system)."""
    return gram.encode("utf-8").hex()


def _ranker(first: str) -> Any:
    """site.js's rank of a match of a query whose first term is ``first``: 0 at the name's
    start, 1 at a word's start, 2 inside a word; events after players (+3)."""
    word_start = re.compile(f"[{_JS_SPACE},.\\-]" + re.escape(first))

    def rank(key: str, kind: str) -> int:
        own = 0 if key.startswith(first) else 1 if word_start.search(key) else 2
        return own + (3 if kind == "e" else 0)

    return rank


def _utf16(text: str) -> bytes:
    # JavaScript compares strings by UTF-16 code units.
    return text.encode("utf-16-be")


def _script(key: str, data: Any) -> bytes:
    body = f'(window.SITE_SHARDS=window.SITE_SHARDS||{{}})["{key}"]={to_script_json(data)};\n'
    return body.encode("utf-8")


Entry = Sequence[str]  # [name, path relative to the site root, short description]


def _top(
    keyed: Sequence[tuple[str, str, Entry]], order: Sequence[bytes], hits: Iterable[int], term: str
) -> Any:
    """The matches of the one-term query ``term`` as site.js shows them: the first
    :data:`SHOWN` in rank order (in the index's order), and their total."""
    found = list(hits)
    rank = _ranker(term)
    ranked = heapq.nsmallest(
        SHOWN, found, key=lambda i: (rank(keyed[i][0], keyed[i][1]), order[i], i)
    )
    top: dict[str, Any] = {"n": len(found), "p": [], "e": []}
    for i in sorted(ranked):
        top[keyed[i][1]].append(list(keyed[i][2]))
    return top


def search_shards(players: Sequence[Entry], events: Sequence[Entry]) -> dict[str, bytes]:
    """The search box's files, {path: bytes}: :data:`SEARCH_INDEX`, every gram and how many
    names hold it; in :data:`SEARCH_DIR`, per gram, ``g<hex>.js``, the players and events whose name
    holds it; and per character and per gram of two, ``c<hex>.js``, the matches of that
    query alone (the first :data:`SHOWN` in rank order and their total), so that the first
    keystrokes load a file of a few lines. Entries keep the given order (players then
    events, each sorted as the index lists them)."""
    keyed = [(fold(e[0]), kind, e) for kind, part in (("p", players), ("e", events)) for e in part]
    order = [_utf16(key) for key, _kind, _entry in keyed]
    by_gram: dict[str, list[int]] = defaultdict(list)
    for i, (key, _kind, _entry) in enumerate(keyed):
        for g in grams(key):
            by_gram[g].append(i)
    out: dict[str, bytes] = {}
    counts = {g: len(v) for g, v in by_gram.items()}
    out[SEARCH_INDEX] = _script("search/index", {"grams": counts})
    for g, hits in sorted(by_gram.items()):
        shard: dict[str, list[Any]] = {"p": [], "e": []}
        for i in hits:
            shard[keyed[i][1]].append(list(keyed[i][2]))
        out[f"{SEARCH_DIR}/g{shard_name(g)}.js"] = _script(f"search/g{shard_name(g)}", shard)
    short = {g: by_gram[g] for g in by_gram if len(g) == 2}
    for char in sorted({c for g in by_gram for c in g}):
        short[char] = [i for i, (key, _kind, _entry) in enumerate(keyed) if char in key]
    for term, hits in sorted(short.items()):
        name = f"c{shard_name(term)}"
        out[f"{SEARCH_DIR}/{name}.js"] = _script(f"search/{name}", _top(keyed, order, hits, term))
    return out


# --- paged lists ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PageLink:
    number: int
    path: str


@dataclass(frozen=True)
class ListPart:
    """One list's share of a page: rows ``first``..``last`` (from 1; none when ``first`` is
    0) of ``total``, the pages that hold its rows, and its name shard: the script ``names``
    that sets ``window.SITE_SHARDS[key]``."""

    first: int
    last: int
    total: int
    pages: int
    names: str
    key: str


@dataclass(frozen=True)
class Paging:
    """Where a page of a paged list stands: page ``number`` of ``pages`` (paths relative to
    the site root) and each list's part of it (:class:`ListPart`, by list id: the context
    key of a list of rows, or the ``id`` of a table object). ``first``, ``last``, ``total``,
    ``names`` and ``key`` are the first list's."""

    number: int
    pages: tuple[PageLink, ...]
    lists: dict[str, ListPart]

    def part(self, list_id: str) -> ListPart | None:
        """The part of list ``list_id``, None when it is not paged here or has no rows."""
        found = self.lists.get(list_id)
        return found if found is not None and found.total else None

    @property
    def main(self) -> ListPart:
        return next(iter(self.lists.values()))

    @property
    def first(self) -> int:
        return self.main.first

    @property
    def last(self) -> int:
        return self.main.last

    @property
    def total(self) -> int:
        return self.main.total

    @property
    def names(self) -> str:
        return self.main.names

    @property
    def key(self) -> str:
        return self.main.key

    @property
    def previous(self) -> PageLink | None:
        return self.pages[self.number - 2] if self.number > 1 else None

    @property
    def next(self) -> PageLink | None:
        return self.pages[self.number] if self.number < len(self.pages) else None

    @property
    def shown(self) -> list[PageLink | None]:
        """The page links the pager shows: first, last and two around this one (None: a gap)."""
        near = {1, len(self.pages), *range(self.number - 2, self.number + 3)}
        out: list[PageLink | None] = []
        for link in self.pages:
            if link.number in near:
                if out and out[-1] is not None and out[-1].number != link.number - 1:
                    out.append(None)
                out.append(link)
        return out


def page_path(path: str, number: int) -> str:
    """``players.html`` → ``players-2.html`` for page 2 (page 1 keeps the path)."""
    if number == 1:
        return path
    stem, dot, ext = path.rpartition(".")
    return f"{stem}-{number}.{ext}" if dot else f"{path}-{number}"


def chunks(count: int, per_page: int) -> list[range]:
    """Row ranges of the pages of a list of ``count`` rows (one page, maybe empty, when it
    fits)."""
    if count <= per_page:
        return [range(count)]
    return [range(i, min(i + per_page, count)) for i in range(0, count, per_page)]


def names_shard(names_by_page: Sequence[Sequence[str]], paths: Sequence[str], key: str) -> bytes:
    """The filter's script: the names on each page, page by page, and the pages' paths."""
    return _script(key, {"pages": [list(n) for n in names_by_page], "paths": list(paths)})


def _lists(key: str, value: Any) -> dict[str, list[Any]]:
    """The lists of rows a context value holds, by list id: a list of rows (id: ``key``), a
    table with ``id`` and ``rows``, or a list of tuples ending in such tables."""
    if isinstance(value, Deferred):
        value = value.make()
    if value is None:
        return {}
    if hasattr(value, "rows") and hasattr(value, "id"):
        return {str(value.id): list(value.rows)}
    if value and all(isinstance(v, tuple) and hasattr(v[-1], "rows") for v in value):
        return {str(v[-1].id): list(v[-1].rows) for v in value}
    return {key: list(value)}


def _sliced(key: str, value: Any, spans: dict[str, range]) -> Any:
    """``value`` with each of its lists cut to ``spans[id]``."""
    if isinstance(value, Deferred):
        value = value.make()
    if value is None:
        return None
    if hasattr(value, "rows") and hasattr(value, "id"):
        span = spans[str(value.id)]
        return dataclasses.replace(value, rows=value.rows[span.start : span.stop])
    if value and all(isinstance(v, tuple) and hasattr(v[-1], "rows") for v in value):
        return [(*v[:-1], _sliced(key, v[-1], spans)) for v in value]
    span = spans[key]
    return value[span.start : span.stop]


def paged(
    page: Page, per_page: int, rows: str | Sequence[str] = "rows", name: str = "player"
) -> list[Page]:
    """``page`` as it is when each of its lists (the context values ``rows`` names; see
    :func:`_lists`) has at most ``per_page`` rows; otherwise one page per ``per_page`` rows of
    the longest (``x.html``, ``x-2.html``, ...), each with its slice of every list, the
    context's ``paging`` (a :class:`Paging`) and, from page 2, "page n of m" in its title,
    and per list a name shard (each row's ``row[name]``) in ``assets/lists/``."""
    keys = [rows] if isinstance(rows, str) else list(rows)
    lists: dict[str, list[Any]] = {}
    for k in keys:
        lists.update(_lists(k, page.context[k]))
    ranges = {i: chunks(len(listed), per_page) for i, listed in lists.items()}
    count = max((len(r) for r in ranges.values()), default=1)
    if count == 1:
        return [page]
    stem = (page.path.rpartition(".")[0] or page.path).replace("/", "-")
    links = tuple(PageLink(n, page_path(page.path, n)) for n in range(1, count + 1))
    paths = [link.path for link in links]
    shards: list[Page] = []
    parts: dict[str, tuple[str, str]] = {}
    for i, listed in lists.items():
        key = f"lists/{stem}" if len(lists) == 1 else f"lists/{stem}-{i}"
        parts[i] = (f"assets/{key}.js", key)
        names = [[str(r[name]) for r in listed[s.start : s.stop]] for s in ranges[i]]
        shards.append(Page(f"assets/{key}.js", "", {"bytes": names_shard(names, paths, key)}))
    out = []
    for link in links:
        spans = {
            i: r[link.number - 1] if link.number <= len(r) else range(len(lists[i]), len(lists[i]))
            for i, r in ranges.items()
        }
        paging = Paging(
            link.number,
            links,
            {
                i: ListPart(
                    span.start + 1 if span else 0,
                    span.stop if span else 0,
                    len(lists[i]),
                    len(ranges[i]),
                    *parts[i],
                )
                for i, span in spans.items()
            },
        )
        context = {**page.context, "paging": paging}
        for k in keys:
            context[k] = _sliced(k, page.context[k], spans)
        if link.number > 1 and "title" in context:
            context["title"] = f"{context['title']} (page {link.number} of {count})"
        out.append(Page(link.path, page.template, context))
    return out + shards


class _Site(Protocol):
    @property
    def settings(self) -> Settings: ...


def paged_for(site: _Site, page: Page, rows: str | Sequence[str] = "rows") -> list[Page]:
    """:func:`paged` with the site's ``[site] rows_per_page``."""
    return paged(page, site.settings.site.rows_per_page, rows)


def paged_all(
    site: _Site, pages: Iterable[Page], lists: Mapping[str, str | Sequence[str]]
) -> list[Page]:
    """``pages``, each whose path ``lists`` names split by :func:`paged_for` (``lists[path]``:
    the context keys of its lists); the others as they are."""
    out: list[Page] = []
    for p in pages:
        out += paged_for(site, p, lists[p.path]) if p.path in lists else [p]
    return out
