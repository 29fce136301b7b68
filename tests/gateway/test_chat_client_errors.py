"""The terminal client (tidings chat without --local) when the server refuses a frame: the
refusal is printed as one ``!`` line and the chat goes on."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Callable

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


class Transcript(io.StringIO):
    """What the client printed, with a wait for a line to show up."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = trio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self.changed.set()
        self.changed = trio.Event()
        return written

    async def wait_for(self, found: Callable[[str], bool]) -> None:
        while not any(found(line) for line in self.getvalue().splitlines()):
            await self.changed.wait()


async def test_a_refused_message_is_printed_and_the_chat_goes_on(rt, serve_gateway) -> None:
    out, err = Transcript(), io.StringIO()
    async with serve_gateway(rt) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            gateway.accepting = False  # as while the server stops: messages are refused
            yield "two\n"
            await out.wait_for(lambda line: line.startswith("!"))
            gateway.accepting = True
            yield "three\n"
            await out.wait_for(lambda line: line == "three")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="refused",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "one", "! shutting_down: the server is stopping; send it again later", "three"]


async def test_a_refused_piped_line_does_not_hold_up_the_next_one(rt, serve_gateway) -> None:
    out, err = Transcript(), io.StringIO()
    async with serve_gateway(rt) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            gateway.accepting = False
            yield "two\n"
            await out.wait_for(lambda line: line.startswith("!"))
            gateway.accepting = True
            yield "three\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="refused",
                              interactive=False)
        with trio.fail_after(20):  # a refused line used to wait 30 s for an answer
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "one", "! shutting_down: the server is stopping; send it again later", "three"]
