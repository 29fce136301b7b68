"""Conversation keys: the one helper, its encoding, its errors and its inverse."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tidings.channels import ConversationKey, conversation_key, parse_conversation_key
from tidings.errors import ConversationKeyError, ValidationError

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
IDS = st.one_of(st.text(min_size=1, max_size=12), st.integers().map(str),
                st.sampled_from(["thread", "%74hread", ":", "%", "a:b", "thread:x"]))
THREADS = st.one_of(st.none(), st.text(min_size=1, max_size=12), st.just("thread"))
ENCODED_PART = re.compile(r"(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})+")


@pytest.mark.parametrize(("args", "thread", "key"), [
    (("telegram", "dm", "123"), None, "telegram:dm:123"),
    (("telegram", "dm", 123), None, "telegram:dm:123"),
    (("slack", "channel", "T1", "C1"), "123.4", "slack:channel:T1:C1:thread:123.4"),
    (("slack", "channel", "T1", "C1"), 123.4, "slack:channel:T1:C1:thread:123.4"),
    (("matrix", "room", "!room:example"), None, "matrix:room:%21room%3Aexample"),
    (("ops", "chat", "c1"), "", "ops:chat:c1"),
    (("ops", "chat", "c1"), 0, "ops:chat:c1:thread:0"),
    (("ops", "chat", "a b/c?d#e"), None, "ops:chat:a%20b%2Fc%3Fd%23e"),
    (("ops", "chat", "-._~"), None, "ops:chat:-._~"),
    (("ops", "chat", "é"), None, "ops:chat:%C3%A9"),
    (("ops", "chat", "thread", "x"), None, "ops:chat:%74hread:x"),
    (("ops", "chat", "x"), "thread", "ops:chat:x:thread:thread"),
])
def test_keys_are_built_as_documented(args: tuple[object, ...], thread: object,
                                      key: str) -> None:
    assert conversation_key(*args, thread=thread) == key  # type: ignore[arg-type]


@pytest.mark.parametrize(("args", "thread", "field"), [
    (("Slack", "dm", "1"), None, "channel"),
    (("1slack", "dm", "1"), None, "channel"),
    (("", "dm", "1"), None, "channel"),
    (("sl-ack", "dm", "1"), None, "channel"),
    (("slack\n", "dm", "1"), None, "channel"),
    ((5, "dm", "1"), None, "channel"),
    (("slack", "DM", "1"), None, "scope"),
    (("slack", "d m", "1"), None, "scope"),
    (("slack", "dm"), None, "ids"),
    (("slack", "dm", ""), None, "ids[0]"),
    (("slack", "dm", "a", ""), None, "ids[1]"),
    (("slack", "dm", "a", None), None, "ids[1]"),
    (("slack", "dm", b"a"), None, "ids[0]"),
    (("slack", "dm", "a", "b\ud800c"), None, "ids[1]"),
    (("slack", "dm", "a"), "\udfff", "thread"),
    (("slack", "dm", "a"), b"t", "thread"),
])
def test_bad_parts_raise_an_error_naming_the_part(args: tuple[object, ...], thread: object,
                                                  field: str) -> None:
    with pytest.raises(ConversationKeyError) as info:
        conversation_key(*args, thread=thread)  # type: ignore[arg-type]
    assert info.value.field == field
    assert isinstance(info.value, ValidationError)
    assert str(info.value).startswith(f"{field}: ")


def test_a_lone_surrogate_is_reported_as_invalid_unicode() -> None:
    with pytest.raises(ConversationKeyError, match=r"ids\[0\]: is not valid Unicode"):
        conversation_key("ops", "chat", "ok\ud83d")


@given(NAMES, NAMES, st.lists(IDS, min_size=1, max_size=4), THREADS)
def test_keys_round_trip_and_keep_their_structure(channel: str, scope: str, ids: list[str],
                                                  thread: str | None) -> None:
    key = conversation_key(channel, scope, *ids, thread=thread)
    parts = key.split(":")
    # No encoded part ever contains ":": the key has exactly one separator per part.
    assert len(parts) == 2 + len(ids) + (2 if thread else 0)
    assert parts[:2] == [channel, scope]
    for part in parts[2:]:
        assert ENCODED_PART.fullmatch(part)
    assert key.isascii()
    parsed = parse_conversation_key(key)
    assert parsed == ConversationKey(channel, scope, tuple(ids), thread or None)
    assert str(parsed) == key


@given(NAMES, st.lists(IDS, min_size=1, max_size=3), THREADS,
       st.lists(IDS, min_size=1, max_size=3), THREADS)
def test_distinct_inputs_give_distinct_keys(scope: str, ids_a: list[str], thread_a: str | None,
                                            ids_b: list[str], thread_b: str | None) -> None:
    assume((ids_a, thread_a or None) != (ids_b, thread_b or None))
    assert (conversation_key("ops", scope, *ids_a, thread=thread_a)
            != conversation_key("ops", scope, *ids_b, thread=thread_b))


def test_an_id_named_thread_does_not_collide_with_a_thread() -> None:
    as_ids = conversation_key("ops", "chat", "a", "thread", "b")
    as_thread = conversation_key("ops", "chat", "a", thread="b")
    assert as_ids != as_thread
    assert parse_conversation_key(as_ids).ids == ("a", "thread", "b")
    assert parse_conversation_key(as_thread) == ConversationKey("ops", "chat", ("a",), "b")


@pytest.mark.parametrize("odd", [
    "\u202eevil\u202c",        # right-to-left override
    "\u2066iso\u2069",         # isolate
    "a\x00b\x1b[31mc\x7f",      # NUL, ANSI escape, DEL
    "line\nbreak\r\n",
    "\u200bzero\ufeffwidth",
    "\U0001f469\u200d\U0001f4bb",  # emoji ZWJ sequence
    "\u0301",                   # a lone combining mark
])
def test_odd_unicode_is_encoded_not_rejected_and_round_trips(odd: str) -> None:
    key = conversation_key("ops", "chat", odd, thread=odd)
    assert key.isascii()
    assert key.isprintable()
    assert parse_conversation_key(key) == ConversationKey("ops", "chat", (odd,), odd)


@pytest.mark.parametrize("key", [
    "", "ops", "ops:chat", "ops:chat:", "Ops:chat:1", "ops:chat:a b", "ops:chat:%41",
    "ops:chat:%e2%82%ac", "ops:chat:%C3", "ops:chat:%ZZ", "ops:chat:thread",
    "ops:chat:thread:x", "ops:chat:x:thread:%74hread", "ops:chat:x:thread:", "ops:chat:a::b",
])
def test_parse_rejects_anything_the_builder_would_not_make(key: str) -> None:
    with pytest.raises(ConversationKeyError) as info:
        parse_conversation_key(key)
    assert info.value.field == "key"


def test_parse_rejects_a_non_string() -> None:
    with pytest.raises(ConversationKeyError, match="must be a string"):
        parse_conversation_key(b"ops:chat:1")  # type: ignore[arg-type]
