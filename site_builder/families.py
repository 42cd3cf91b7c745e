"""The metric families a site is made of, in page order."""

from __future__ import annotations

from site_builder.render import (
    agreement_pages,
    bayesian_pages,
    champions_pages,
    intrinsic_pages,
    quality_pages,
    results_pages,
)
from site_builder.render.core_pages import make_core_family
from site_builder.render.nav import with_grouped_nav
from site_builder.sitedata import Family

METRIC_FAMILIES: list[Family] = [
    quality_pages.FAMILY,
    results_pages.FAMILY,
    champions_pages.FAMILY,
    intrinsic_pages.FAMILY,
    bayesian_pages.FAMILY,
    # Last: it reads the results of the families above.
    agreement_pages.FAMILY,
]


def all_families() -> list[Family]:
    """Every family, the core pages last; the navigation is grouped into menus (render.nav)."""
    return with_grouped_nav([*METRIC_FAMILIES, make_core_family(METRIC_FAMILIES)])
