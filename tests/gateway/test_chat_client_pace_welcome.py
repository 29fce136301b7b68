"""The terminal client (tidings chat without --local) takes its pace from ``welcome``'s
``rate`` and ``burst``; a welcome whose numbers are no pace (absent: an older server; zero,
negative, NaN, a string, a boolean; or an integer too big for a float) falls back to
:class:`GatewayConfig`'s defaults instead of ending the chat. Before, an integer rate or burst
past a float's range (JSON carries any integer) ended the chat in an OverflowError traceback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tidings.channels import GatewayClient
from tidings.supervisor import _chat_limits, _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

_MISSING = object()


class _Welcomed:
    """``GatewayClient.connect`` whose welcome says *rate* and *burst* (or leaves them out)."""

    def __init__(self, rate: Any, burst: Any) -> None:
        self.rate, self.burst = rate, burst

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[GatewayClient]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            for name, value in (("rate", self.rate), ("burst", self.burst)):
                if value is _MISSING:
                    client.welcome.pop(name, None)
                else:
                    client.welcome[name] = value
            yield client


@pytest.mark.parametrize(("rate", "burst"), [
    (_MISSING, _MISSING), (0, 0), (-1, -5), (float("nan"), float("nan")), ("fast", "big"),
    (True, True), (10 ** 400, 5), (5, 10 ** 400), (10 ** 400, 10 ** 400),
], ids=["absent", "zero", "negative", "nan", "string", "bool", "huge-rate", "huge-burst",
        "huge-both"])
async def test_a_welcome_without_a_usable_pace_chats_at_the_default_pace(
        rt, serve_gateway, monkeypatch, rate: Any, burst: Any) -> None:
    monkeypatch.setattr(_chat_ws, "GatewayClient", _Welcomed(rate, burst))
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (_gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            yield "two\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="pace-welcome",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two"]


@pytest.mark.parametrize(("rate", "burst"), [(10 ** 400, 60), (20, 10 ** 400), (0, 0)],
                         ids=["huge-rate", "huge-burst", "zero"])
async def test_the_pace_of_an_unusable_welcome_is_the_servers_default(rate, burst) -> None:
    pace = _chat_limits.Pace({"rate": rate, "burst": burst})
    assert (pace.rate, pace.burst) == (20.0 * _chat_limits.PACE_MARGIN,
                                       60 * _chat_limits.PACE_MARGIN)
