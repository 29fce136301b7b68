"""``/cancel`` of a channel turn that waits behind a host's serial turn (``rt.open_turn``
held by the host, a message of the channel's conversation queued behind it).

The rule, "the oldest request not yet over", covers it: that turn is the running request (it
has not begun), so ``/cancel`` answers that it cancelled it, its agent never runs, and its
message goes into history as for any turn cancelled while it opens. It ends once the host's
turn does: the session's serial turns never overlap, and the message is written in its turn,
after what the host's turn wrote.
"""

from __future__ import annotations

import pytest
import trio

from tidings.channels import ChannelConfig

from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, rows


@pytest.mark.parametrize("mode", ["steer", "followup", "collect"])
async def test_cancel_reaches_a_turn_waiting_behind_a_host_s_serial_turn(
        rt, db_path, autojump_clock, mode) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent(block=False)
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode=mode),
                                   agent=agent)
        await channel.say("first")
        await channel.wait_idle()
        [session_id] = {turn.session_id for turn in agent.turns}
        async with rt.open_turn(session_id) as host:
            await host.output.send_text("host job done")
            assert await channel.say("second") == "started"
            await trio.testing.wait_all_tasks_blocked()
            await channel.say("/cancel")
            await channel.wait_for(lambda: "Cancelled the running request." in
                                   channel.texts())
        await channel.wait_idle()
        assert [turn.text for turn in agent.turns] == ["first"]  # "second" never ran
        assert [event.reason for event in channel.events
                if event.type == "cancelled"] == ["cancel_command"]
        history = [(m.role, m.text) for m in await rt.history(session_id)]
        assert history == [("user", "first"), ("assistant", "working"),
                           ("assistant", "host job done"), ("user", "second")]
        assert rows(db_path, "SELECT status, reason FROM turns ORDER BY started_at") == [
            ("completed", None), ("completed", None), ("cancelled", "cancel_command")]
