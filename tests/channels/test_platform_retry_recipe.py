"""README (Channels, "Platform retries"): ``handle_inbound`` does not recognise a message id
it has seen, so an adapter whose platform redelivers a webhook looks the id up first and
records it once accepted, with the runtime's public calls. This runs that recipe as written."""

from __future__ import annotations

import trio

from tidings.channels import ChannelConfig, Inbound
from tidings.testing import MemoryChannel


async def _accept_once(rt, channel, inbound) -> str:  # the README's accept_once, as written
    key, name = channel.conversation_for(inbound).key, channel.config.name
    if await rt.client_message_outcome(name, key, inbound.message_id) is not None:
        return "duplicate"                     # seen before, also before a restart
    outcome = await channel.handle_inbound(inbound)
    await rt.remember_client_message(name, key, inbound.message_id, session_id=None,
                                     outcome=outcome)
    return outcome


async def test_a_redelivered_webhook_runs_once_with_the_recipe(rt) -> None:
    channel = MemoryChannel(rt, ChannelConfig(name="hooks", dispatch_mode="followup"))
    retried = Inbound(chat_id="c1", sender_id="u1", text="hello", message_id="evt-1")
    assert await _accept_once(rt, channel, retried) == "started"
    assert await _accept_once(rt, channel, retried) == "duplicate"
    with trio.fail_after(10):
        await channel.wait_idle()
    assert len([e for e in channel.events if e.type == "started"]) == 1  # one turn
    # Without the recipe the same delivery is a second turn (what the README warns of).
    plain = Inbound(chat_id="c1", sender_id="u1", text="hello", message_id="evt-2")
    assert [await channel.handle_inbound(plain) for _ in range(2)] == ["started", "queued"]
    with trio.fail_after(10):
        await channel.wait_idle()
    assert len([e for e in channel.events if e.type == "started"]) == 3
