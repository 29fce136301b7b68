"""What ``tidings chat --url`` takes from the gateway's ``welcome`` to stay within its limits:
the pace of the frames it sends (``rate`` and ``burst``: a pasted block of lines, or the lines
sent again after a reconnect, wait their turn instead of getting the connection closed
``4029``) and the largest frame (``max_frame_bytes``: a line over it is not sent). A welcome
that says no usable number gets :class:`~tidings.channels.GatewayConfig`'s default, so an
odd server can neither make the chat refuse every line nor crash its arithmetic."""

from __future__ import annotations

import math
from typing import Any

import attrs
import trio

from tidings.channels import GatewayClient, GatewayConfig
from tidings.channels._gateway_frames import encode

__all__ = ["PACE_MARGIN", "LineLimit", "Pace", "frame_limit", "over_frame_limit", "positive",
           "too_big"]

PACE_MARGIN = 0.8
"""The share of the server's ``rate`` and ``burst`` the chat uses (see :class:`Pace`)."""


class Pace:
    """The chat's side of the gateway's token bucket: ``rate`` frames per second, ``burst``
    at once (from ``welcome``; :class:`GatewayConfig`'s defaults for a server that does not say,
    or says no number > 0 a float holds), times :data:`PACE_MARGIN` for frames the network
    bunches up. A frame over it waits its turn instead of getting the connection closed
    ``4029`` (a pasted block of lines, the lines sent again after a reconnect). One per
    connection, as the server's bucket. Acks of what the connection was sent are free, and not
    paced."""

    def __init__(self, welcome: dict[str, Any]) -> None:
        fields = attrs.fields(GatewayConfig)
        rate, burst = welcome.get("rate"), welcome.get("burst")
        if not positive(rate):
            rate = fields.rate.default
        if not positive(burst):
            burst = fields.burst.default
        self.rate = rate * PACE_MARGIN
        self.burst = max(1.0, math.floor(burst * PACE_MARGIN))
        self.tokens = self.burst
        self.stamp = trio.current_time()

    async def take(self) -> None:
        """Wait until one more frame is within the pace. Each caller reserves its token at
        once (the count may go below zero), so concurrent callers wait in turn."""
        now = trio.current_time()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate) - 1
        self.stamp = now
        if self.tokens < 0:
            await trio.sleep(-self.tokens / self.rate)
        else:
            await trio.lowlevel.checkpoint()


def positive(value: Any) -> bool:
    """Whether *value* is a number of ``welcome``'s pace: > 0 and a finite float (JSON carries
    any integer; one past a float's range would fail the pace's arithmetic)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return 0 < float(value) < math.inf
    except OverflowError:
        return False


def frame_limit(welcome: dict[str, Any]) -> int:
    """The largest frame the server of *welcome* takes: its ``max_frame_bytes``, or
    :class:`GatewayConfig`'s default when that is no limit (see :func:`too_big`)."""
    limit = welcome.get("max_frame_bytes")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        limit = attrs.fields(GatewayConfig).max_frame_bytes.default
    return limit


class LineLimit:
    """The longest line the chat's input holds (``input_lines``' ``max_line_bytes``): the
    frame limit of the last ``welcome`` (a frame is at least as long as its line, so a longer
    line could never be sent). Asked before the first welcome, it waits for it: the input is
    not read further meanwhile, so nothing longer is held."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self._known = trio.Event()

    def welcomed(self, welcome: dict[str, Any]) -> None:
        """Take the limit of a connection's *welcome*."""
        self.limit = frame_limit(welcome)
        self._known.set()

    async def wait(self) -> int:
        """The current limit, once there is one."""
        await self._known.wait()
        assert self.limit is not None
        return self.limit


def too_big(client: GatewayClient, frame: dict[str, Any]) -> str | None:
    """Why *frame* is not to be sent (see :func:`over_frame_limit`): over the server's
    ``max_frame_bytes`` it would be refused (``frame_too_big``, with no ``ref`` to tell which
    line) or, over four times that, close the connection (``1009``). None when it fits. A
    welcome whose ``max_frame_bytes`` is
    no limit (absent, or not an integer > 0: ``true``, ``0``, NaN, a string...) is taken as
    :class:`GatewayConfig`'s default, as :class:`Pace` takes ``rate`` and ``burst``: it
    would otherwise refuse every line, or let through lines that close the connection."""
    limit = frame_limit(client.welcome)
    size = len(encode(frame).encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return over_frame_limit(limit)


def over_frame_limit(limit: int) -> str:
    """Why a line is not sent when it is over the server's ``max_frame_bytes``, *limit*: one
    wording for a typed line (:func:`too_big`) and a piped one refused as it is read (which
    adds that the rest of it is skipped), shaped as ``--local``'s refusal of a line over
    ``MAX_TEXT_BYTES``. "As a frame": a line a little under the limit may be over it once
    framed (the JSON around it, its escapes)."""
    return f"the line is over {limit} bytes as a frame (the server's max_frame_bytes)"
