"""A lone string where a list goes is refused by name, as ``confirm``, ``requeue`` and
``release_inbound`` refuse it: ``record_user_messages(sid, "hello")`` recorded one history
message per character, and ``abandon_unacked(sid, keep="dl_...")`` read the one id to keep as
its characters, kept none of the session's unacked rows and made every one ``unknown``."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError


async def test_record_user_messages_refuses_a_lone_string_and_writes_nothing(rt) -> None:
    sid = await rt.create_session("cli")
    with pytest.raises(ValidationError, match="not the string") as info:
        await rt.record_user_messages(sid, "hello")
    assert info.value.field == "texts"
    assert await rt.history(sid) == []


async def test_abandon_unacked_refuses_a_lone_string_to_keep(rt) -> None:
    sid = await rt.create_session("cli")
    with pytest.raises(ValidationError, match="not the string") as info:
        await rt.abandon_unacked(sid, keep="dl_0123")
    assert info.value.field == "keep"
