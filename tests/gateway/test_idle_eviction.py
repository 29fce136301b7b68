"""The gateway evicts idle conversations past ``idle_conversations``, as any channel does: one
whose clients all left, with nothing in hand. What its client sees does not change: a row a
host writes in its session meanwhile goes ``unrouted`` (it waited in ``deliver()`` for a
client before, holding the session's lane), and the client's next hello is sent it, in seq
order, once; a client that comes back is in the same session. A conversation with a client
connected is never evicted."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.actors import Runtime
from tidings.channels import GatewayChannel, GatewayClient

from .conftest import TOKEN, frame_is, serving_gateway


class _OneIdle(GatewayChannel):
    idle_conversations = 1


def _connect(url: str, name: str, **hello: Any) -> Any:
    return GatewayClient.connect(url, token=TOKEN, conversation=name, **hello)


async def _visit(url: str, name: str) -> tuple[str, int]:
    """A message answered and acked, then the client leaves: its session and the reply's
    seq."""
    async with _connect(url, name) as client:
        await client.message("hi")
        frames = await client.receive_until(frame_is("delivery", kind="message"))
        return client.session_id, frames[-1]["seq"]


async def _alpha_evicted(rt: Runtime, url: str) -> tuple[str, int]:
    """Alpha visited, then two more conversations past the cap of 1: alpha is evicted (its
    session unbound). Alpha's session and the seq of its reply."""
    session_a, seq = await _visit(url, "alpha")
    await _visit(url, "beta")  # past the cap of 1: alpha is evicted
    await _visit(url, "gamma")
    assert rt.router.binding(session_a) is None
    return session_a, seq


async def _texts_until(client: GatewayClient, last: str) -> list[tuple[int, str]]:
    frames = await client.receive_until(frame_is("delivery", text=last))
    return [(f["seq"], f["text"]) for f in frames if f["type"] == "delivery"]


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "after_seq"])
async def test_a_host_row_to_an_evicted_conversation_reaches_its_next_hello(
        rt, resume: bool) -> None:
    with trio.fail_after(30):
        async with serving_gateway(rt, gateway_class=_OneIdle) as (gateway, url):
            session_a, seq = await _alpha_evicted(rt, url)
            assert session_a not in gateway.session_keys
            first = await rt.notify(session_a, "first")
            second = await rt.notify(session_a, "second")
            assert await first.wait() == "unrouted"  # no lane waits for the client
            assert await second.wait() == "unrouted"
            hello = {"after_seq": seq} if resume else {}
            async with _connect(url, "alpha", **hello) as client:
                assert client.session_id == session_a
                got = await _texts_until(client, "second")
                assert [text for _, text in got] == ["first", "second"]
                assert [s for s, _ in got] == sorted(s for s, _ in got)
                await client.message("again")  # the same session, answered
                frames = await client.receive_until(frame_is("delivery", kind="message",
                                                             text="again"))
                assert [f["text"] for f in frames if f["type"] == "delivery"] == ["again"]


async def test_a_connected_conversation_is_not_evicted(rt) -> None:
    with trio.fail_after(30):
        async with serving_gateway(rt, gateway_class=_OneIdle) as (_, url), \
                _connect(url, "alpha") as stays:
            await stays.message("hi")
            await stays.receive_until(frame_is("delivery", kind="message"))
            for name in ("beta", "gamma", "delta"):
                await _visit(url, name)
            assert rt.router.binding(stays.session_id) is not None
            note = await rt.notify(stays.session_id, "live")
            assert [t for _, t in await _texts_until(stays, "live")] == ["live"]
            assert await note.wait() == "delivered"


async def test_a_hello_settling_its_replay_keeps_its_conversation(rt, monkeypatch) -> None:
    """A hello with ``after_seq`` settles it in the store after its bind, before its
    connection joins: another conversation's hello meanwhile (past the cap) evicted it, and
    the client, connected, was sent no live row of its session (each went ``unrouted``)."""
    entered, go = trio.Event(), trio.Event()
    original = rt.confirm_through

    async def paused(*args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():
            entered.set()
            await go.wait()
        return await original(*args, **kwargs)

    with trio.fail_after(30):
        async with serving_gateway(rt, gateway_class=_OneIdle) as (_, url):
            session_a, seq = await _visit(url, "alpha")
            monkeypatch.setattr(rt, "confirm_through", paused)
            async with trio.open_nursery() as nursery:
                async def back() -> None:
                    async with _connect(url, "alpha", after_seq=seq) as client:
                        note = await rt.notify(session_a, "live")
                        got = await _texts_until(client, "live")
                        assert [t for _, t in got] == ["live"]
                        assert await note.wait() == "delivered"

                nursery.start_soon(back)
                await entered.wait()
                await _visit(url, "beta")  # its hello is past the cap of 1
                go.set()
