"""Time-control class (classical / rapid / blitz) of a game, by METHODS.md section 0.

The rules, in order (each configurable in ``[time_control]``):

1. a blitz keyword in Event, EventType or Round → blitz;
2. a rapid keyword (or simul, blindfold, online …) → rapid;
3. a knock-out event (World Cup, "k.o.") whose Round is ``match.game`` with the game number
   above ``knockout_classical_games`` → rapid (a tiebreak);
4. the TimeControl tag, by FIDE's expected duration of a 60-move game;
5. a keyword of an event known to be classical (Olympiad, Candidates …) → classical;
6. otherwise classical by default (listed in the build report).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from site_builder.config import TimeControlSection

_PERIOD = re.compile(r"^(?:(\d+)/)?(\d+)(?:\+(\d+(?:\.\d+)?))?$")
_KNOCKOUT_ROUND = re.compile(r"^\s*\d+\.(\d+)\s*$")

#: The reason given to a game no rule classified (it counts as classical).
DEFAULT_REASON = "default: no TimeControl tag and no rapid/blitz keyword"


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


def is_default(reason: str) -> bool:
    """True when no rule classified the game (see :data:`DEFAULT_REASON`)."""
    return reason == DEFAULT_REASON


def classify(tags: Mapping[str, str], rules: TimeControlSection) -> tuple[str, str]:
    """Return (class, reason). The reason says which rule decided, for the game page."""
    event = " ".join(tags.get(k, "") for k in ("Event", "EventType")).lower()
    text = f"{event} {tags.get('Round', '')}".lower()
    for word in rules.blitz_keywords:
        if word in text:
            return "blitz", f"keyword {word!r} in event"
    for word in (*rules.rapid_keywords, *rules.other_keywords):
        if word in text:
            return "rapid", f"keyword {word!r} in event"
    for word in rules.knockout_keywords:
        if word in event:
            m = _KNOCKOUT_ROUND.match(tags.get("Round", ""))
            if m and int(m.group(1)) > rules.knockout_classical_games:
                return "rapid", (
                    f"tiebreak: game {m.group(1)} of a knock-out match ({word!r} in event; "
                    f"games after the first {rules.knockout_classical_games} are rapid)"
                )
            break
    tc = tags.get("TimeControl", "").strip()
    if tc and tc not in {"?", "-"}:
        seconds = expected_seconds(tc)
        if seconds is not None:
            # FIDE: blitz 10 minutes or less, rapid more than 10 and less than 60.
            if seconds <= rules.blitz_max_s:
                return "blitz", f"TimeControl {tc}"
            if seconds < rules.rapid_max_s:
                return "rapid", f"TimeControl {tc}"
            return "classical", f"TimeControl {tc}"
    for word in rules.classical_keywords:
        if word in event:
            return "classical", f"keyword {word!r} in event"
    return "classical", DEFAULT_REASON
