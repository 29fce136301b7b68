"""``tidings serve`` killed (SIGKILL) at chosen points of a conversation, restarted on the same
database, and the client reconnecting with its last ``after_seq`` and resending its message
ids: every message is answered exactly once, or gets the "not answered" notice, or (never
accepted) is accepted again; no reply is shown twice; nothing stays ``queued``/``sending``.

The points are reached through frames and a fifo the test controls (a ``CommandAgent`` whose
command blocks reading it), never through the clock."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import signal
from collections.abc import AsyncIterator, Callable

import trio

from tidings.channels import GatewayClient
from tidings.store import read_database, status_report

_PATH = pathlib.Path(__file__).resolve().parents[1] / "supervisor" / "serve_process.py"
_SPEC = importlib.util.spec_from_file_location("tidings_hunt_serve_process", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
serve = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(serve)

TIMEOUT = 120
"""Real seconds any one step may take before the test calls it a hang: the server is a
subprocess, so the clock is real, and a busy machine may take many seconds to start one."""

GRACE = "600"
"""The servers' grace: far past ``TIMEOUT``, so that a stop that waits it out trips the bound
(a second SIGTERM that did not cut the wait), while a slow stop that does not never can."""

_COMMAND = r"""
import sys
lines = sys.stdin.read().strip().splitlines()
text = lines[-1] if lines else ""
sys.stdout.write("working on " + text + "\n")
sys.stdout.flush()
if text.startswith("hold"):
    with open(sys.argv[1]) as gate:
        gate.read()
sys.stdout.write("done " + text)
"""


def _write_agent(tmp: pathlib.Path) -> pathlib.Path:
    """A ``CommandAgent`` whose command answers ``done TEXT``; a ``hold...`` message first
    blocks on a fifo until :func:`_release` (the last prompt line is the message)."""
    fifo = tmp / "gate.fifo"
    os.mkfifo(fifo)
    (tmp / "hunt_e2e_agent.py").write_text(
        "import sys\nfrom tidings.channels import CommandAgent\n"
        f"agent = CommandAgent([sys.executable, '-c', {_COMMAND!r}, {str(fifo)!r}])\n")
    return fifo


def _release(fifo: pathlib.Path) -> None:
    """Let every command blocked on the fifo go on (EOF); nothing happens with no reader."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


@contextlib.asynccontextmanager
async def _server(tmp: pathlib.Path, db: pathlib.Path, *args: str, mode: str = "followup",
                  grace: str = GRACE) -> AsyncIterator[serve.ServerProcess]:
    """``tidings serve`` on *db* (dispatch *mode*, *grace*, then *args*), with *tmp* on
    ``PYTHONPATH`` so ``--agent hunt_e2e_agent:agent`` loads."""
    config = tmp / f"serve-{mode}.toml"
    config.write_text(f'[channels.gateway]\ndispatch_mode = "{mode}"\n')
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp), old]))
    try:
        async with serve.serve_process(db, "--config", str(config), "--grace", grace,
                                       *args) as server:
            yield server
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


async def _kill(server: serve.ServerProcess) -> None:
    server.signal(signal.SIGKILL)
    with trio.fail_after(TIMEOUT):
        await server.process.wait()


class Client:
    """Keeps every frame; acks deliveries unless told not to; counts each delivery seen."""

    def __init__(self, client: GatewayClient, *, ack: bool = True) -> None:
        self.client = client
        self.ack = ack
        self.frames: list[dict] = []

    async def until(self, done: Callable[[dict], bool]) -> dict:
        with trio.fail_after(TIMEOUT):
            while True:
                frame = await self.client.receive()
                self.frames.append(frame)
                if frame["type"] == "delivery" and self.ack:
                    await self.client.ack(frame["delivery_id"])
                if done(frame):
                    return frame

    async def caught_up(self) -> None:
        """Until the client has every row the server will hand it now."""
        await self.client.sync()
        synced = await self.until(lambda f: f["type"] == "synced")
        if synced["last_seq"] > self.client.seen.get(synced["session_id"], 0):
            await self.until(lambda f: f["type"] == "delivery"
                             and f["seq"] >= synced["last_seq"])

    def deliveries(self) -> list[dict]:
        return [f for f in self.frames if f["type"] == "delivery"]


def _accepted(message_id: str) -> Callable[[dict], bool]:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


def _chunk(text: str) -> Callable[[dict], bool]:
    return lambda f: (f["type"] == "lifecycle" and f["event"] == "text_chunk"
                      and text in f.get("chunk", ""))


async def _start(ws: GatewayClient, client: Client, message_id: str, text: str) -> None:
    """Send a ``hold...`` message and wait until its command runs (it then blocks on the
    fifo)."""
    await ws.message(text, message_id=message_id)
    await client.until(_accepted(message_id))
    await client.until(_chunk("working on " + text))


async def _start_then_queue(ws: GatewayClient, client: Client,
                            sent: list[tuple[str, str]]) -> None:
    """Start the first of *sent* (:func:`_start`); then send the others, each ``queued``
    behind it."""
    (first_id, first_text), *rest = sent
    await _start(ws, client, first_id, first_text)
    for message_id, text in rest:
        await ws.message(text, message_id=message_id)
        assert (await client.until(_accepted(message_id)))["outcome"] == "queued"


def _answers(deliveries: list[dict], text: str) -> list[dict]:
    """Replies to *text* and "not answered" notices quoting it."""
    return [d for d in deliveries
            if (d["kind"] == "message" and d["text"].endswith("done " + text))
            or (d["kind"] == "notice" and "not answered" in d["text"] and text in d["text"])]


async def _counts(db: pathlib.Path) -> dict[str, int]:
    report = await trio.to_thread.run_sync(lambda: read_database(db, status_report, limit=0))
    return dict(report.counts)


async def test_a_kill_while_a_turn_runs_and_another_waits_answers_both_after_restart(
        tmp_path) -> None:
    """(b) SIGKILL after ``accepted``, while the turn runs and a second message waits behind
    it: after the restart and the resend of both ids, each is answered or gets the notice."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "b.db"
    try:
        async with _server(tmp_path, db, "--agent", "hunt_e2e_agent:agent") as server, \
                GatewayClient.connect(server.url, token=server.token,
                                      conversation="c") as ws:
            first = Client(ws)
            await _start_then_queue(ws, first, [("m1", "hold one"), ("m2", "second")])
            session_id = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db, "--agent", "hunt_e2e_agent:agent") as server, \
                GatewayClient.connect(server.url, token=server.token, conversation="c",
                                      session_id=session_id, after_seq=0) as ws:
            again = Client(ws)
            for message_id, text in (("m1", "hold one"), ("m2", "second")):
                await ws.message(text, message_id=message_id)
                await again.until(_accepted(message_id))
            await ws.message("probe", message_id="m3")
            await again.until(lambda f: f["type"] == "delivery" and f["text"].endswith(
                "done probe"))
            await again.caught_up()
            deliveries = first.deliveries() + again.deliveries()
            assert len(_answers(deliveries, "hold one")) == 1, deliveries
            assert len(_answers(deliveries, "second")) == 1, deliveries
        counts = await _counts(db)
        assert counts["queued"] == counts["sending"] == 0
    finally:
        _release(fifo)


def _echoed(deliveries: list[dict], text: str) -> list[dict]:
    return [d for d in deliveries if d["kind"] == "message" and d["text"] == text]


async def _echo_server(tmp: pathlib.Path, db: pathlib.Path, window: int = 32):
    config = tmp / f"echo{window}.toml"
    config.write_text(f'[gateway]\nack_window = {window}\n'
                      '[channels.gateway]\ndispatch_mode = "followup"\n')
    return serve.serve_process(db, "--config", str(config), "--grace", GRACE)


async def test_a_kill_before_the_client_acks_replays_only_what_it_does_not_have(
        tmp_path) -> None:
    """(c) SIGKILL with replies delivered but unacked and more waiting behind a full ack
    window: the client that has seqs 1..2 says ``after_seq=2``; it gets every other reply
    once, in order, and never 1 or 2 again."""
    db = tmp_path / "c.db"
    texts = [f"m{i}" for i in range(6)]
    async with await _echo_server(tmp_path, db, window=2) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c") as ws:
        first = Client(ws, ack=False)
        for text in texts:
            await ws.message(text, message_id=text)
            await first.until(_accepted(text))
        await first.until(lambda f: f["type"] == "lifecycle" and f["event"] == "completed"
                          and f["message_id"] == texts[-1])
        session_id = ws.session_id
        await _kill(server)
    have = {d["seq"] for d in first.deliveries()}
    assert have == {1, 2}, first.deliveries()
    async with await _echo_server(tmp_path, db, window=2) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c",
                                  session_id=session_id, after_seq=2) as ws:
        again = Client(ws)
        for text in texts:  # resent: every one was accepted before, none runs again
            await ws.message(text, message_id=text)
            assert (await again.until(_accepted(text))).get("duplicate") is True
        await again.caught_up()
        seqs = [d["seq"] for d in again.deliveries()]
        shown = "\n".join(f"{f['type']} {f.get('seq')} {f.get('id')} {f.get('text')}"
                          for f in again.frames)
        assert seqs == sorted(set(seqs)), shown
        assert not {1, 2} & set(seqs), shown
        everything = first.deliveries() + again.deliveries()
        for text in texts:
            assert len(_echoed(everything, text)) == 1, (text, everything)
    counts = await _counts(db)
    assert counts["queued"] == counts["sending"] == counts["unknown"] == 0, counts


async def test_a_kill_after_a_reply_the_client_did_not_ack_replays_it_once(tmp_path) -> None:
    """(c) the client got the reply, did not ack it, and does not have it (``after_seq`` one
    below): it is replayed exactly once after the restart."""
    db = tmp_path / "c2.db"
    async with await _echo_server(tmp_path, db) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c") as ws:
        first = Client(ws, ack=False)
        await ws.message("hello", message_id="h")
        await first.until(lambda _: bool(first.deliveries()) and any(
            f["type"] == "lifecycle" and f["event"] == "completed" for f in first.frames))
        [reply] = first.deliveries()
        session_id = ws.session_id
        await _kill(server)
    async with await _echo_server(tmp_path, db) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c",
                                  session_id=session_id, after_seq=reply["seq"] - 1) as ws:
        again = Client(ws)
        await again.caught_up()
        await ws.message("hello", message_id="h")
        assert (await again.until(_accepted("h"))).get("duplicate") is True
        await again.caught_up()
        assert [d["text"] for d in again.deliveries()] == ["hello"]
    counts = await _counts(db)
    assert counts["queued"] == counts["sending"] == counts["unknown"] == 0, counts


async def test_a_kill_right_after_sending_then_a_resend_answers_it_once(tmp_path) -> None:
    """(a) SIGKILL as soon as the message is written to the socket, without waiting for
    ``accepted``: after the restart a resend of its id is either a duplicate whose reply
    comes (replayed) or whose "not answered" notice comes (its turn was cut), or a new message
    answered now; never two answers, never none."""
    db = tmp_path / "a.db"
    async with await _echo_server(tmp_path, db) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c") as ws:
        await ws.message("first", message_id="f")
        await _kill(server)
        session_id = ws.session_id
    async with await _echo_server(tmp_path, db) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c",
                                  session_id=session_id, after_seq=0) as ws:
        again = Client(ws)
        await ws.message("first", message_id="f")
        await again.until(_accepted("f"))
        await ws.message("probe", message_id="p")
        await again.until(lambda f: f["type"] == "delivery" and f["text"] == "probe")
        await again.caught_up()
        # Answered once, or (accepted, then cut by the kill) told once that it was not.
        told = [d for d in again.deliveries() if d["kind"] == "notice"
                and "not answered" in d["text"] and '"first"' in d["text"]]
        assert len(_echoed(again.deliveries(), "first")) + len(told) == 1, again.deliveries()
    counts = await _counts(db)
    assert counts["queued"] == counts["sending"] == 0, counts
