"""Seconds past a float's range: no bound, as ``inf`` is. The kernel's rule, which the actors'
``actors._status.seconds_bound`` applies too (the kernel cannot import the actors).
"""

from __future__ import annotations

import math
import sys

__all__ = ["past_float_as_inf"]


def past_float_as_inf(value: object) -> object:
    """An attrs converter for a number of seconds: an integer past a float's range (TOML and
    JSON carry any) is no bound, as ``inf`` is; anything else is kept for the field's check.

    Kept as given, such an integer passed the checks (``value >= 0``) and then raised an
    ``OverflowError`` naming nothing where it became a deadline or a float.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value > sys.float_info.max:
        return math.inf
    return value
