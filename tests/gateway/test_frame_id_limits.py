"""README, Opening and Messages: a hello's ``client`` is 1 to 100 characters, and a message's
``id`` is required and 1 to 200 characters; outside that the frame is refused naming the
field. Pinned at both edges, so a changed limit changes the README too."""

from __future__ import annotations

import json

import pytest

from tidings.channels._gateway_frames import FrameError, Hello, Message, parse_client_frame


def _parse(frame: dict) -> object:
    return parse_client_frame(json.dumps(frame), max_frame_bytes=65536)


def _hello(client: str) -> dict:
    return {"type": "hello", "token": "t", "protocol": 1, "conversation": "c",
            "client": client}


@pytest.mark.parametrize(("frame", "code", "field"), [
    ({"type": "message", "text": "x"}, "missing_field", "id"),
    ({"type": "message", "text": "x", "id": ""}, "bad_field", "id"),
    ({"type": "message", "text": "x", "id": "m" * 201}, "bad_field", "id"),
    (_hello(""), "bad_field", "client"),
    (_hello("c" * 101), "bad_field", "client"),
])
def test_ids_outside_the_documented_lengths_are_refused_by_name(frame, code, field) -> None:
    with pytest.raises(FrameError) as refused:
        _parse(frame)
    assert (refused.value.code, refused.value.field) == (code, field)


def test_ids_at_the_documented_lengths_are_taken() -> None:
    message = _parse({"type": "message", "text": "x", "id": "m" * 200})
    assert isinstance(message, Message)
    assert message.id == "m" * 200
    hello = _parse(_hello("c" * 100))
    assert isinstance(hello, Hello)
    assert hello.client == "c" * 100
