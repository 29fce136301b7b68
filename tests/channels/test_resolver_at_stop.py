"""A channel's router resolver that binds as the runtime stops is refused (``bind`` raises
:class:`RuntimeClosedError`): that is the stop, not a resolver failing. It was logged as
``event=resolver_failed`` (noise at every stop with rows of evicted conversations in hand),
and a host's ``rt.router.deliver`` waiting on it returned False (no route), where a call once
the runtime is stopping raises :class:`RuntimeClosedError`."""

from __future__ import annotations

import logging

import trio

import tidings
from tidings.actors import Outbound
from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError

from .test_idle_conversations import SmallChannel, _serve


async def test_a_resolver_refused_by_the_stop_is_the_stop(db_path, workspace, caplog,
                                                         autojump_clock) -> None:
    entered, go = trio.Event(), trio.Event()
    outcome: list[object] = []

    async def paused(*_args, **_kwargs):  # the resolver's second read: until the stop is done
        entered.set()
        await go.wait()
        return []  # (no unrouted rows: it binds next)

    async def deliver(rt, session_id: str) -> None:  # type: ignore[no-untyped-def]
        try:
            outcome.append(await rt.router.deliver(Outbound(
                session_id, "direct_1", "notice", (), "direct")))
        except RuntimeClosedError as exc:
            outcome.append(exc)

    caplog.set_level(logging.WARNING, logger="tidings.router")
    async with trio.open_nursery() as nursery:
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            channel = SmallChannel(rt, ChannelConfig(name="ops"))
            sessions = await _serve(channel)
            assert rt.router.binding(sessions["c0"]) is None  # evicted
            rt.stored_deliveries = paused
            nursery.start_soon(deliver, rt, sessions["c0"])
            await entered.wait()
        go.set()
    [result] = outcome
    assert isinstance(result, RuntimeClosedError), result
    assert "resolver_failed" not in caplog.text
