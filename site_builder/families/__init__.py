"""The metric families: each family's calculations, from the site's inputs to typed results
(one module per family, no pages), and the list of families a site is made of.

A family's pages, blocks and navigation are made from its result in
``site_builder/render/<family>_pages.py``, where its ``Family`` is declared.
"""

from __future__ import annotations

from site_builder.sitedata import Family


def metric_families() -> list[Family]:
    """The metric families, in page order."""
    # Imported here: the page modules import this package's calculation modules.
    from site_builder.render import (
        agreement_pages,
        bayesian_pages,
        champions_pages,
        edition_pages,
        intrinsic_pages,
        quality_pages,
        results_pages,
        update_pages,
    )

    return [
        quality_pages.FAMILY,
        results_pages.FAMILY,
        champions_pages.FAMILY,
        intrinsic_pages.FAMILY,
        bayesian_pages.FAMILY,
        # Last: it reads the results of the families above.
        agreement_pages.FAMILY,
        # The lists' editions: from the lists' families' results.
        edition_pages.FAMILY,
        # The updates: set by the build after the metrics (it compares with the last build).
        update_pages.FAMILY,
    ]


def all_families() -> list[Family]:
    """Every family, the core pages last; the navigation is grouped into menus (render.nav)."""
    from site_builder.render.core_pages import make_core_family
    from site_builder.render.nav import with_grouped_nav

    families = metric_families()
    return with_grouped_nav([*families, make_core_family(families)])
