"""The wire protocol: client frames parsed into records or refused with a code and a field."""

from __future__ import annotations

import json
import math

import pytest

from tidings.actors import MediaBlock, Outbound, TextBlock
from tidings.channels._gateway_frames import (
    ERROR_CODES,
    Ack,
    Answer,
    Approval,
    FrameError,
    Hello,
    Message,
    Ping,
    Sync,
    delivery_frame,
    encode,
    error_frame,
    parse_client_frame,
    peek_hello_token,
)

LIMIT = 1024


def parse(frame: object) -> object:
    raw = frame if isinstance(frame, str | bytes) else json.dumps(frame)
    return parse_client_frame(raw, max_frame_bytes=LIMIT)


def refused(frame: object) -> FrameError:
    with pytest.raises(FrameError) as caught:
        parse(frame)
    assert caught.value.code in ERROR_CODES
    return caught.value


def test_each_client_frame_type_parses_into_its_record() -> None:
    assert parse({"type": "hello", "token": "t" * 8, "conversation": "alpha", "protocol": 1,
                  "after_seq": 3, "session_id": "s1", "client": "phone"}) == Hello(
        "t" * 8, "alpha", 1, 3, "s1", "phone")
    assert parse({"type": "message", "text": "/cancel", "id": "m1"}) == Message("/cancel", "m1")
    assert parse({"type": "ack", "delivery_ids": ["a", "b", "a"]}) == Ack(("a", "b"))
    assert parse({"type": "ack", "up_to_seq": 7, "session_id": "s"}) == Ack(None, 7, "s")
    assert parse({"type": "answer", "prompt_id": "p", "text": "yes"}) == Answer("p", "yes")
    assert parse({"type": "approval", "request_id": "r", "decision": "deny"}) == Approval(
        "r", "deny")
    assert parse({"type": "ping"}) == Ping()
    assert parse({"type": "sync"}) == Sync()
    assert parse({"type": "ping", "extra": "ignored"}) == Ping()  # newer clients may add fields


@pytest.mark.parametrize(("raw", "code"), [
    ("not json", "bad_json"),
    ("[1, 2]", "not_an_object"),
    ('{"type": "ping", "n": NaN}', "bad_json"),
    (b"\xff\xfe{}", "bad_utf8"),
    ("{}", "missing_field"),
    ('{"type": 3}', "bad_field"),
    ('{"type": "subscribe"}', "unknown_type"),
    ('{"type": "x' + "y" * LIMIT + '"}', "frame_too_big"),
    (b'{"type": "' + b"y" * LIMIT + b'"}', "frame_too_big"),
])
def test_malformed_frames_are_refused_with_a_code(raw: str | bytes, code: str) -> None:
    assert refused(raw).code == code


@pytest.mark.parametrize(("frame", "code", "field"), [
    ({"type": "message", "id": "m1"}, "missing_field", "text"),
    ({"type": "message", "text": "hi"}, "missing_field", "id"),
    ({"type": "message", "text": 5, "id": "m1"}, "bad_field", "text"),
    ({"type": "message", "text": "hi", "id": ""}, "bad_field", "id"),
    ({"type": "ack"}, "missing_field", "delivery_ids"),
    ({"type": "ack", "delivery_ids": ["a"], "up_to_seq": 1}, "missing_field", "delivery_ids"),
    ({"type": "ack", "delivery_ids": []}, "bad_field", "delivery_ids"),
    ({"type": "ack", "delivery_ids": [1]}, "bad_field", "delivery_ids"),
    ({"type": "ack", "up_to_seq": -1}, "bad_field", "up_to_seq"),
    ({"type": "ack", "up_to_seq": True}, "bad_field", "up_to_seq"),
    ({"type": "approval", "request_id": "r", "decision": "maybe"}, "bad_field", "decision"),
    ({"type": "answer", "text": "x"}, "missing_field", "prompt_id"),
    ({"type": "hello", "token": "t", "protocol": 1}, "missing_field", "conversation"),
    ({"type": "hello", "token": "t", "protocol": "1", "conversation": "a"}, "bad_field",
     "protocol"),
    ({"type": "hello", "token": "t", "protocol": 1, "conversation": "a\nb"}, "bad_field",
     "conversation"),
])
def test_a_refused_field_is_named(frame: dict, code: str, field: str) -> None:
    error = refused(frame)
    assert (error.code, error.field) == (code, field)
    assert field in error.reason


@pytest.mark.parametrize("name", ["a\u200db", "a\u00a0b", "a\u200bb", "x" * 201, ""])
def test_a_conversation_name_is_1_to_200_printable_characters(name: str) -> None:
    """As the README says (Opening): a zero-width joiner, a no-break space or a zero-width
    space is not printable, and a name over 200 characters or empty is refused too."""
    error = refused({"type": "hello", "token": "t", "protocol": 1, "conversation": name})
    assert (error.code, error.field) == ("bad_field", "conversation")


@pytest.mark.parametrize("name", ["x" * 200, "caf\u00e9 \u65e5\u672c", "ops room", "a/b:c%41"])
def test_a_printable_conversation_name_of_200_characters_or_fewer_is_taken(name: str) -> None:
    hello = parse({"type": "hello", "token": "t", "protocol": 1, "conversation": name})
    assert isinstance(hello, Hello)
    assert hello.conversation == name


def test_an_error_carries_the_frames_id_so_the_client_can_match_it() -> None:
    assert refused({"type": "message", "id": "m9", "text": None}).frame_id == "m9"


def test_the_token_is_read_before_any_other_field() -> None:
    assert peek_hello_token('{"type": "hello", "token": "abc"}', max_frame_bytes=LIMIT) == "abc"
    assert peek_hello_token('{"type": "message", "token": "abc"}', max_frame_bytes=LIMIT) is None
    assert peek_hello_token("nope", max_frame_bytes=LIMIT) is None


def test_server_frames_encode_deliveries_and_errors() -> None:
    outbound = Outbound(session_id="s1", delivery_id="d1", kind="notice",
                        blocks=(TextBlock("hi"),), text="hi", seq=4,
                        metadata={"command": "help"})
    assert delivery_frame(outbound) == {
        "type": "delivery", "session_id": "s1", "seq": 4, "delivery_id": "d1",
        "kind": "notice", "text": "hi", "blocks": [{"type": "text", "text": "hi"}],
        "command": "help"}
    image = MediaBlock(type="image", location="/srv/secret/a.png", source_kind="path",
                       name="a.png", fallback="a.png")
    frame = delivery_frame(Outbound(session_id="s1", delivery_id="d2", kind="message",
                                    blocks=(image,), text="a.png", seq=5))
    assert "location" not in frame["blocks"][0]  # a server path means nothing to a client
    assert json.loads(encode(error_frame("bad_json", "no", field="f", ref="m1"))) == {
        "type": "error", "code": "bad_json", "message": "no", "field": "f", "ref": "m1"}


@pytest.mark.parametrize(("frame", "field"), [
    ({"type": "sync", "session_id": "\ud800"}, "session_id"),
    ({"type": "ack", "delivery_ids": ["\udc80"]}, "delivery_ids"),
    ({"type": "answer", "prompt_id": "p\ud800", "text": "x"}, "prompt_id"),
    ({"type": "hello", "token": "t", "protocol": 1, "conversation": "a", "client": "\ud800"},
     "client"),
])
def test_a_lone_surrogate_is_a_bad_field_and_never_the_errors_ref(frame: dict,
                                                                  field: str) -> None:
    error = refused({**frame, "id": "\ud800"})
    assert (error.code, error.field) == ("bad_field", field)
    assert error.frame_id is None  # an error frame carrying it could not be sent


@pytest.mark.parametrize("frame", [
    {"type": "subscribe", "id": "m7"},  # a newer client's frame type
    {"id": "m7"},
    {"type": 3, "id": "m7"},
])
def test_a_frame_refused_for_its_type_still_carries_its_id(frame: dict) -> None:
    assert refused(frame).frame_id == "m7"


def _no_constant(name: str) -> object:
    raise AssertionError(f"{name} is no JSON (a browser's JSON.parse refuses the frame)")


def test_a_float_json_has_no_number_for_is_sent_as_its_string() -> None:
    """A tool call's arguments are the agent's own values: NaN or an infinity went out as
    the bare ``NaN`` / ``Infinity`` tokens, which are no JSON."""
    frame = {"type": "lifecycle", "event": "tool_call",
             "tool_call": {"name": "t", "arguments": {"x": float("nan"),
                                                      "y": [float("inf"), -math.inf, 1.5],
                                                      "z": ("\ud800", float("nan"))}}}
    text = encode(frame)
    assert json.loads(text, parse_constant=_no_constant)["tool_call"]["arguments"] == {
        "x": "NaN", "y": ["Infinity", "-Infinity", 1.5], "z": ["\ud800", "NaN"]}
    assert text.isascii()  # the lone surrogate escaped, as before
    assert encode({"type": "event", "n": 1.5}) == '{"type":"event","n":1.5}'  # unchanged
