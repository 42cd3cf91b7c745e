"""What a family's block on a player or game page reads: its *view*, the one source of the
page's key.

A family gathers a view cheaply (``Family.player_view(site, player)``,
``Family.game_view(site, game)``) and makes its blocks and downloads from the view alone
(``player_sections(view)``, ``player_files(view)``, ``game_sections(view)``): they are not
given the site, so whatever they show is in the view, and the view's digest, which the page
key holds, cannot miss it. A table enters a view as :class:`Rows`: digested by its rows'
hashes and read as records only when the blocks are made (that is, when the key changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from site_builder.frames import column_array, memo_on, positions_by, records_by, row_hashes_by


def _empty(frame: pd.DataFrame) -> bool:
    """``frame.empty``, read from its shape (pandas' property costs microseconds a call)."""
    return 0 in frame.shape


@dataclass(frozen=True, eq=False)
class Rows:
    """The rows of ``frame`` whose ``by`` column is ``value``, in frame order, restricted to
    ``columns`` (all by default; ``by`` is always kept), and then the ``digits`` columns
    rounded as the page prints them. Pickled (so digested) as the hashes of those rows;
    :meth:`records` gives them as dicts holding only those columns."""

    frame: pd.DataFrame
    by: str
    value: str
    columns: tuple[str, ...] | None = None
    #: (column, digits the page shows): a figure moving below that leaves the key as it was
    digits: tuple[tuple[str, int], ...] = ()

    @cached_property
    def _by_value(self) -> dict[str, bytes]:
        """The frame's row hashes by ``by`` value, as this view shows the rows: one lookup
        a view, computed once a frame and shape of view."""
        found: dict[str, bytes] = memo_on(
            self.frame,
            ("rows-hashes", self.by, self.columns, self.digits),
            lambda: {} if _empty(self._shown) else row_hashes_by(self._shown, self.by),
        )
        return found

    @property
    def _shown(self) -> pd.DataFrame:
        if _empty(self.frame) or (self.columns is None and not self.digits):
            return self.frame
        shown = tuple(self.frame.columns) if self.columns is None else self.columns
        kept = (self.by, *(c for c in shown if c != self.by))
        name = "rows|" + ",".join(kept) + "".join(f"|{c}:{n}" for c, n in self.digits)
        return memo_on(self.frame, name, lambda: _rounded(self.frame[list(kept)], self.digits))  # type: ignore[no-any-return]

    @cached_property
    def hashes(self) -> bytes:
        return self._by_value.get(self.value, b"")

    def records(self) -> list[dict[str, Any]]:
        shown = self._shown
        if _empty(shown):
            return []
        return records_by(shown, self.by).get(self.value, [])

    def values(self, column: str) -> list[Any]:
        """One column of the rows, read without making them records (for gathering a view)."""
        if _empty(self.frame):
            return []
        at = positions_by(self.frame, self.by).get(self.value)
        if at is None:
            return []
        values = memo_on(self.frame, f"column|{column}", lambda: column_array(self.frame[column]))
        return list(values[at].tolist())

    def __len__(self) -> int:
        return len(self.hashes) // 8  # one 64-bit hash a row

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, ((self.by, self.columns, self.hashes),))


def _rounded(frame: pd.DataFrame, digits: tuple[tuple[str, int], ...]) -> pd.DataFrame:
    """``frame`` with the ``digits`` columns rounded by Python's ``round``, which rounds as
    ``fmt`` prints (``fmt(round(x, n), n) == fmt(x, n)``; numpy's rounds ``x·10ⁿ`` and can
    cross a half)."""
    if not digits:
        return frame
    out = frame.copy()
    for column, n in digits:
        out[column] = [round(v, n) if isinstance(v, float) else v for v in out[column].tolist()]
    return out


def columns_except(frame: pd.DataFrame, left_out: Sequence[str]) -> tuple[str, ...]:
    """``frame``'s columns but ``left_out``: those a view keeps of a table (once a frame)."""
    found: tuple[str, ...] = memo_on(
        frame,
        "columns_except|" + ",".join(left_out),
        lambda: tuple(str(c) for c in frame.columns if c not in left_out),
    )
    return found


@dataclass(frozen=True)
class PlayerYears:
    """A player block of a rating by year (IPR, Bayesian skill): the family's status (n/a
    for every player when set), the player's row of the list, their rows by year, and where
    the year table is downloaded (without .csv/.json)."""

    player: str
    status: str
    summary: Rows | None
    years: Rows | None
    downloads_base: str
    #: a note on the whole family shown with the block (the Bayesian Elo mapping's status)
    note: str = ""

    @staticmethod
    def of(
        player: str,
        status: str,
        summary: pd.DataFrame,
        years: pd.DataFrame,
        base: str,
        note: str = "",
    ) -> PlayerYears | None:
        """The view, or None when the player has neither a row nor a year (and no status)."""
        if status:
            return PlayerYears(player, status, None, None, base)
        rows, by_year = Rows(summary, "player", player), Rows(years, "player", player)
        if not len(rows) and not len(by_year):
            return None
        return PlayerYears(player, "", rows, by_year, base, note)
