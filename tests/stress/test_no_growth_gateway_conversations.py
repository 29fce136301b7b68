"""A gateway that served many conversations whose clients left keeps at most
``idle_conversations`` of them bound.

``tidings serve`` kept, per conversation it ever served, the directory's entries, the router's
binding of its current session and ``session_keys``' entry (about 1.5 kB) until a restart: a
server whose users each came once grew by that much per user. Past the cap, conversations
with no client connected and nothing in hand are evicted, as any channel's are; a client that
comes back reads its session from the store again (see tests/gateway/test_idle_eviction.py).
"""

from __future__ import annotations

import trio

from tidings.actors._router import Binding
from tidings.channels import ChannelBase, GatewayChannel, GatewayClient, GatewayConfig
from tidings.channels._directory import Conversation

from .live_records import grown, live_records

TOKEN = "no-growth-gateway-conversations"
CAP = 4


class _FewIdle(GatewayChannel):
    idle_conversations = CAP


def test_the_gateway_evicts_idle_conversations_by_default() -> None:
    assert GatewayChannel.idle_conversations == ChannelBase.idle_conversations


async def _visit(url: str, name: str) -> None:
    """One user's visit: a message answered (acked), then the client leaves."""
    async with GatewayClient.connect(url, token=TOKEN, conversation=name) as client:
        await client.message("hi")
        await client.receive_until(  # (each delivery acked as it comes)
            lambda frame: frame["type"] == "delivery" and frame["kind"] == "message")


async def test_a_gateway_keeps_no_conversation_its_clients_left_past_its_cap(rt) -> None:
    gateway = _FewIdle(rt, GatewayConfig(token=TOKEN, port=0, rate=10_000.0, burst=10_000))
    kinds = (Binding, Conversation)

    async def serve(first: int, last: int) -> object:
        for n in range(first, last):
            await _visit(url, f"user-{n}")
        return live_records(kinds)

    try:
        with trio.fail_after(120):  # a hang guard, not a wait
            async with gateway.serving() as port:
                url = f"ws://127.0.0.1:{port}"
                after_few = await serve(0, 8)
                after_many = await serve(8, 40)
                # The last visit's conversation may still be settling (its reply's ack):
                # one more visit gives every earlier one time to go idle.
                await _visit(url, "user-last")
                assert len(rt.router) <= CAP + 1, len(rt.router)
                assert len(gateway.directory.sessions()) <= CAP + 1
                assert len(gateway.session_keys) <= CAP + 1, len(gateway.session_keys)
                assert not gateway.hubs or len(gateway.hubs) <= 1
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert grown(after_few, after_many) == {}, (after_few, after_many)
