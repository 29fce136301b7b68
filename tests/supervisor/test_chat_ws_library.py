"""``tidings chat --url``'s ``run()`` called as a library function: from a thread other than
the main one (a host that runs the CLI in a worker thread) it chats, without the SIGINT
listener only the main thread may open; and called twice it leaves SIGINT's handler as it
found it. Before, from a worker thread it ended in RuntimeError ("open_signal_receiver is only
possible when running in Python interpreter's main thread") before connecting."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

import pytest

from tidings.supervisor import _chat_ws


def _args() -> argparse.Namespace:
    return argparse.Namespace(web=False, url="ws://127.0.0.1:8765", token="chat-test-token",
                              token_file=None, conversation="library", chunks=False)


@pytest.fixture
def chats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The chat itself replaced by one that records its conversation and returns 7."""
    seen: list[str] = []

    async def chat(options: Any, lines: Any, *, out: Any, err: Any, line_limit: Any) -> int:
        seen.append(options.conversation)
        return 7

    monkeypatch.setattr(_chat_ws, "chat_over_websocket", chat)
    return seen


def test_run_from_a_worker_thread_chats(chats: list[str]) -> None:
    results: list[object] = []

    def call() -> None:
        try:
            results.append(_chat_ws.run(_args()))
        except BaseException as exc:  # noqa: BLE001 - reported below, by the assertion
            results.append(exc)

    # A daemon: were run() to block, the test fails at the join, and the process still exits
    # (a thread not a daemon is joined at the interpreter's exit: the worker hung, untimed).
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert results == [7]
    assert chats == ["library"]


def test_run_twice_leaves_sigint_as_it_found_it(chats: list[str]) -> None:
    before = signal.getsignal(signal.SIGINT)
    assert _chat_ws.run(_args()) == 7
    assert _chat_ws.run(_args()) == 7
    assert signal.getsignal(signal.SIGINT) is before
    assert chats == ["library", "library"]
