"""writer.Chained and writer.MadeWhenRead: the render's items read as one sequence, each
page set made only when its index is read (issue 17)."""

from __future__ import annotations

import pytest

from site_builder.render.writer import Chained, MadeWhenRead, Page


def _page(name: str) -> Page:
    return Page(f"{name}.html", "page.html", {"name": name})


def test_chained_reads_its_parts_in_order_and_makes_an_item_when_read() -> None:
    made: list[str] = []

    def make(name: str) -> Page:
        made.append(name)
        return _page(name)

    first = [_page("a"), _page("b")]
    lazy = MadeWhenRead(["c", "d", "e"], make)
    items = Chained([first, [], lazy, [_page("f")]])
    assert made == []
    assert len(items) == 6
    assert [p.path for p in items] == ["a.html", "b.html", "c.html", "d.html", "e.html", "f.html"]
    assert made == ["c", "d", "e"]
    assert items[3].path == "d.html" and made[-1] == "d"
    assert items[-1].path == "f.html" and items[-4].path == "c.html"
    assert [p.path for p in items[1:6:2]] == ["b.html", "d.html", "f.html"]
    assert [p.path for p in lazy[::-1]] == ["e.html", "d.html", "c.html"]
    with pytest.raises(IndexError):
        items[6]
    with pytest.raises(IndexError):
        items[-7]
    assert len(Chained([])) == 0 and list(Chained([[], []])) == []


def test_items_made_each_build_lead_the_queue_one_share_each() -> None:
    """The families' pages (one item each, made in every build) are shares of their own at
    the front of the render's queue, so the processes even out on the page sets after."""
    from site_builder.render.output import _made_each_build, _shares
    from site_builder.render.writer import PageSet, made_where_rendered

    items = [made_where_rendered(f"family|{k}", list) for k in "ab"]
    items += [PageSet("player|x", "key", list), made_where_rendered("late", list)]
    assert _made_each_build(items) == 2 and _made_each_build(items[2:]) == 0
    assert _shares(9, 3, 2) == [[0], [1], [2, 5, 8], [3, 6], [4, 7]]
    assert _shares(2, 16, 2) == [[0], [1]]
    assert _shares(5, 16) == [[0], [1], [2], [3], [4]] and _shares(0, 16) == [[]]
    shares = _shares(40, 16, 3)
    assert sorted(i for s in shares for i in s) == list(range(40))
