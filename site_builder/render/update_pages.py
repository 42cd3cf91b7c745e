"""The "What's new" pages (issue 20): the list of updates, one page per update, the history as
JSON (``updates.json``) and the Atom feed (``feed.xml``), all made from the updates the build
recorded (:mod:`site_builder.updates`), which the build puts in
``site.state.results["updates"]`` after the metrics.

The feed is a Jinja template (``templates/feed.xml``), autoescaped like every page: an Atom
document of a few fixed elements, whose bytes depend only on the updates (a feed library,
feedgen, stamps ``updated`` with the clock unless told otherwise and needs lxml at run time).
"""

from __future__ import annotations

import uuid
from typing import Any

from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, SiteData
from site_builder.updates import (
    HISTORY,
    NAMESPACE,
    Progress,
    Update,
    history_json,
    rfc3339,
    summary_lines,
)

#: The key of the build's :class:`~site_builder.updates.Progress` in ``site.state.results``.
RESULT = "updates"
#: Entries in the feed, newest first.
FEED_ENTRIES = 50


def _nothing(site: SiteData) -> None:
    """The updates are made by the build, not as a family (they compare with the output
    folder's last build)."""
    return None


def _absolute(site: SiteData, path: str) -> str:
    base = site.settings.site.base_url
    return (base.rstrip("/") + "/" + path) if base else path


def _feed_id(site: SiteData) -> str:
    """The feed's id: from the site's address when set, else from its title."""
    return uuid.uuid5(
        NAMESPACE, "feed:" + (site.settings.site.base_url or site.settings.site.title)
    ).urn


def _entry_title(u: Update) -> str:
    events = ", ".join(e.key for e in u.new_events[:3])
    more = f" and {len(u.new_events) - 3} more" if len(u.new_events) > 3 else ""
    what = f"{len(u.new_games)} new games" + (f" ({events}{more})" if events else "")
    if u.removed_games:
        what += f", {len(u.removed_games)} removed"
    if u.settings_changed:
        what += ", method settings changed"
    return f"Update of {u.date}: {what}"


def pages(site: SiteData) -> list[Page]:
    progress: Progress | None = site.state.results.get(RESULT)
    history = progress.history if progress is not None else ()
    as_of = progress.as_of if progress is not None else str(site.as_of)
    out = [
        Page(
            "updates.html",
            "updates.html",
            {
                "title": "What's new",
                "updates": [(u, _entry_title(u)) for u in history],
                "as_of": as_of,
            },
        ),
        Page(HISTORY, "", {"bytes": history_json(history)}),
    ]
    for i, u in enumerate(history):
        newer = history[i - 1] if i > 0 else None
        older = history[i + 1] if i + 1 < len(history) else None
        out.append(
            Page(
                u.path,
                "update.html",
                {
                    "title": f"Update of {u.date}",
                    "u": u,
                    "newer": newer,
                    "older": older,
                    "breadcrumbs": [("What's new", "updates.html")],
                },
            )
        )
    entries: list[dict[str, Any]] = [
        {
            "id": u.id,
            "title": _entry_title(u),
            "href": _absolute(site, u.path),
            "updated": u.timestamp,
            "summary": "\n".join(_summary(u)),
        }
        for u in history[:FEED_ENTRIES]
    ]
    updated = max((e["updated"] for e in entries), default=rfc3339(as_of))
    out.append(
        Page(
            "feed.xml",
            "feed.xml",
            {
                "title": "What's new",
                "feed_id": _feed_id(site),
                "feed_updated": updated,
                "home": _absolute(site, "updates.html"),
                "self_href": _absolute(site, "feed.xml") if site.settings.site.base_url else "",
                "entries": entries,
            },
        )
    )
    return out


def _summary(u: Update) -> list[str]:
    return [line.strip() for line in summary_lines(u)[1:]] or ["No list changed."]


FAMILY = Family(
    name=RESULT,
    compute=_nothing,
    pages=pages,
    nav=(NavItem("What's new", "updates.html"),),
)
