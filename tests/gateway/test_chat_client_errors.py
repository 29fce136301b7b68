"""The terminal client (tidings chat without --local) when the server refuses a frame: the
refusal is printed as one ``!`` line and the chat goes on."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import trio

from tidings.errors import ValidationError
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Asker, Transcript


def _refusing(gateway, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The gateway refuses the message 'two' (``bad_field``, with its ``ref``): a refusal that
    stands. (``shutting_down`` is not one: the chat sends that message again once it has
    reconnected, see test_chat_client_resend.)"""
    handle = gateway.handle_inbound

    async def handle_inbound(inbound):  # type: ignore[no-untyped-def]
        if inbound.text == "two":
            raise ValidationError("text", "refused by the test")
        return await handle(inbound)

    monkeypatch.setattr(gateway, "handle_inbound", handle_inbound)


async def test_a_refused_message_is_printed_and_the_chat_goes_on(rt, serve_gateway,
                                                                monkeypatch) -> None:
    out, err = Transcript(), io.StringIO()
    async with serve_gateway(rt) as (gateway, url):
        _refusing(gateway, monkeypatch)

        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            yield "two\n"
            await out.wait_for(lambda line: line.startswith("!"))
            yield "three\n"
            await out.wait_for(lambda line: line == "three")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="refused",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "one", "! bad_field: message.text: refused by the test", "three"]


async def test_a_refused_piped_line_does_not_hold_up_the_next_one(rt, serve_gateway,
                                                                 monkeypatch) -> None:
    out, err = Transcript(), io.StringIO()
    async with serve_gateway(rt) as (gateway, url):
        _refusing(gateway, monkeypatch)

        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            yield "two\n"
            await out.wait_for(lambda line: line.startswith("!"))
            yield "three\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="refused",
                              interactive=False)
        with trio.fail_after(20):  # a refused line used to wait 30 s for an answer
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "one", "! bad_field: message.text: refused by the test", "three"]


TOO_LONG = "! not sent: the line is over 256 bytes as a frame (the server's max_frame_bytes)"
"""How a line over ``max_frame_bytes`` 256 is refused, typed or piped (a piped one adds
``; the rest of it is skipped``); ``--local`` says ``! not sent: the line is over 1048576
bytes (MAX_TEXT_BYTES); ...``. It was worded twice, ``! frame_too_big: the line is N bytes
as a frame, over ...; not sent`` and ``... over N bytes, the server's ...; ..., not sent``."""


async def test_a_line_over_the_servers_frame_limit_is_refused_and_the_chat_goes_on(
        rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, max_frame_bytes=256) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="long",
                              interactive=False)
        with trio.fail_after(20):  # over the limit: refused, never a 30 s wait
            code = await chat_over_websocket(  # nor a dropped connection (over 4x: 1009)
                options, _lines("one", "x" * 300, "é" * 5000, "two"), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "reconnecting" not in err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "one"
    # One wording, as a piped line's (test_chat_client_long_input.py) and --local's
    assert lines[1:3] == [TOO_LONG, TOO_LONG]
    assert lines[3:] == ["two"]


async def test_an_answer_over_the_frame_limit_leaves_the_question_open(
        rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=Asker(), max_frame_bytes=256) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="long",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, _lines("ask:name?", "x" * 300, "Ada"),
                                             out=out, err=err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "? name?"
    assert lines[1] == TOO_LONG
    assert lines[2:] == ["answer: Ada"]


async def test_an_answer_that_is_not_valid_unicode_leaves_the_question_open(
        rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=Asker()) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="utf8",
                              interactive=False)
        with trio.fail_after(20):  # \udcff: the byte 0xff of a pipe read with surrogateescape
            code = await chat_over_websocket(options, _lines("ask:name?", "caf\udcff", "Ada"),
                                             out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "? name?", "! not sent: the line is not valid UTF-8 (at index 3)", "answer: Ada"]


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"
