"""The terminal client (tidings chat without --local) driven by piped lines."""

from __future__ import annotations

import io

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Asker


async def _lines(*lines: str):
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"


async def test_a_piped_chat_is_a_deterministic_transcript(rt, serve_gateway) -> None:
    async with serve_gateway(rt, agent=Asker()) as (_gateway, url):
        out, err = io.StringIO(), io.StringIO()
        options = ChatOptions(url=url, token="gateway-test-token", conversation="pipe",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(
                options, _lines("first line", "tool: x", "/cancel", "ask:your name?", "Ada"),
                out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "first line", "tool: x", "* Nothing to cancel.", "? your name?", "answer: Ada"]


async def test_a_bad_token_ends_the_chat_with_the_reason(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        err = io.StringIO()
        options = ChatOptions(url=url, token="wrong-token-value", conversation="pipe",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, _lines("hi"), out=io.StringIO(),
                                             err=err)
    assert code == 1
    assert "unauthorized: bad token" in err.getvalue()


def test_chat_web_prints_the_path_of_the_browser_client(capsys) -> None:
    import argparse
    import pathlib

    from tidings.supervisor import _chat_ws

    assert _chat_ws.run(argparse.Namespace(web=True)) == 0
    page = pathlib.Path(capsys.readouterr().out.strip())
    assert page.name == "chat.html"
    assert 'type: "hello"' in page.read_text()

