"""Time-control class (classical / rapid / blitz) of a game, by METHODS.md section 0."""

from __future__ import annotations

import re
from collections.abc import Mapping

from site_builder.config import TimeControlSection

_PERIOD = re.compile(r"^(?:(\d+)/)?(\d+)(?:\+(\d+(?:\.\d+)?))?$")


def expected_seconds(time_control: str) -> float | None:
    """Expected game duration in seconds for 60 moves (FIDE's definition), or None.

    ``"900+10"`` → 1500; ``"40/7200:20/3600:900+30"`` → 7200 (the first period decides).
    """
    first = time_control.strip().split(":")[0]
    m = _PERIOD.match(first)
    if not m:
        return None
    base = float(m.group(2))
    inc = float(m.group(3) or 0)
    return base + 60 * inc


def classify(tags: Mapping[str, str], rules: TimeControlSection) -> tuple[str, str]:
    """Return (class, reason). The reason says which rule decided, for the game page."""
    text = " ".join(tags.get(k, "") for k in ("Event", "EventType", "Round")).lower()
    for word in rules.blitz_keywords:
        if word in text:
            return "blitz", f"keyword {word!r} in event"
    for word in (*rules.rapid_keywords, *rules.other_keywords):
        if word in text:
            return "rapid", f"keyword {word!r} in event"
    tc = tags.get("TimeControl", "").strip()
    if tc and tc not in {"?", "-"}:
        seconds = expected_seconds(tc)
        if seconds is not None:
            if seconds < rules.blitz_max_s:
                return "blitz", f"TimeControl {tc}"
            if seconds < rules.rapid_max_s:
                return "rapid", f"TimeControl {tc}"
            return "classical", f"TimeControl {tc}"
    return "classical", "default: no TimeControl tag and no rapid/blitz keyword"
