"""THE end-to-end test: ``tidings serve`` as a subprocess on a free port with a temp database,
two websocket clients in two conversations, commands, steer, a drop between write and ack,
a bad token, bad frames, the terminal client on a pipe, and SIGTERM with nothing lost; then
``tidings status --json`` shows every delivery terminal."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import stat
import subprocess
from collections import Counter

import pytest
import trio

from tidings.channels import GatewayClient, GatewayClosed
from tidings.store import read_database, status_report

from .serve_process import environment, serve_process, tidings_command

TIMEOUT = 60
"""Real seconds one step may take before it counts as a hang (the server is a subprocess); still
a tenth of the 600 s grace a second signal must cut."""


def is_frame(frame_type: str, **fields):
    def match(frame: dict) -> bool:
        return frame.get("type") == frame_type and all(frame.get(k) == v
                                                        for k, v in fields.items())
    return match


class Recorder:
    """A client that keeps every frame it gets and can wait for several kinds at once."""

    def __init__(self, client: GatewayClient, *, ack: bool = True) -> None:
        self.client = client
        self.ack = ack
        self.frames: list[dict] = []
        self.deliveries: Counter[str] = Counter()

    async def until(self, *predicates) -> list[dict]:
        waiting = list(predicates)
        start = len(self.frames)
        with trio.fail_after(TIMEOUT):
            while waiting:
                frame = await self.client.receive()
                self.frames.append(frame)
                if frame["type"] == "delivery":
                    self.deliveries[frame["delivery_id"]] += 1
                    if self.ack:
                        await self.client.ack(frame["delivery_id"])
                waiting = [p for p in waiting if not p(frame)]
        return self.frames[start:]

    async def say(self, text: str, *predicates) -> tuple[str, list[dict]]:
        message_id = await self.client.message(text)
        return message_id, await self.until(*predicates)


def _lifecycle(frames: list[dict], message_id: str) -> list[str]:
    return [f["event"] for f in frames if f["type"] == "lifecycle"
            and f["message_id"] == message_id and f["event"] != "text_chunk"]


async def _total(db) -> int:
    return sum((await _counts(db)).values())


async def _counts(db) -> dict[str, int]:
    report = await trio.to_thread.run_sync(
        lambda: read_database(db, status_report, limit=0))
    return dict(report.counts)


async def test_tidings_serve_end_to_end(tmp_path) -> None:
    db = tmp_path / "e2e.db"
    async with serve_process(db, "--agent", "serve_agents:GatedAgent", "--grace", "1") \
            as server:
        assert server.token_file == db.with_name("e2e.db.token")
        assert stat.S_IMODE(os.stat(server.token_file).st_mode) == 0o600
        assert f"db={db}" in await server.wait_line(lambda line: "event=serving" in line)
        url, token = server.url, server.token

        # A bad token is closed before anything else happens.
        with pytest.raises(GatewayClosed) as refused:
            async with GatewayClient.connect(url, token="not-the-token", conversation="x"):
                raise AssertionError("admitted")
        assert (refused.value.code, refused.value.reason) == (4001, "unauthorized: bad token")

        async with GatewayClient.connect(url, token=token, conversation="alpha") as a_client, \
                GatewayClient.connect(url, token=token, conversation="beta") as b_client:
            a, b = Recorder(a_client), Recorder(b_client)
            assert a_client.session_id != b_client.session_id

            # Messages, deliveries with store seq, lifecycle frames.
            hello, frames = await a.say("hello alpha", is_frame("delivery", kind="message"),
                                        is_frame("lifecycle", event="completed"))
            reply = next(f for f in frames if f["type"] == "delivery")
            assert (reply["text"], reply["seq"]) == ("hello alpha", 1)
            assert _lifecycle(frames, hello) == ["started", "completed"]
            assert any(f.get("event") == "text_chunk" for f in frames)
            _, frames = await b.say("hello beta", is_frame("delivery", kind="message"))
            assert frames[-1]["text"] == "hello beta"
            assert frames[-1]["session_id"] == b_client.session_id

            # /cancel reaches the running turn.
            held, _ = await a.say("hold:one", is_frame("lifecycle", event="text_chunk"))
            _, frames = await a.say("/cancel", is_frame("delivery", command="cancel"),
                                    is_frame("lifecycle", event="cancelled"))
            assert any(is_frame("lifecycle", event="cancelled", reason="cancel_command",
                                message_id=held)(f) for f in frames)

            # Steer: a new message cancels the running turn, then runs after it.
            held, _ = await a.say("hold:two", is_frame("lifecycle", event="text_chunk"))
            steer, frames = await a.say("changed my mind",
                                        is_frame("lifecycle", event="completed"),
                                        is_frame("delivery", kind="message"))
            assert _lifecycle(frames, held) == ["cancelled"]
            assert any(is_frame("lifecycle", event="cancelled", reason="steer")(f)
                       for f in frames)
            assert _lifecycle(frames, steer) == ["started", "completed"]

            # A turn held in beta is released from alpha: conversations share the agent only.
            await b.say("hold:three", is_frame("lifecycle", event="text_chunk"))
            await a.say("release:three", is_frame("delivery", kind="message"))
            frames = await b.until(is_frame("delivery", kind="message"))
            assert frames[-1]["text"] == "holding three released three"

            # /clear cancels, forgets the session; the next message starts a new one.
            held, _ = await a.say("hold:four", is_frame("lifecycle", event="text_chunk"))
            _, frames = await a.say("/clear", is_frame("delivery", command="clear"),
                                    is_frame("lifecycle", event="cancelled"))
            assert any(is_frame("lifecycle", event="cancelled", reason="clear")(f)
                       for f in frames)
            _, frames = await a.say("after clear", is_frame("delivery", kind="message"))
            new_session = frames[-1]["session_id"]
            assert new_session != a_client.session_id
            assert frames[-1]["seq"] == 1

            # Bad frames get error frames; nothing is persisted.
            before = await _total(db)
            for raw, code in [("nope", "bad_json"), ('{"type": "dance"}', "unknown_type"),
                              ('{"type": "message", "text": "x"}', "missing_field"),
                              ('{"type": "message", "id": "big", "text": "' + "y" * 70000
                               + '"}', "frame_too_big"),
                              (b"\xff\xfe", "bad_utf8")]:
                await a_client.ws.send_message(raw)
                frames = await a.until(is_frame("error"))
                assert frames[-1]["code"] == code
            assert await _total(db) == before

            # A repeated message id is not processed twice.
            await a_client.message("only once", message_id="fixed-id")
            await a.until(is_frame("delivery", kind="message"))
            await a_client.message("only once", message_id="fixed-id")
            frames = await a.until(is_frame("accepted", id="fixed-id", duplicate=True))
            assert not [f for f in frames if f["type"] == "delivery"]

        # A drop between write and ack, then a reconnect with after_seq.
        async with GatewayClient.connect(url, token=token, conversation="alpha") as client:
            dropping = Recorder(client, ack=False)
            await dropping.say("never acked", is_frame("delivery", kind="message"))
            unacked = dropping.frames[-1]
            await dropping.say("hold:five", is_frame("lifecycle", event="text_chunk"))
        async with GatewayClient.connect(url, token=token, conversation="beta") as client:
            await Recorder(client).say("release:five", is_frame("delivery", kind="message"))
        async with GatewayClient.connect(url, token=token, conversation="alpha",
                                         session_id=new_session,
                                         after_seq=unacked["seq"] - 1) as client:
            back = Recorder(client)
            await back.until(is_frame("delivery", text="holding five released five"))
            await client.sync()
            synced = (await back.until(is_frame("synced")))[-1]
            assert synced["last_seq"] == max(f["seq"] for f in back.frames
                                             if f["type"] == "delivery")
            texts = [f["text"] for f in back.frames if f["type"] == "delivery"]
            assert texts == ["never acked", "holding five released five"]
            assert set(back.deliveries.values()) == {1}

        # The terminal client on a pipe.
        transcript = await trio.run_process(
            tidings_command("chat", "--url", url, "--token-file", str(server.token_file),
                            "--conversation", "gamma"),
            stdin=b"hi from a pipe\n/status\n", capture_stdout=True, capture_stderr=True,
            env=environment())
        out = transcript.stdout.decode()
        assert out.splitlines()[0] == "hi from a pipe"
        assert "* Session: active" in out

        # SIGTERM with work in flight: a held turn, a burst of deliveries being acked.
        async with GatewayClient.connect(url, token=token, conversation="delta") as client, \
                GatewayClient.connect(url, token=token, conversation="epsilon") as other:
            busy, holder = Recorder(client), Recorder(other)
            held, _ = await holder.say("hold:forever", is_frame("lifecycle",
                                                                event="text_chunk"))
            await busy.say("burst:40", is_frame("accepted"))
            server.signal(signal.SIGTERM)
            with pytest.raises(GatewayClosed) as closed:
                await busy.until(lambda frame: False)
            assert closed.value.code == 1001
            with pytest.raises(GatewayClosed):
                await holder.until(lambda frame: False)
            assert any(is_frame("lifecycle", event="cancelled", reason="shutdown",
                                message_id=held)(f) for f in holder.frames)
            notices = [f["text"] for f in busy.frames if f["type"] == "delivery"
                       and f["kind"] == "notice"]
            assert notices == [f"notice {i}" for i in range(40)]
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
        assert any("event=stopped" in line for line in server.lines)

    status = await trio.run_process(
        tidings_command("status", "--json", "--db", str(db), "--limit", "10000"),
        capture_stdout=True, env=environment())
    report = json.loads(status.stdout)
    assert set(report) == {"counts", "recent", "sending_claimant"}
    assert report["sending_claimant"] is None  # (a clean stop leaves no row sending)
    assert report["counts"]["queued"] == report["counts"]["sending"] == 0
    assert sum(report["counts"].values()) == len(report["recent"])
    for row in report["recent"]:
        assert set(row) == {"delivery_id", "session_id", "status", "attempts", "last_error",
                            "updated_at"}
        assert row["status"] in ("sent", "failed", "unknown", "unrouted"), row
    assert report["counts"]["sent"] >= 50
    assert report["counts"]["failed"] == report["counts"]["unrouted"] == 0


async def test_a_second_signal_stops_at_once_and_still_exits_cleanly(tmp_path) -> None:
    db = tmp_path / "twice.db"
    async with serve_process(db, "--agent", "serve_agents:GatedAgent", "--grace", "600") \
            as server, GatewayClient.connect(server.url, token=server.token,
                                             conversation="alpha") as client:
        recorder = Recorder(client)
        await recorder.say("hold:never", is_frame("lifecycle", event="text_chunk"))
        server.signal(signal.SIGTERM)
        await server.wait_line(lambda line: "event=stopping" in line)
        server.signal(signal.SIGINT)
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    counts = await _counts(db)
    assert counts["queued"] == counts["sending"] == 0


def _writer_children(pid: int) -> list[int]:
    """*pid*'s child processes that run the writer (each thread keeps its own list of
    children: trio starts processes from a worker thread). Sync: /proc reads do not block."""
    tasks = pathlib.Path(f"/proc/{pid}/task")
    children = [int(child) for task in tasks.iterdir()
                for child in (task / "children").read_text().split()]
    return [child for child in children
            if b"_writer_child" in pathlib.Path(f"/proc/{child}/cmdline").read_bytes()]


def _pids() -> set[int]:
    return {int(entry.name) for entry in pathlib.Path("/proc").iterdir() if entry.name.isdigit()}


@pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{os.getpid()}/children"),
                    reason="reads /proc/PID/task/TID/children (Linux)")
async def test_serve_with_the_process_writer_commits_in_a_child_and_stops_it(tmp_path) -> None:
    db = tmp_path / "proc.db"
    async with serve_process(db, "--writer", "process") as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="a") as client:
        line = await server.wait_line(lambda text: "event=serving" in text)
        assert " writer=process " in line
        writers = _writer_children(server.process.pid)
        assert len(writers) == 1
        _, frames = await Recorder(client).say("hello", is_frame("delivery", kind="message"))
        assert frames[-1]["text"] == "hello"
        server.signal(signal.SIGTERM)
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    assert writers[0] not in _pids()  # stopped and reaped by its host
    counts = await _counts(db)
    assert counts["sent"] >= 1
    assert counts["queued"] == counts["sending"] == 0


async def test_serve_refuses_a_bad_config_naming_the_key(tmp_path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[gateway]\nport = 99999\n")
    result = await trio.run_process(
        tidings_command("serve", "--config", str(config), "--db", str(tmp_path / "x.db")),
        capture_stderr=True, check=False, env=environment(), stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "gateway.port" in result.stderr.decode()
    assert not (tmp_path / "x.db").exists()


async def test_a_port_in_use_exits_1_with_the_reason(tmp_path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = await trio.run_process(
            tidings_command("serve", "--db", str(tmp_path / "p.db"), "--port", str(port)),
            capture_stderr=True, check=False, env=environment(), stdin=subprocess.DEVNULL)
    err = result.stderr.decode()
    assert result.returncode == 1
    assert f"tidings serve: cannot listen on ws://127.0.0.1:{port}: OSError" in err
    assert "Traceback" not in err


async def test_a_file_that_is_not_a_database_exits_1_with_the_reason(tmp_path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are notes, not a database\n" * 10)
    result = await trio.run_process(
        tidings_command("serve", "--db", str(db), "--port", "0"),
        capture_stderr=True, check=False, env=environment(), stdin=subprocess.DEVNULL)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert f"tidings serve: cannot open the database {db} (serve.db): DatabaseError" in err
    assert "Traceback" not in err
    assert not (tmp_path / "notes.db.token").exists()
