"""A merged turn answers at most ``MAX_IDS_PER_CALL`` held messages.

``open_turn(inbound_ids=...)`` (and ``notify(settles=...)``) refuse more than
:data:`~tidings.actors.MAX_IDS_PER_CALL` ids: a ``collect`` (or ``steer``) channel that merged
more messages than that into one waiting turn saw the turn fail, its messages left held (told
"not answered" after a restart). The merge now stops at the cap; later messages wait in the
next turn, in order. The cap is patched down (both where the runtime checks it and where the
channel merges) so the test stays fast: 10,001 durable holds would take long.
"""

from __future__ import annotations

import pytest

import tidings
from tidings.actors import MAX_IDS_PER_CALL, _turns
from tidings.channels import ChannelConfig, _dispatch

from .conftest import GatedAgent, RecordingChannel, rows

CAP = 3


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_turns, "MAX_IDS_PER_CALL", CAP)
    monkeypatch.setattr(_dispatch, "MAX_IDS_PER_CALL", CAP, raising=False)


async def test_a_collect_merge_over_the_cap_runs_as_several_turns_in_order(
        db_path, workspace, small_cap) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="collect"),
                                   agent=agent)
        assert await channel.say("first", message_id="m0") == "started"
        await agent.wait_turns(1)
        outcomes = [await channel.say(f"n{n}", message_id=f"m{n}") for n in range(1, 8)]
        agent.block = False  # the first turn ends, the rest run straight through
        agent.release()
        await channel.wait_idle()
        assert [e.type for e in channel.events if e.terminal] == ["completed"] * 4
        texts = [turn.text for turn in agent.turns]
        assert texts[1:] == ["n1\n\nn2\n\nn3", "n4\n\nn5\n\nn6", "n7"]
        assert [turn.message_id for turn in agent.turns[1:]] == ["m3", "m6", "m7"]
        assert outcomes == ["queued", "merged", "merged", "queued", "merged", "merged",
                            "queued"]
        assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 0


@pytest.mark.slow
async def test_a_collect_burst_over_the_real_cap_runs_as_two_turns(db_path, workspace) -> None:
    """The long form, at the real MAX_IDS_PER_CALL (messages without ids: theirs would reach
    the notice's metadata cap first)."""
    agent = GatedAgent()
    count = MAX_IDS_PER_CALL + 1
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="collect"),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        for n in range(count):
            await channel.say(f"n{n}")
        agent.block = False
        agent.release()
        await channel.wait_idle()
        assert [e.type for e in channel.events if e.terminal] == ["completed"] * 3
        assert [len(turn.text.split("\n\n")) for turn in agent.turns[1:]] == [
            MAX_IDS_PER_CALL, 1]
        assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
