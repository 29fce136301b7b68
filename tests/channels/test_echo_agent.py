"""EchoAgent: streams exactly its prompt, reports a tool call for ``tool:``, can be cancelled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidings.channels import Agent, EchoAgent, ToolCall
from tidings.errors import ValidationError


async def test_the_reply_is_exactly_the_prompt_in_chunks(fake_turn: Callable[..., Any]) -> None:
    prompt = "Be brief.\n\nChannel identity:\n- id: channel:ops\n\nhello there"
    turn = fake_turn(prompt, text="hello there")
    await EchoAgent(chunk_size=8).run(turn)
    assert turn.reply == prompt
    assert [len(chunk) for chunk in turn.chunks[:-1]] == [8] * (len(turn.chunks) - 1)
    assert len(turn.chunks) == -(-len(prompt) // 8)
    assert turn.tool_calls == []


async def test_default_chunks_are_sixteen_characters(fake_turn: Callable[..., Any]) -> None:
    turn = fake_turn("x" * 40, text="x")
    await EchoAgent().run(turn)
    assert turn.chunks == ["x" * 16, "x" * 16, "x" * 8]


async def test_an_empty_prompt_gives_no_chunks(fake_turn: Callable[..., Any]) -> None:
    turn = fake_turn("", text="")
    await EchoAgent().run(turn)
    assert turn.chunks == []


@pytest.mark.parametrize(("text", "argument"), [
    ("tool: look this up", "look this up"), ("  tool:x", "x"), ("tool:", ""),
])
async def test_tool_input_reports_a_tool_call_before_streaming(
        fake_turn: Callable[..., Any], text: str, argument: str) -> None:
    turn = fake_turn("Be brief.\n\n" + text, text=text)
    await EchoAgent().run(turn)
    assert turn.events[0] == ("tool_call", ToolCall(name="echo_tool",
                                                    arguments={"input": argument},
                                                    call_id="echo_tool-1"))
    assert [kind for kind, _ in turn.events[1:]] == ["chunk"] * (len(turn.events) - 1)
    assert turn.reply == "Be brief.\n\n" + text


@pytest.mark.parametrize("text", ["tools: x", "Tool: x", "say tool: x", "Be brief. tool: x"])
async def test_other_text_reports_no_tool_call(fake_turn: Callable[..., Any], text: str) -> None:
    turn = fake_turn("tool: only in the prompt\n\n" + text, text=text)
    await EchoAgent().run(turn)
    assert turn.tool_calls == []


async def test_it_can_be_cancelled_between_chunks(fake_turn: Callable[..., Any]) -> None:
    with trio.CancelScope() as scope:
        turn = fake_turn("a" * 64, text="a", on_chunk=lambda chunk: scope.cancel())
        await EchoAgent(chunk_size=4).run(turn)
    assert scope.cancelled_caught
    assert turn.chunks == ["aaaa"]


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "16"])
def test_chunk_size_must_be_a_positive_int(size: object) -> None:
    with pytest.raises(ValidationError) as info:
        EchoAgent(chunk_size=size)  # type: ignore[arg-type]
    assert info.value.field == "chunk_size"


def test_it_is_an_agent() -> None:
    assert isinstance(EchoAgent(), Agent)
    assert repr(EchoAgent(3)) == "EchoAgent(chunk_size=3)"


# The fixture only hands out the FakeTurn class, so sharing it across examples is safe.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(), st.integers(min_value=1, max_value=40))
def test_joined_chunks_always_equal_the_prompt(fake_turn: Callable[..., Any], prompt: str,
                                               size: int) -> None:
    turn = fake_turn(prompt, text=prompt)
    trio.run(EchoAgent(chunk_size=size).run, turn)
    assert turn.reply == prompt
    assert all(0 < len(chunk) <= size for chunk in turn.chunks)
