"""The largest send the output SDK takes fits a gateway delivery frame.

``MAX_SEND_BYTES`` caps what a send stores beyond its text (its blocks', metadata's and
artifacts' metadata's JSON); ``MAX_TEXT_BYTES`` its text. Before the cap a send could be
accepted, written and never delivered: a frame over ``MAX_SERVER_FRAME_BYTES`` is failed by the
gateway (``frame_too_big``). A send at both caps, with the most a frame carries of it (a text
block and a URL image the gateway renders, a ``command`` in its metadata), reaches a client.
"""

from __future__ import annotations

import json

import pytest
import trio

from tidings.actors import MAX_JSON_BYTES, MAX_SEND_BYTES, MAX_TEXT_BYTES, MediaBlock
from tidings.channels._gateway_frames import MAX_SERVER_FRAME_BYTES, encode, encoded_size
from tidings.errors import ValidationError

from .conftest import frame_is

_URL = "https://example.com/x.png?q="
_SUMMARY = "s" * 900_000


def _blocks(url: str) -> list:
    # The joined text (the text block, a newline, the caption) is MAX_TEXT_BYTES.
    return ["a" * (MAX_TEXT_BYTES - 2),
            {"type": "image", "source": url, "caption": "c", "summary": _SUMMARY}]


async def test_the_largest_send_allowed_reaches_a_gateway_client(
        rt, serve_gateway, connect) -> None:
    metadata = {"command": "k" * (MAX_JSON_BYTES - 20)}  # the frame carries it too
    probe = MediaBlock(type="image", location=_URL, source_kind="url", name="x.png",
                       fallback="c", caption="c", summary=_SUMMARY,
                       artifact_id="art_" + "0" * 28)  # new_id("art") is as long
    stored = len(json.dumps([{"type": "text", "text": _blocks(_URL)[0]}, probe.as_dict()]))
    stored += len(json.dumps(metadata)) + len("{}")  # and the image's artifact metadata
    url = _URL + "q" * (MAX_SEND_BYTES - stored)
    async with serve_gateway(rt) as (_, server):
        with trio.fail_after(30):
            async with connect(server, "alpha") as client:
                async with rt.open_turn(client.session_id, history_policy="transient") as ctx:
                    with pytest.raises(ValidationError) as caught:  # one byte more
                        await ctx.output.send(_blocks(url + "q"), delivery_metadata=metadata)
                    assert caught.value.field == "blocks"
                    assert f"{MAX_SEND_BYTES + 1} bytes" in str(caught.value)
                    handle = await ctx.output.send(_blocks(url), delivery_metadata=metadata)
                [frame] = await client.receive_until(
                    frame_is("delivery", delivery_id=handle.delivery_id))
    assert (await rt.delivery_status(handle.delivery_id)).status == "sent"
    assert frame["text"] == "a" * (MAX_TEXT_BYTES - 2) + "\nc"
    assert frame["command"] == metadata["command"]
    assert [b["type"] for b in frame["blocks"]] == ["text", "image"]
    assert frame["blocks"][1]["location"] == url
    assert 3 << 20 < encoded_size(encode(frame)) <= MAX_SERVER_FRAME_BYTES
