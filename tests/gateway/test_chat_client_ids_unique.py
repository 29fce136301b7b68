"""Message ids of ``tidings chat --url`` (``GatewayClient.new_id``) are unique across
connections. The gateway remembers every client message id of a conversation for good (a
resend after a restart is a duplicate); each connection's ids were 8 hex digits of a uuid4 and
a count from 1, so two connections whose 32 random bits met (a birthday chance: about one in
a hundred over 10,000 connections of a conversation, each chat and each reconnect one) sent
``<same>-1``: the second chat's message was answered ``duplicate`` and never run, silently."""

from __future__ import annotations

import io
import itertools
import uuid
from collections.abc import AsyncIterator

import pytest
import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"


async def test_two_chats_whose_random_ids_share_32_bits_both_get_answers(
        rt, serve_gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    count = itertools.count(1)
    # uuid4s that meet in their first 32 bits (and differ in the 90 random bits after)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=(0x1234ABCD << 96) | next(count)))
    async with serve_gateway(rt) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="ids",
                              interactive=False)
        printed = []
        for text in ("first chat", "second chat"):
            out, err = io.StringIO(), io.StringIO()
            with trio.fail_after(30):
                code = await chat_over_websocket(options, _lines(text), out=out, err=err)
            assert code == 0, err.getvalue()
            printed.append(out.getvalue().splitlines())
    assert printed == [["first chat"], ["second chat"]]
