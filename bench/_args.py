"""Argument types shared by the bench scripts, so a value a script cannot measure with (0, a
negative count, a word, ``nan``) is refused by argparse naming its flag (exit 2, one line),
not met as a traceback after some of the run.

The scripts run as ``.venv/bin/python bench/x.py``, which puts ``bench/`` first on
``sys.path``: they import this module as ``_args``.
"""

from __future__ import annotations

import argparse
import math
import pathlib
from collections.abc import Callable

__all__ = ["at_least", "directory", "finite", "int_list", "rate_list"]


def at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """A whole number >= *minimum*; *why* says what the least is for."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            reason = f" ({why})" if why else ""
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{reason}, not {value}")
        return value

    whole.__name__ = f"whole number >= {minimum}"
    return whole


def finite(*, above: float | None = None, least: float | None = None) -> Callable[[str], float]:
    """A finite number, > *above* or >= *least* when given."""

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
        if above is not None and value <= above:
            raise argparse.ArgumentTypeError(f"must be more than {above:g}, not {text}")
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least:g}, not {text}")
        return value

    number.__name__ = "number"
    return number


def int_list(minimum: int) -> Callable[[str], list[int]]:
    """Comma-separated whole numbers, each >= *minimum*."""
    one = at_least(minimum)

    def whole_list(text: str) -> list[int]:
        return [one(part) for part in text.split(",")]

    whole_list.__name__ = "comma-separated list"
    return whole_list


def rate_list(text: str) -> list[float]:
    """Comma-separated probabilities, each in [0, 1] (0: a run with no faults)."""
    one = finite(least=0.0)
    rates = [one(part) for part in text.split(",")]
    for rate in rates:
        if rate > 1:
            raise argparse.ArgumentTypeError(f"a rate is a probability, at most 1, not {rate:g}")
    return rates


def directory(text: str) -> pathlib.Path:
    """An existing directory (the script makes its temporary directory in it)."""
    path = pathlib.Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not an existing directory: {text!r}")
    return path
