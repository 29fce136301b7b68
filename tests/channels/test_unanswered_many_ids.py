"""The "not answered" notice of a merged turn lists every merged message's id in its
metadata (``message_ids``), and ``notify`` refuses metadata over ``MAX_JSON_BYTES`` (64 KiB).
A ``collect`` turn merging some 330 messages with 200-character ids (the gateway's limit)
that the runtime's stop dropped could not be told: the notice failed, the messages stayed
held, and the next start told each one separately. The notice now always fits."""

from __future__ import annotations

import json

import tidings
from tidings.actors import MAX_ID_CHARS, MAX_IDS_PER_CALL, MAX_JSON_BYTES
from tidings.actors._held import unanswered_metadata
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._dispatch import PendingTurn

from .conftest import GatedAgent, RecordingChannel, rows

ID_CHARS = 200
COUNT = MAX_JSON_BYTES // ID_CHARS + 10  # their ids alone are over the cap


async def test_a_dropped_merged_turn_of_many_long_ids_is_told_at_once(db_path,
                                                                      workspace) -> None:
    agent = GatedAgent()
    ids = [f"{n:04d}".ljust(ID_CHARS, "x") for n in range(COUNT)]
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="collect"),
                                   agent=agent)
        assert await channel.say("first", message_id="m0") == "started"
        await agent.wait_turns(1)
        for n, message_id in enumerate(ids):
            await channel.say(f"n{n}", message_id=message_id)
    # The stop cut the first turn (it stays held, as a cut turn does) and dropped the merged
    # one: its notice was written as the worker ended, releasing its messages.
    held = [message_id for (message_id,) in rows(db_path, "SELECT message_id FROM "
                                                          "inbound_messages")]
    assert held == ["m0"]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 1


def test_a_waiting_turn_takes_ids_up_to_what_its_notice_metadata_holds() -> None:
    def inbound(n: int, chars: int) -> Inbound:
        return Inbound(chat_id="c1", sender_id="u1", text="t",
                       message_id=f"{n:05d}".ljust(chars, "\u00e9"))  # escaped: 6 bytes each

    for chars in (8, 200, MAX_ID_CHARS):
        pending = PendingTurn([inbound(0, chars)], ["h0"])
        n = 1
        while pending.can_take(inbound(n, chars), [f"h{n}"]):
            pending.take(inbound(n, chars), [f"h{n}"])
            n += 1
        ids = [i.message_id for i in pending.inbounds]
        size = len(json.dumps(unanswered_metadata(ids)))
        assert size <= MAX_JSON_BYTES
        more = len(json.dumps(unanswered_metadata([*ids, inbound(n, chars).message_id])))
        assert more > MAX_JSON_BYTES or n >= MAX_IDS_PER_CALL
