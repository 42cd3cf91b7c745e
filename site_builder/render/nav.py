"""The top navigation: every family's pages gathered into a few menus (pure).

Families declare flat :class:`NavItem` lists; :func:`with_grouped_nav` gathers them (and the
pages a family makes without listing them) into menus, so a family need not know the menus.
A page not in :data:`MENUS` lands in the "More" menu, so a new family is reachable at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from site_builder.sitedata import Family, NavItem

#: Top-level entries in order: a menu (label, its pages in order) or a single page.
MENUS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Ratings",
        (
            "index.html",
            "elo.html",
            "rapid.html",
            "blitz.html",
            "intrinsic.html",
            "skill.html",
            "lists.html",
            "editions.html",
            "agreement.html",
            "elo-historic.html",
            "elo-annual.html",
            "calibration.html",
            "skill-groups.html",
        ),
    ),
    ("Style", ("fighters.html", "style.html", "openings.html")),
    (
        "Champions",
        (
            "champions.html",
            "headtohead.html",
            "wcc.html",
            "predictors.html",
            "complexity.html",
        ),
    ),
    ("Tournaments", ("events.html",)),
    ("Players", ("players.html",)),
    ("More", ()),
    ("About", ("methodology.html", "report.html")),
)

#: Pages a family makes and links from its own pages but does not list in its ``nav``.
EXTRA_NAV: dict[str, tuple[NavItem, ...]] = {
    "results": (
        NavItem("Blitz", "blitz.html"),
        NavItem("Improved Elo, historic", "elo-historic.html"),
        NavItem("Improved Elo, by year", "elo-annual.html"),
    ),
    "conformance": (
        NavItem("Head-to-head", "headtohead.html"),
        NavItem("World championships", "wcc.html"),
        NavItem("Game predictor p(x)", "predictors.html"),
        NavItem("Complexity", "complexity.html"),
    ),
    "bayesian": (NavItem("Skill by Elo group", "skill-groups.html"),),
}

#: Menu titles that say more than the family's own (its nav title is kept otherwise).
TITLES: dict[str, str] = {
    "index.html": "Quality index",
    "rapid.html": "Rapid",
    "champions.html": "Champions compared",
    "intrinsic.html": "Intrinsic rating (IPR)",
    "skill.html": "Bayesian skill",
    "agreement.html": "Method agreement",
    "calibration.html": "IPR calibration",
}


def grouped_nav(items: Sequence[NavItem]) -> tuple[NavItem, ...]:
    """Menus from flat items: the first item of a path wins; a one-page menu is a link."""
    seen: dict[str, NavItem] = {}
    for item in items:
        if item.path not in seen:
            seen[item.path] = NavItem(TITLES.get(item.path, item.title), item.path)
    placed = {path for _, paths in MENUS for path in paths}
    out: list[NavItem] = []
    for label, paths in MENUS:
        children = [seen[p] for p in paths if p in seen]
        if label == "More":
            children = [i for p, i in seen.items() if p not in placed]
        if len(children) == 1 and len(paths) <= 1:
            out.append(NavItem(label if paths else children[0].title, children[0].path))
        elif children:
            out.append(NavItem(label, children[0].path, tuple(children)))
    return tuple(out)


def with_grouped_nav(families: Sequence[Family]) -> list[Family]:
    """The families with every nav item moved, grouped, onto the last one (the core family)."""
    if not families:
        return []
    items = [i for f in families for i in (*f.nav, *EXTRA_NAV.get(f.name, ()))]
    tree = grouped_nav(items)
    return [
        *(dataclasses.replace(f, nav=()) for f in families[:-1]),
        dataclasses.replace(families[-1], nav=tree),
    ]
