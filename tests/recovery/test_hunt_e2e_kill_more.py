"""More points at which ``tidings serve`` is stopped (SIGKILL, or SIGTERM past the grace) and
restarted on the same database: collect and steer modes, a kill right after a reply, ``/clear``
then a kill, two restarts in a row, a kill while recovery writes its notices.

The contract checked each time, through the client's frames and read-only reads of the
database: each accepted message is answered once or gets one "not answered" notice quoting
it (never both, never neither, never twice); a steered or cleared message gets neither (the
user asked for it); a resend of an accepted id is a duplicate; nothing stays held, ``queued``
or ``sending`` once the client caught up; replies come in seq order.

The helpers (fifo-gated ``CommandAgent``, ``Client``, ``_answers``) are those of
``test_hunt_e2e_kill.py``."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import sqlite3
from collections.abc import AsyncIterator

import trio

from tidings.channels import GatewayClient

from .conftest import held_count
from .test_hunt_e2e_kill import (
    GRACE,
    TIMEOUT,
    Client,
    _accepted,
    _answers,
    _chunk,
    _counts,
    _kill,
    _release,
    _start,
    _start_then_queue,
    _write_agent,
    serve,
)
from .test_hunt_e2e_kill import _server as _serve_with

AGENT = ("--agent", "hunt_e2e_agent:agent")


def _server(tmp: pathlib.Path, db: pathlib.Path, mode: str = "followup",
            grace: str = GRACE) -> contextlib.AbstractAsyncContextManager[serve.ServerProcess]:
    """``tidings serve`` on *db* with the fifo-gated agent, in dispatch *mode*."""
    return _serve_with(tmp, db, *AGENT, mode=mode, grace=grace)


@contextlib.asynccontextmanager
async def _connected(tmp: pathlib.Path, db: pathlib.Path, mode: str = "followup",
                     grace: str = GRACE
                     ) -> AsyncIterator[tuple[serve.ServerProcess, GatewayClient, Client]]:
    """:func:`_server`, a client of conversation ``c`` connected to it, and its
    :class:`Client` (which keeps every frame)."""
    async with _server(tmp, db, mode, grace) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c") as ws:
        yield server, ws, Client(ws)


def _read(db: pathlib.Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


async def _held(db: pathlib.Path) -> int:
    return await trio.to_thread.run_sync(held_count, db)


async def _notices(db: pathlib.Path) -> list[str]:
    """The text of every "not answered" notice ever written, in any session."""
    rows = await trio.to_thread.run_sync(
        _read, db, "SELECT text FROM outbox WHERE kind = 'notice' "
                   "AND text LIKE '%not answered%' ORDER BY created_at, seq")
    return [text for (text,) in rows]


async def _settled(db: pathlib.Path) -> None:
    """Nothing held, queued or sending once the last server stopped."""
    counts = await _counts(db)
    assert counts["queued"] == counts["sending"] == 0, counts
    assert await _held(db) == 0


async def _resend_and_catch_up(server: serve.ServerProcess, session_id: str,
                               sent: list[tuple[str, str]], after_seq: int = 0,
                               conversation: str = "c") -> Client:
    """Reconnect, resend *sent* (each must be a duplicate), send a probe and wait for its
    reply, then catch up."""
    async with GatewayClient.connect(server.url, token=server.token,
                                     conversation=conversation, session_id=session_id,
                                     after_seq=after_seq) as ws:
        again = Client(ws)
        for message_id, text in sent:
            await ws.message(text, message_id=message_id)
            assert (await again.until(_accepted(message_id))).get("duplicate") is True, \
                message_id
        await ws.message("probe", message_id="probe")
        await again.until(lambda f: f["type"] == "delivery"
                          and f["text"].endswith("done probe"))
        await again.caught_up()
        seqs = [d["seq"] for d in again.deliveries()]
        assert seqs == sorted(set(seqs)), again.deliveries()
        return again


def _only_notice(deliveries: list[dict], text: str) -> None:
    [answer] = _answers(deliveries, text)
    assert answer["kind"] == "notice", answer


async def test_collect_mode_a_kill_while_the_first_turn_runs_tells_each_merged_message_once(
        tmp_path) -> None:
    """collect: one turn runs, two messages wait merged into one turn; SIGKILL. After the
    restart each of the three gets exactly one notice (none was answered), and a resend of
    each id is a duplicate."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "collect.db"
    sent = [("m1", "hold one"), ("m2", "second"), ("m3", "third")]
    try:
        async with _connected(tmp_path, db, "collect") as (server, ws, first):
            await _start_then_queue(ws, first, [("m1", "hold one"), ("m2", "second")])
            await ws.message("third", message_id="m3")
            assert (await first.until(_accepted("m3")))["outcome"] == "merged"
            session_id = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db, "collect") as server:
            again = await _resend_and_catch_up(server, session_id, sent)
        deliveries = first.deliveries() + again.deliveries()
        for _, text in sent:
            _only_notice(deliveries, text)
        await _settled(db)
    finally:
        _release(fifo)


async def test_steer_mode_a_kill_after_the_steer_ended_the_first_turn(tmp_path) -> None:
    """steer: a second message steers the first turn away (it ends ``cancelled(steer)``) and
    its own turn runs; SIGKILL. The steered message gets nothing (its cancel was the answer,
    and the steer note tells the agent), the second one notice, once."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "steer.db"
    try:
        async with _connected(tmp_path, db, "steer") as (server, ws, first):
            await _start(ws, first, "m1", "hold one")
            await ws.message("hold two", message_id="m2")
            await first.until(_accepted("m2"))
            cancelled = await first.until(lambda f: f["type"] == "lifecycle"
                                          and f["event"] == "cancelled")
            assert (cancelled["message_id"], cancelled["reason"]) == ("m1", "steer")
            await first.until(_chunk("working on hold two"))
            session_id = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db, "steer") as server:
            again = await _resend_and_catch_up(server, session_id,
                                               [("m1", "hold one"), ("m2", "hold two")])
        deliveries = first.deliveries() + again.deliveries()
        assert _answers(deliveries, "hold one") == [], deliveries
        _only_notice(deliveries, "hold two")
        await _settled(db)
    finally:
        _release(fifo)


async def test_steer_mode_a_kill_as_soon_as_the_steer_is_accepted(tmp_path) -> None:
    """steer: SIGKILL as soon as the steering message is accepted, while the first turn is
    being cancelled (its end may or may not be written). The steering message gets exactly
    one notice; the steered one never a reply, and at most one notice (if the kill came
    before its cancel was recorded it is still held, cut like any running turn)."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "steer2.db"
    try:
        async with _connected(tmp_path, db, "steer") as (server, ws, first):
            await _start(ws, first, "m1", "hold one")
            await ws.message("hold two", message_id="m2")
            await first.until(_accepted("m2"))
            session_id = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db, "steer") as server:
            again = await _resend_and_catch_up(server, session_id,
                                               [("m1", "hold one"), ("m2", "hold two")])
        deliveries = first.deliveries() + again.deliveries()
        steered = _answers(deliveries, "hold one")
        assert len(steered) <= 1, deliveries
        assert all(d["kind"] == "notice" for d in steered), deliveries
        _only_notice(deliveries, "hold two")
        await _settled(db)
    finally:
        _release(fifo)


async def test_a_kill_right_after_the_reply_tells_nothing_more(tmp_path) -> None:
    """SIGKILL as soon as the reply is delivered, before (or just after) the turn's end is
    written: the reply released the message in its own commit, so no notice comes after the
    restart, and the reply is not shown twice."""
    _write_agent(tmp_path)  # the agent module; "hello" never waits on its fifo
    db = tmp_path / "reply.db"
    async with _server(tmp_path, db) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="c") as ws:
        first = Client(ws, ack=False)
        await ws.message("hello", message_id="h")
        reply = await first.until(lambda f: f["type"] == "delivery")
        await _kill(server)
        session_id = ws.session_id
    assert reply["text"].endswith("done hello"), reply
    async with _server(tmp_path, db) as server:
        again = await _resend_and_catch_up(server, session_id, [("h", "hello")],
                                           after_seq=reply["seq"])
    deliveries = first.deliveries() + again.deliveries()
    assert [d["seq"] for d in _answers(deliveries, "hello")] == [reply["seq"]], deliveries
    assert await _notices(db) == []
    await _settled(db)


async def test_clear_with_a_running_and_a_waiting_message_then_a_kill_tells_nothing(
        tmp_path) -> None:
    """``/clear`` while one turn runs and one waits, then SIGKILL: after the restart neither
    is answered nor told about (the user cleared them), and their ids are still
    duplicates."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "clear.db"
    try:
        async with _connected(tmp_path, db) as (server, ws, first):
            await _start_then_queue(ws, first, [("m1", "hold one"), ("m2", "second")])
            await ws.message("/clear", message_id="clear")
            await first.until(lambda f: f["type"] == "delivery"
                              and f["text"].startswith("Cleared."))
            old_session = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db) as server, \
                GatewayClient.connect(server.url, token=server.token, conversation="c",
                                      session_id=old_session, after_seq=0) as ws:
            again = Client(ws)
            for message_id, text in (("m1", "hold one"), ("m2", "second")):
                await ws.message(text, message_id=message_id)
                assert (await again.until(_accepted(message_id))).get("duplicate") is True
            await ws.message("probe", message_id="probe")
            await again.until(lambda f: f["type"] == "delivery"
                              and f["text"].endswith("done probe"))
            await again.caught_up()
        deliveries = first.deliveries() + again.deliveries()
        assert _answers(deliveries, "hold one") == _answers(deliveries, "second") == [], \
            deliveries
        assert await _notices(db) == []
        await _settled(db)
    finally:
        _release(fifo)


async def test_a_graceful_stop_past_the_grace_tells_the_cut_turn_once_after_the_restart(
        tmp_path) -> None:
    """SIGTERM with a turn running past a short grace and one message waiting: the waiting one
    is told at the stop, the cut one at the next start; each once."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "term.db"
    sent = [("m1", "hold one"), ("m2", "second")]
    try:
        async with _connected(tmp_path, db, grace="0.5") as (server, ws, first):
            await _start_then_queue(ws, first, [("m1", "hold one"), ("m2", "second")])
            session_id = ws.session_id
            server.signal(signal.SIGTERM)
            # Told live, at the stop (and acked, so the stop need not wait for it).
            live = await first.until(lambda f: f["type"] == "delivery"
                                     and '"second"' in f["text"])
            with trio.fail_after(TIMEOUT):
                assert await server.process.wait() == 0
        _release(fifo)
        told_at_stop = await _notices(db)
        [told] = told_at_stop
        assert '"second"' in told, told
        assert await _held(db) == 1  # the cut turn's message: told at the next start
        async with _server(tmp_path, db) as server:
            again = await _resend_and_catch_up(server, session_id, sent,
                                               after_seq=live["seq"])
        deliveries = first.deliveries() + again.deliveries()
        for _, text in sent:
            _only_notice(deliveries, text)
        assert len(await _notices(db)) == 2
        await _settled(db)
    finally:
        _release(fifo)


async def test_two_restarts_in_a_row_tell_each_held_message_once(tmp_path) -> None:
    """SIGKILL with a running and a waiting message; the next process is killed too once it
    serves (its notices written, nobody connected); a third start tells nothing again."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "twice.db"
    sent = [("m1", "hold one"), ("m2", "second")]
    try:
        async with _connected(tmp_path, db) as (server, ws, first):
            await _start_then_queue(ws, first, sent)
            session_id = ws.session_id
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db) as server:
            await _kill(server)
        assert len(await _notices(db)) == 2
        async with _server(tmp_path, db) as server:
            again = await _resend_and_catch_up(server, session_id, sent)
        deliveries = first.deliveries() + again.deliveries()
        for _, text in sent:
            _only_notice(deliveries, text)
        assert len(await _notices(db)) == 2
        await _settled(db)
    finally:
        _release(fifo)


async def test_a_kill_while_recovery_tells_many_held_messages_tells_each_once(
        tmp_path) -> None:
    """Many held messages (in two conversations: one running, the rest waiting); SIGKILL.
    The second process is killed as soon as its recovery has written a first notice (seen by
    a read-only poll of the database, once it logged the pass just before them), with most
    still to write; a third start tells each message exactly once in all."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "many.db"
    sent = [("m0", "hold zero")] + [(f"m{i}", f"wait {i:02d}") for i in range(1, 40)]
    chats = ("a", "b")
    firsts: dict[str, Client] = {}
    sessions: dict[str, str] = {}
    try:
        async with _server(tmp_path, db) as server:
            for chat in chats:
                async with GatewayClient.connect(server.url, token=server.token,
                                                 conversation=chat) as ws:
                    firsts[chat] = Client(ws)
                    await _start_then_queue(ws, firsts[chat],
                                            [(i, f"{t} {chat}") for i, t in sent])
                    sessions[chat] = ws.session_id
            await _kill(server)
        _release(fifo)
        old = os.environ.get("PYTHONPATH")
        process = await trio.lowlevel.open_process(
            serve.tidings_command("serve", "--db", str(db), "--port", "0", *AGENT),
            stdin=serve.subprocess.DEVNULL, stdout=serve.subprocess.DEVNULL,
            stderr=serve.subprocess.PIPE,
            env={**serve.environment(), "PYTHONPATH": os.pathsep.join(
                filter(None, [str(tmp_path), old]))})
        try:
            with trio.fail_after(TIMEOUT):
                assert process.stderr is not None
                log = b""
                while b"event=recovery_dead_turns" not in log:  # the pass before the notices
                    chunk = await process.stderr.receive_some(65536)
                    assert chunk, log.decode()
                    log += chunk
                while not await _notices(db):  # a read-only poll, no clock: the first told
                    await trio.lowlevel.checkpoint()
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
        # Each told (and released in the same commit) or still held: never both, never neither.
        assert await _held(db) + len(await _notices(db)) == len(sent) * len(chats)
        async with _server(tmp_path, db) as server:
            for chat in chats:
                mine = [(i, f"{t} {chat}") for i, t in sent]
                again = await _resend_and_catch_up(server, sessions[chat], mine,
                                                   conversation=chat)
                deliveries = firsts[chat].deliveries() + again.deliveries()
                for _, text in mine:
                    _only_notice(deliveries, text)
        assert len(await _notices(db)) == len(sent) * len(chats)
        await _settled(db)
    finally:
        _release(fifo)


async def test_new_with_a_running_message_then_a_kill_tells_it_in_the_old_session(
        tmp_path) -> None:
    """``/new`` while a turn runs (it goes on in the old session), then SIGKILL: after the
    restart, the client reconnecting as told (the session of its last delivery: the new
    one) still gets the notice recovery wrote in the old session, once. It was left
    ``unrouted`` for good: a hello handed back only the rows of the sessions it named."""
    fifo = _write_agent(tmp_path)
    db = tmp_path / "new.db"
    try:
        async with _connected(tmp_path, db) as (server, ws, first):
            await _start(ws, first, "m1", "hold one")
            await ws.message("/new", message_id="new")
            started = await first.until(lambda f: f["type"] == "delivery"
                                        and f["text"].startswith("Started a new session"))
            old_session = ws.session_id
            assert started["session_id"] != old_session
            await _kill(server)
        _release(fifo)
        async with _server(tmp_path, db) as server, \
                GatewayClient.connect(server.url, token=server.token, conversation="c",
                                      session_id=started["session_id"],
                                      after_seq=started["seq"]) as ws:
            again = Client(ws)
            told = await again.until(lambda f: f["type"] == "delivery"
                                     and "not answered" in f["text"])
            assert (told["session_id"], '"hold one"' in told["text"]) == (old_session, True)
            await ws.message("hold one", message_id="m1")
            assert (await again.until(_accepted("m1"))).get("duplicate") is True
            await ws.message("probe", message_id="probe")
            await again.until(lambda f: f["type"] == "delivery"
                              and f["text"].endswith("done probe"))
            await again.caught_up()
        _only_notice(first.deliveries() + again.deliveries(), "hold one")
        assert len(await _notices(db)) == 1
        await _settled(db)
        assert (await _counts(db))["unrouted"] == 0
    finally:
        _release(fifo)


async def _sigterm_then(tmp_path, db, sent, stop) -> None:
    """SIGTERM a server with a turn running (*sent[0]*) and one waiting (*sent[1]*), then,
    once the log says ``event=stopping`` (the stop waits out its grace), ``await
    stop(server, db)``; then restart, resend everything, and check each message was told
    "not answered" exactly once in all and nothing is left held or in flight."""
    fifo = _write_agent(tmp_path)
    try:
        async with _connected(tmp_path, db) as (server, ws, first):
            await _start_then_queue(ws, first, sent)
            session_id = ws.session_id
            server.signal(signal.SIGTERM)
            with trio.fail_after(TIMEOUT):
                await server.wait_line(lambda line: "event=stopping " in line)
            await stop(server, db)
        _release(fifo)
        async with _server(tmp_path, db) as server:
            again = await _resend_and_catch_up(server, session_id, sent)
        for _, text in sent:
            _only_notice(first.deliveries() + again.deliveries(), text)
        assert len(await _notices(db)) == len(sent)
        await _settled(db)
    finally:
        _release(fifo)


async def test_a_kill_during_the_grace_of_a_graceful_stop_tells_each_once(tmp_path) -> None:
    """SIGTERM with a turn running and one waiting, then SIGKILL while the stop waits out its
    grace (the log said ``event=stopping``): nothing was told yet; the next start tells each
    message once."""
    async def kill(server, db) -> None:
        await _kill(server)

    await _sigterm_then(tmp_path, tmp_path / "termkill.db",
                        [("m1", "hold one"), ("m2", "second")], kill)


async def test_a_second_sigterm_tells_the_waiting_message_at_once_and_the_cut_one_after(
        tmp_path) -> None:
    """SIGTERM, then a second one (no more waiting) with a turn running and one waiting: the
    waiting message is told at the stop, the cut one at the next start; each once."""
    async def sigterm_again(server, db) -> None:
        server.signal(signal.SIGTERM)
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
        [told] = await _notices(db)
        assert '"second"' in told, told

    await _sigterm_then(tmp_path, tmp_path / "term2.db",
                        [("m1", "hold one"), ("m2", "second")], sigterm_again)
