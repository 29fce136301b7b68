"""Optional exponential backoff before a child is restarted."""

from __future__ import annotations

import random
from typing import final

import attrs

from tidings.errors import ValidationError
from tidings.supervisor._seconds import past_float_as_inf

__all__ = ["Backoff", "BackoffTimer"]

# 2 ** 64 times any sane ``min`` is already past any sane ``max``; capping avoids float overflow.
_MAX_DOUBLINGS = 64


def _seconds(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValidationError(field, f"must be a number of seconds >= 0, got {value!r}")
    return float(value)


@final
@attrs.frozen
class Backoff:
    """Exponential delay before restarting a child: one that crashed, and as much a
    ``permanent`` one that returned (its restart is a restart like any other, counted by the
    intensity too: a child that keeps returning at once is paced, not restarted in a loop).

    The ``n``-th consecutive restart (from 0) waits ``min * 2**n`` seconds, capped at ``max``,
    then scaled by a random factor in ``[1 - jitter, 1 + jitter]`` (and capped at ``max`` again).
    Once an incarnation has run for ``reset_after`` seconds the sequence starts again at ``min``.
    ``seed`` makes the jitter reproducible (``None``: seeded from the OS). A number of seconds
    past a float's range is ``inf``.

    The wait goes through trio's clock (a :class:`trio.testing.MockClock` controls it) and happens
    in the restarted child's own task, so it delays nobody else, except that in a
    ``one_for_all`` / ``rest_for_one`` group restart the children after it start after it.
    """

    min: float = attrs.field(default=0.1, converter=past_float_as_inf)
    max: float = attrs.field(default=30.0, converter=past_float_as_inf)
    jitter: float = 0.1
    reset_after: float = attrs.field(default=60.0, converter=past_float_as_inf)
    seed: int | None = None

    def __attrs_post_init__(self) -> None:
        low = _seconds("min", self.min)
        high = _seconds("max", self.max)
        _seconds("reset_after", self.reset_after)
        if low > high:
            raise ValidationError("min", f"must be <= max ({high}), got {low}")
        jitter = self.jitter
        if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 1:
            raise ValidationError("jitter", f"must be a fraction in [0, 1], got {jitter!r}")
        seed = self.seed  # else random.Random refused it at the first restart, in the kernel
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValidationError("seed", f"must be an int or None, got {seed!r:.80}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The delay in seconds before restart number ``attempt`` (0-based) of a sequence."""
        base = min(self.max, self.min * 2.0 ** min(attempt, _MAX_DOUBLINGS))
        if self.jitter:
            base *= 1.0 + self.jitter * rng.uniform(-1.0, 1.0)
        return max(0.0, min(self.max, base))


@final
class BackoffTimer:
    """Per-child backoff state: the attempt counter and the jitter's random source."""

    __slots__ = ("_attempt", "_backoff", "_rng")

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._rng = random.Random(backoff.seed)
        self._attempt = 0

    def next_delay(self, ran_for: float) -> float:
        """The delay before the next restart of a child whose incarnation ran ``ran_for`` s."""
        if ran_for >= self._backoff.reset_after:
            self._attempt = 0
        delay = self._backoff.delay(self._attempt, self._rng)
        self._attempt += 1
        return delay
