"""Plotly figures as plain dicts (pure). The page embeds them as escaped JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

COLORS = {
    # Okabe–Ito palette: distinguishable with the common colour-vision deficiencies.
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}
PALETTE = list(COLORS.values())


_PLAIN = frozenset({str, int, bool, type(None)})


def _clean(value: Any) -> Any:
    """``value`` with floats rounded to 4 digits and NaN or infinity as None."""
    kind = type(value)
    if kind is list or kind is tuple:
        # A chart's x and y are long lists of plain floats: one pass, no call per number.
        return [
            (round(v, 4) if math.isfinite(v) else None)
            if type(v) is float
            else (v if type(v) in _PLAIN else _clean(v))
            for v in value
        ]
    if kind is dict:
        return {k: v if type(v) in _PLAIN else _clean(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "hovermode": "closest",
        "font": {"family": "system-ui, sans-serif", "size": 13},
        "legend": {"orientation": "h", "y": -0.2},
    }
    base.update(extra)
    return base


def figure(data: Sequence[dict[str, Any]], fig_layout: dict[str, Any]) -> dict[str, Any]:
    return {"data": list(data), "layout": fig_layout}


def to_script_json(fig: dict[str, Any]) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``.

    Floats are rounded to 4 digits and NaN or infinity become null here, when the page is
    written, not when the figure is made (an unchanged page is never written)."""
    text = json.dumps(_clean(fig), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def interval_trace(
    rows: list[dict[str, Any]], x: str, y: str, lo: str, hi: str, name: str, color: str
) -> dict[str, Any]:
    """Lines and markers of ``y`` against ``x``, with error bars from ``lo`` to ``hi``."""
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": [r[x] for r in rows],
        "y": [r[y] for r in rows],
        "error_y": error_bars(rows, y, lo, hi),
        "line": {"color": color},
    }


def error_bars(
    rows: Sequence[Mapping[Any, Any]], y: str, lo: str, hi: str, color: str | None = None
) -> dict[str, Any]:
    """Plotly's asymmetric error bars from ``lo`` to ``hi`` around ``y``."""
    bars: dict[str, Any] = {
        "type": "data",
        "symmetric": False,
        "array": [r[hi] - r[y] for r in rows],
        "arrayminus": [r[y] - r[lo] for r in rows],
    }
    if color is not None:
        bars["color"] = color
    return bars
