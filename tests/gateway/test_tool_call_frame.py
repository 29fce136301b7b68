"""README, Lifecycle: a ``tool_call`` lifecycle frame carries the agent's call as
``{"name", "arguments", "call_id"}``, its arguments the agent's own values (a float JSON has no
number for as its string, a value of no JSON type as its text)."""

from __future__ import annotations

import datetime

import trio

from tidings.channels import ToolCall

WHEN = datetime.date(2026, 1, 2)


class _ToolAgent:
    async def run(self, turn) -> None:
        await turn.report_tool_call(ToolCall("search", {"q": "trio", "n": 3,
                                                        "score": float("inf"), "when": WHEN},
                                             call_id="call-1"))
        await turn.report_tool_call(ToolCall("noop"))
        await turn.send_chunk("done")


async def test_a_tool_call_frame_has_name_arguments_and_call_id(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt, agent=_ToolAgent()) as (_gateway, url), \
            connect(url, "tools") as client:
        message_id = await client.message("go")
        with trio.fail_after(20):
            frames = await client.receive_until(is_frame("lifecycle", event="completed"))
    calls = [frame for frame in frames if frame.get("event") == "tool_call"]
    assert calls == [
        {"type": "lifecycle", "event": "tool_call", "session_id": client.session_id,
         "message_id": message_id,
         "tool_call": {"name": "search", "call_id": "call-1",
                       "arguments": {"q": "trio", "n": 3, "score": "Infinity",
                                     "when": "2026-01-02"}}},
        {"type": "lifecycle", "event": "tool_call", "session_id": client.session_id,
         "message_id": message_id,
         "tool_call": {"name": "noop", "arguments": {}, "call_id": None}},
    ]
