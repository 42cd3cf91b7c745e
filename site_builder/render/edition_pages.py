"""The pages of the lists' editions (issue 20): one page per list and edition, the index of
every edition (``editions.html``), the editions' links on each list page and, on a player's
page, their rank and value in each edition as a chart. The editions are computed in
:mod:`site_builder.families.editions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from site_builder.families import editions as calc
from site_builder.families.editions import Edition, EditionsResult
from site_builder.render import charts, paging
from site_builder.render.tables import Column, download_pages
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData
from site_builder.updates import LISTS, SPECS, ListSpec

#: The key of the editions in ``site.state.results``.
RESULT = "editions"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _result(site: SiteData) -> EditionsResult | None:
    return site.state.results.get(RESULT)


def edition_path(key: str, date: str) -> str:
    """An edition's page: ``editions/<list>-<YYYY-MM-DD>.html``."""
    return f"editions/{key}-{date}.html"


def label(date: str) -> str:
    """An edition's name: "Jan 2025" (its date is the first day of that month)."""
    y, m, _ = date.split("-")
    return f"{MONTHS[int(m) - 1]} {y}"


def links(site: SiteData, key: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The editions of list ``key`` for its page, newest first and grouped by year:
    [(year, [(label, path), ...]), ...]; empty when the site publishes none."""
    res = _result(site)
    if res is None or not res.editions:
        return []
    out: dict[str, list[tuple[str, str]]] = {}
    for e in reversed(res.editions):
        out.setdefault(e.date[:4], []).append((label(e.date), edition_path(key, e.date)))
    return list(out.items())


def _fmt(value: float | None, digits: int) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.{digits}f}"


def _columns(spec: ListSpec) -> tuple[Column, ...]:
    return (
        Column("rank", "Rank", "the player's place in this edition, 1 = top", numeric=True),
        Column("player", "Player", "the player's name as the site spells it"),
        Column(
            "value",
            spec.value,
            f"the player's {spec.value} on the list at the edition's date (null: n/a)",
            numeric=True,
        ),
    )


def _edition_pages(site: SiteData, spec: ListSpec, e: Edition, older: Edition | None) -> list[Page]:
    data = [
        {"rank": rank, "player": player, "value": value}
        for rank, (player, value) in enumerate(e.rows(spec.key), start=1)
    ]
    downloads, files = download_pages(f"data/editions/{spec.key}-{e.date}", data, _columns(spec))
    rows = [
        {
            "rank": rank,
            "player": player,
            "href": site.player_path(player) if player in site.player_slugs else "",
            "value": _fmt(value, spec.digits),
        }
        for rank, (player, value) in enumerate(e.rows(spec.key), start=1)
    ]
    page = Page(
        edition_path(spec.key, e.date),
        "edition.html",
        {
            "title": f"{spec.title}, {label(e.date)} edition",
            "spec": spec,
            "edition": e,
            "label": label(e.date),
            "rows": rows,
            "older": (label(older.date), edition_path(spec.key, older.date)) if older else None,
            "breadcrumbs": [("List editions", "editions.html"), (spec.title, spec.page)],
            "downloads": downloads,
        },
    )
    return [*paging.paged_for(site, page), *files]


def pages(site: SiteData) -> list[Page]:
    res = _result(site)
    editions = res.editions if res is not None else ()
    cfg = site.settings.editions
    out = [
        Page(
            "editions.html",
            "editions.html",
            {
                "title": "List editions",
                "every": cfg.every,
                "since": cfg.since,
                "lists": LISTS,
                "editions": [
                    (
                        e,
                        label(e.date),
                        [(edition_path(s.key, e.date), len(e.rows(s.key))) for s in LISTS],
                    )
                    for e in reversed(editions)
                ],
            },
        )
    ]
    for spec in LISTS:
        for i, e in enumerate(editions):
            older = editions[i - 1] if i > 0 else None
            out.extend(_edition_pages(site, spec, e, older))
    return out


@dataclass(frozen=True)
class PlayerView:
    """What the player block reads: every edition's date (the table has a row per edition,
    blank where the player is not listed) and the player's ranks and values."""

    player: str
    dates: tuple[str, ...]
    #: list key → [(edition date, rank, value)]
    found: dict[str, Any]


def player_view(site: SiteData, player: str) -> PlayerView | None:
    res = _result(site)
    found = None if res is None else res.players.get(player)
    if res is None or not found:
        return None
    return PlayerView(player, tuple(e.date for e in res.editions), found)


def _chart(player: str, found: dict[str, Any]) -> dict[str, Any]:
    traces = []
    for spec in LISTS:  # in the menus' order, as the table's columns
        points = found.get(spec.key)
        if not points:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": spec.title,
                "x": [d for d, _, _ in points],
                "y": [rank for _, rank, _ in points],
                "text": [f"{spec.value} {_fmt(v, spec.digits)}" for _, _, v in points],
                "hovertemplate": f"{spec.title}<br>%{{x}}: #%{{y}}, %{{text}}<extra></extra>",
            }
        )
    return charts.figure(
        traces,
        charts.layout(
            f"{player}: rank in each edition of the lists",
            "edition",
            "rank (1 = top)",
            yaxis={
                "title": {"text": "rank (1 = top)"},
                "autorange": "reversed",
                "automargin": True,
                "rangemode": "tozero",
            },
        ),
    )


def player_sections(view: PlayerView) -> list[Section]:
    player, found, dates = view.player, view.found, view.dates
    by_list = {k: {d: (rank, v) for d, rank, v in pts} for k, pts in found.items()}
    columns = [SPECS[k] for k in (s.key for s in LISTS) if k in by_list]
    rows = [
        {
            "label": label(d),
            "cells": [
                (
                    (
                        by_list[s.key][d][0],
                        _fmt(by_list[s.key][d][1], s.digits),
                        edition_path(s.key, d),
                    )
                    if d in by_list[s.key]
                    else None
                )
                for s in columns
            ],
        }
        for d in reversed(dates)
    ]
    return [
        Section(
            "List editions",
            "partials/editions_player.html",
            {"chart": _chart(player, found), "columns": columns, "rows": rows},
        )
    ]


FAMILY = Family(
    name=RESULT,
    compute=calc.compute,
    pages=pages,
    nav=(NavItem("List editions", "editions.html"),),
    player_view=player_view,
    player_sections=player_sections,
    methodology="partials/editions_methodology.html",
)
