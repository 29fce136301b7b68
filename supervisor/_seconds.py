"""Seconds past a float's range: the kernel's twin of ``actors._status.seconds_bound``.

The kernel cannot import that one (the actors import the kernel); the rule is the same.
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
