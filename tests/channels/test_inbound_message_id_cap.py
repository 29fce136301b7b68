"""An inbound message's id is one the runtime takes: it is held with it (``hold_inbound``)
and its turn is opened with it, and both refuse an id over ``MAX_ID_CHARS``."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_ID_CHARS
from tidings.channels import ChannelConfig, Inbound
from tidings.errors import ValidationError

from .conftest import RecordingChannel, rows


def test_a_message_id_over_the_id_cap_is_refused_by_name() -> None:
    with pytest.raises(ValidationError) as info:
        Inbound(chat_id="c1", sender_id="u1", text="hi", message_id="m" * (MAX_ID_CHARS + 1))
    assert info.value.field == "message_id"
    with pytest.raises(ValidationError) as info:  # str()-ed as every id is
        Inbound(chat_id="c1", sender_id="u1", text="hi", message_id=10 ** MAX_ID_CHARS)
    assert info.value.field == "message_id"


async def test_a_message_id_at_the_cap_is_held_and_answered(rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig("ops"))
    message_id = "m" * MAX_ID_CHARS
    assert await channel.say("hi", message_id=message_id) == "started"
    # Held under its id while the turn runs (or already released: the turn answered it).
    await channel.wait_idle()
    await channel.wait_for(lambda: channel.messages())
    assert channel.types()[-1] == "completed"
    assert [event.message_id for event in channel.events] == [message_id] * len(channel.events)
    assert channel.messages() == ["hi"]
    assert rows(db_path, "SELECT COUNT(*) FROM inbound_messages") == [(0,)]
