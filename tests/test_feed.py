"""The Atom feed of the updates (issue 20 item 3), rendered from hand-made snapshots: valid
against the Atom RELAX NG grammar of RFC 4287 (Appendix B, tests/data/atom), with the
grammar's two Schematron rules checked by XPath, stable entry ids, absolute links with
``[site] base_url``, untrusted PGN strings escaped. The feed of a built site is checked in
tests/test_updates.py with :func:`check_feed`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lxml import etree

from site_builder.config import settings_from_dict
from site_builder.errors import ConfigError
from site_builder.render.update_pages import pages
from site_builder.render.writer import environment, page_bytes
from site_builder.updates import EventRef, GameRef, Listing, Progress, Snapshot, diff
from tests.conftest import DATA

ATOM = "{http://www.w3.org/2005/Atom}"
NS = {"a": "http://www.w3.org/2005/Atom"}
SCHEMA = etree.RelaxNG(etree.parse(str(DATA / "atom" / "atom.rng")))


def check_feed(data: bytes) -> Any:
    """The parsed feed, after checking it against RFC 4287's grammar and its rules."""
    doc = etree.fromstring(data)
    assert SCHEMA.validate(doc), SCHEMA.error_log
    # The grammar's Schematron rules: an author (here on the feed), and per entry a link
    # rel="alternate" (or without rel) or a content.
    assert doc.xpath("a:author/a:name", namespaces=NS)
    for e in doc.xpath("a:entry", namespaces=NS):
        assert e.xpath("a:link[@rel='alternate'] | a:link[not(@rel)] | a:content", namespaces=NS)
    ids = doc.xpath("a:entry/a:id/text()", namespaces=NS)
    assert len(ids) == len(set(ids))
    return doc


def _snapshot(games: list[GameRef], quality: list[tuple[str, float | None]]) -> Snapshot:
    events = sorted({g.event for g in games})
    return Snapshot(
        as_of="2025.06.30",
        settings_digest="s",
        listings=(Listing("quality", tuple(quality)),),
        games=tuple(games),
        events=tuple(EventRef(e, f"events/{i}.html", 1, "", "") for i, e in enumerate(events)),
        players=(),
    )


HOSTILE = '<script>alert("x")</script> & Co'
G1 = GameRef("g1", "games/g1.html", "A", "B", "1-0", "2025.01.10", "Old 2025")
G2 = GameRef("g2", "games/g2.html", HOSTILE, "B", "0-1", "2025.05.02", HOSTILE + " 2025")
G3 = GameRef("g3", "games/g3.html", "C", "D", "1/2-1/2", "2025.06.??", "Third 2025")
S1 = _snapshot([G1], [("A", 50.0)])
S2 = _snapshot([G1, G2], [("A", 51.0), (HOSTILE, 49.0)])
S3 = _snapshot([G1, G2, G3], [(HOSTILE, 52.0), ("A", 51.0)])


def _history() -> tuple[Any, ...]:
    u1 = diff(S1, S2)
    assert u1 is not None
    u2 = diff(S2, S3, u1.id)
    assert u2 is not None
    return u2, u1


def _render(history: tuple[Any, ...], base_url: str = "") -> dict[str, bytes]:
    """Every page of the updates, rendered as the build renders them."""
    settings = settings_from_dict({"site": {"base_url": base_url, "title": "T & <t>"}})
    progress = Progress(S3.as_of, history[0] if history else None, history, first=not history)
    site = SimpleNamespace(
        settings=settings, as_of="2025.06.30", state=SimpleNamespace(results={"updates": progress})
    )
    common = {"site": settings.site, "settings": settings, "nav": [], "version": "0"}
    env = environment()
    return {p.path: page_bytes(p, env, common) for p in pages(site)}  # type: ignore[arg-type]


def _feed(history: tuple[Any, ...], base_url: str = "") -> bytes:
    return _render(history, base_url)["feed.xml"]


def test_update_pages_show_pgn_strings_as_text() -> None:
    history = _history()
    rendered = _render(history)
    assert sorted(rendered) == sorted(
        ["feed.xml", "updates.html", "updates.json", *(u.path for u in history)]
    )
    for path, data in rendered.items():  # updates.json holds every text as read, as data
        assert (b"<script>alert" in data) == (path == "updates.json"), path
    page = rendered[history[1].path].decode()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Co" in page


def test_feed_is_valid_atom_with_the_updates_ids() -> None:
    history = _history()
    doc = check_feed(_feed(history))
    ids = doc.xpath("a:entry/a:id/text()", namespaces=NS)
    assert ids == [u.id for u in history]  # newest first
    assert all(i.startswith("urn:uuid:") for i in ids)
    links = doc.xpath("a:entry/a:link/@href", namespaces=NS)
    assert links == [u.path for u in history]  # relative to the feed, at the site's root
    updated = doc.xpath("a:entry/a:updated/text()", namespaces=NS)
    assert updated == ["2025-06-01T00:00:00Z", "2025-05-02T00:00:00Z"]
    assert doc.findtext(f"{ATOM}updated") == "2025-06-01T00:00:00Z"
    # Escaped, not markup: the hostile name is text of the summary.
    summaries = doc.xpath("a:entry/a:summary/text()", namespaces=NS)
    assert any(HOSTILE in s for s in summaries)
    assert not doc.xpath("//script")
    assert doc.findtext(f"{ATOM}title") == "T & <t>: what's new"


def test_entry_ids_stay_when_updates_are_added() -> None:
    u2, u1 = _history()
    before = check_feed(_feed((u1,))).xpath("a:entry/a:id/text()", namespaces=NS)
    after = check_feed(_feed((u2, u1))).xpath("a:entry/a:id/text()", namespaces=NS)
    assert before == [u1.id] and after == [u2.id, u1.id]
    # The same two snapshots after the same history: the same id, whenever made.
    assert diff(S1, S2) == u1


def test_feed_without_updates_is_valid() -> None:
    doc = check_feed(_feed(()))
    assert doc.xpath("a:entry", namespaces=NS) == []
    assert doc.findtext(f"{ATOM}updated") == "2025-06-30T00:00:00Z"  # the as-of date


def test_base_url_gives_absolute_links_and_a_self_link() -> None:
    history = _history()
    doc = check_feed(_feed(history, "https://example.org/chess/"))
    links = doc.xpath("a:entry/a:link/@href", namespaces=NS)
    assert links == [f"https://example.org/chess/{u.path}" for u in history]
    assert doc.xpath("a:link[@rel='self']/@href", namespaces=NS) == [
        "https://example.org/chess/feed.xml"
    ]
    # The feed's id comes from the address, so it differs from the relative feed's.
    assert doc.findtext(f"{ATOM}id") != check_feed(_feed(history)).findtext(f"{ATOM}id")


@pytest.mark.parametrize(
    "value", ["example.org", "ftp://example.org/", "https://", "https://x.org/?a=1", "/chess/"]
)
def test_bad_base_url_fails_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigError, match=r"\[site\] base_url"):
        settings_from_dict({"site": {"base_url": value}})


def test_the_schema_rejects_what_atom_forbids() -> None:
    """The check can fail: a feed without its id, or with a date that is not RFC 3339."""
    good = _feed(_history())
    doc = etree.fromstring(good)
    doc.remove(doc.find(f"{ATOM}id"))
    assert not SCHEMA.validate(doc)
    dated = good.replace(b"2025-05-02T00:00:00Z", b"2025.05.02")
    assert not SCHEMA.validate(etree.fromstring(dated))


def test_shipped_grammar_is_rfc_4287s() -> None:
    rnc = (Path(DATA) / "atom" / "atom.rnc").read_text(encoding="utf-8")
    assert "start = atomFeed | atomEntry" in rnc and rnc.rstrip().endswith("# EOF")
