"""Restart intensity: at most ``max_restarts`` restarts within ``period`` seconds."""

from __future__ import annotations

from collections import deque
from typing import final

import attrs

from tidings.errors import ValidationError
from tidings.supervisor._seconds import past_float_as_inf

__all__ = ["Intensity", "RestartWindow"]


def _check_max_restarts(_: object, __: object, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValidationError("max_restarts", f"must be an int >= 0, got {value!r}")


def _check_period(_: object, __: object, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValidationError("period", f"must be a number of seconds > 0, got {value!r}")


@final
@attrs.frozen
class Intensity:
    """How many restarts a supervisor tolerates: ``max_restarts`` within ``period`` seconds.

    The window slides on :func:`trio.current_time`: a restart at time ``t`` counts while
    ``now - t <= period``. The restart that would make the count exceed ``max_restarts``
    escalates instead (``max_restarts=0``: the first failure escalates). A ``period`` past a
    float's range is ``inf``: every restart counts for good.

    Under ``one_for_all`` / ``rest_for_one`` a crash that comes while a group restart is due
    (queued or under way) is counted when its own group restart is served, and not at all
    when the one due relaunched it meanwhile: siblings failing together are one restart.
    """

    max_restarts: int = attrs.field(default=3, validator=_check_max_restarts)
    period: float = attrs.field(default=5.0, converter=past_float_as_inf,
                                validator=_check_period)


@final
class RestartWindow:
    """The sliding window of recent restart times for one supervisor (kernel internal)."""

    __slots__ = ("_intensity", "_times")

    def __init__(self, intensity: Intensity) -> None:
        self._intensity = intensity
        self._times: deque[float] = deque()

    def admit(self, now: float) -> bool:
        """Count a restart at ``now``; return False when that exceeds the intensity."""
        times = self._times
        times.append(now)
        period = self._intensity.period
        while now - times[0] > period:
            times.popleft()
        return len(times) <= self._intensity.max_restarts

    def __len__(self) -> int:
        return len(self._times)
