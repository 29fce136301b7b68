"""Test doubles for the channel layer: a turn that records what an agent does with it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pytest
import trio

from tidings.channels import ToolCall


@attrs.define
class FakeTurn:
    """An :class:`~tidings.channels.AgentTurn` that records chunks and tool calls.

    ``chunk_seen`` is set on every chunk (tests wait on it instead of sleeping); ``on_chunk``
    may react to a chunk (e.g. cancel a scope once the child says it is ready).
    """

    prompt: str
    text: str = ""
    session_id: str = "s1"
    message_id: str | None = "m1"
    output: Any = None
    chunks: list[str] = attrs.Factory(list)
    tool_calls: list[ToolCall] = attrs.Factory(list)
    events: list[tuple[str, object]] = attrs.Factory(list)
    on_chunk: Callable[[str], None] | None = None
    chunk_seen: trio.Event = attrs.Factory(trio.Event)

    @property
    def reply(self) -> str:
        return "".join(self.chunks)

    async def send_chunk(self, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.chunks.append(text)
        self.events.append(("chunk", text))
        self.chunk_seen.set()
        if self.on_chunk is not None:
            self.on_chunk(text)

    async def report_tool_call(self, call: ToolCall) -> None:
        await trio.lowlevel.checkpoint()
        self.tool_calls.append(call)
        self.events.append(("tool_call", call))

    async def prompt_user(self, text: str, *,
                          timeout: float | None = None) -> str | None:  # noqa: ASYNC109
        await trio.lowlevel.checkpoint()
        return None

    async def request_approval(self, action: str, *, details: Mapping[str, Any] | None = None,
                               timeout: float | None = None) -> Any:  # noqa: ASYNC109
        await trio.lowlevel.checkpoint()
        return None


@pytest.fixture
def fake_turn() -> Callable[..., FakeTurn]:
    """``fake_turn(prompt, text=..., ...)`` builds a :class:`FakeTurn`."""
    return FakeTurn
