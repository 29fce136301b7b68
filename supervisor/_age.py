"""Ages as operators write them: ``30d``, ``12h``, ``90m``, ``3600s`` (``tidings prune
--older-than``, the serve config's ``[retention]``, ``tidings status --since``)."""

from __future__ import annotations

import math
import re

__all__ = ["parse_age"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_age(text: str) -> float:
    """*text* (a number and one of ``s``, ``m``, ``h``, ``d``) as finite seconds >= 0.
    Raises ``ValueError`` saying what is expected."""
    found = _AGE.fullmatch(text.strip()) if isinstance(text, str) else None
    seconds = float(found.group(1)) * _UNITS[found.group(2)] if found else math.nan
    if not math.isfinite(seconds):
        raise ValueError(f"expected an age like 30d, 12h, 90m or 3600s, got {text!r:.80}")
    return seconds
