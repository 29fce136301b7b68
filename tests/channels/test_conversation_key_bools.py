"""A conversation key's ids are text or numbers (``str()``-ed); a bool is neither, but was
``str()``-ed as ``"True"`` / ``"False"``: an adapter that passed a flag by mistake
(``conversation_key("tg", "dm", msg.is_private)``) put every such conversation under one key,
so into one session, each chat reading the others' history. It is refused naming the part, as
``Inbound`` refuses a bool id and as ``None`` is refused."""

from __future__ import annotations

import pytest

from tidings.channels import conversation_key
from tidings.errors import ConversationKeyError


@pytest.mark.parametrize(("ids", "thread", "field"), [
    ((True,), None, "ids[0]"),
    (("c1", False), None, "ids[1]"),
    (("c1",), True, "thread"),
    (("c1",), False, "thread"),
])
def test_a_bool_id_or_thread_is_refused_naming_the_part(ids, thread, field) -> None:
    with pytest.raises(ConversationKeyError) as info:
        conversation_key("tg", "dm", *ids, thread=thread)
    assert info.value.field == field


def test_numbers_are_still_ids() -> None:
    assert conversation_key("tg", "dm", 0, -100123, thread=0) == "tg:dm:0:-100123:thread:0"
