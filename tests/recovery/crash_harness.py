"""Crash safety, proven by killing: a child process sends, ``SIGKILL`` lands, a restart checks.

The child (``python crash_harness.py child DB SENT_FILE SESSIONS SEED``) opens a runtime on
*DB*, creates *SESSIONS* sessions and binds a route to all but the first (whose rows go
``unrouted``). The route appends each delivered id to *SENT_FILE* and ``fsync``s it before
``deliver`` returns: that file is "what the platform got". One task per session sends a stream
(every fifth send a ``progress``), printing ``sent <delivery_id>`` only after ``send_*``
returned, i.e. once the intent is durable.

The parent (:func:`run_kill_point`) kills the child with ``SIGKILL`` after a seeded number of
acknowledged sends, snapshots the database as the kill left it, restarts in-process
(``open_runtime(recover="manual")``, a fresh in-memory route bound to every session,
``rt.recover()``), waits until nothing is ``queued`` or ``sending``, and checks:

1. every acknowledged intent is in the outbox;
2. after recovery no row is ``queued`` or ``sending``;
3. every id the child's route recorded is ``sent`` or ``unknown``, and the restarted route was
   never handed one of them (nothing is sent twice);
4. every ``unknown`` row was ``sending`` at the kill: it has a ``delivery.sending`` event from
   the killed process's epoch and no ``delivery.sent``;
5. no row is delivered twice by the restarted route, and progress left queued is ``failed``
   with ``stale_progress``, never replayed;
6. each row ``sending`` at the kill is now ``unknown`` (the restart's route does not
   reconcile), with exactly one ``delivery.unknown`` event and its attempt count kept;
   every turn the kill left ``running`` is ``failed`` with the dead-turn error, and no turn
   is left ``running``.

Used by ``tests/recovery/test_crash_safety.py`` (a few kill points; many with ``--slow``) and
``bench/crash_harness.py --kills N``.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import sqlite3
import sys
from collections import Counter

import attrs
import trio

__all__ = ["CrashFinding", "KillPointResult", "run_kill_point"]

_DEAD_TURN = "the process stopped before it recorded how this turn ended"
"""The error recovery gives a turn a dead process left ``running`` (README: the crash table)."""


class CrashFinding(AssertionError):
    """A crash-safety promise was broken at one kill point (the message says which)."""


@attrs.frozen
class KillPointResult:
    """What one kill point found (all counts of deliveries)."""

    seed: int
    kill_after: int
    acknowledged: int
    rows: int
    recorded_by_platform: int
    sending_at_kill: int
    queued_at_kill: int
    unknown: int
    redelivered: int
    unrouted: int
    stale_progress: int


# --- the child -----------------------------------------------------------------------------------


class FileRoute:
    """Appends each delivered id to a file and fsyncs it before ``deliver`` returns."""

    def __init__(self, path: str, rng: random.Random) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._rng = rng

    def _record(self, delivery_id: str) -> None:
        os.write(self._fd, f"{delivery_id}\n".encode())
        os.fsync(self._fd)

    async def deliver(self, outbound: object) -> None:
        await trio.sleep(self._rng.random() * 0.002)  # platform latency: time spent `sending`
        await trio.to_thread.run_sync(self._record, outbound.delivery_id)  # type: ignore[attr-defined]


async def child_main(db: str, sent_file: str, sessions: int, seed: int, writer: str) -> None:
    import tidings

    rng = random.Random(seed)
    route = FileRoute(sent_file, rng)
    async with tidings.open_runtime(db, workspace=pathlib.Path(db).parent,
                                    writer=writer) as rt:  # type: ignore[arg-type]
        if rt.store.writer.process_id is not None:
            sys.stdout.write(f"writer {rt.store.writer.process_id}\n")
        session_ids = [await rt.create_session(channel="crash") for _ in range(sessions)]
        for session_id in session_ids[1:]:
            rt.router.bind(session_id, route)

        async def stream(session_id: str) -> None:
            async with rt.open_turn(session_id) as ctx:
                for i in range(1, 1_000_000):
                    if i % 5 == 0:
                        handle = await ctx.output.progress(f"{session_id} working {i}")
                    else:
                        handle = await ctx.output.send_text(f"{session_id} #{i}")
                    sys.stdout.write(f"sent {handle.delivery_id}\n")
                    sys.stdout.flush()

        async with trio.open_nursery() as nursery:
            for session_id in session_ids:
                nursery.start_soon(stream, session_id)


# --- the parent ----------------------------------------------------------------------------------


async def _run_child_until(db: pathlib.Path, sent_file: pathlib.Path, sessions: int, seed: int,
                           kill_after: int, writer: str) -> list[str]:
    """Start the child, SIGKILL it once *kill_after* sends were acknowledged; return those.

    With ``writer="process"`` the kill is of the host; its writer process dies with it (the
    kernel kills it when its parent dies), and the snapshot waits until it is gone too.
    """
    process = await trio.lowlevel.open_process(
        [sys.executable, __file__, "child", str(db), str(sent_file), str(sessions), str(seed),
         writer], stdout=-1)
    assert process.stdout is not None
    acknowledged: list[str] = []
    writer_pidfd: int | None = None
    buffer = b""
    try:
        while len(acknowledged) < kill_after:
            chunk = await process.stdout.receive_some()
            if not chunk:
                raise CrashFinding(f"seed {seed}: the child exited before the kill "
                                   f"(code {await process.wait()})")
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            acknowledged += [line.split()[1].decode() for line in lines
                             if line.startswith(b"sent ")]
            for line in lines:
                if line.startswith(b"writer ") and writer_pidfd is None:
                    writer_pidfd = os.pidfd_open(int(line.split()[1]))
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            await process.stdout.aclose()
            if writer_pidfd is not None:  # readable once the writer process has exited
                await trio.lowlevel.wait_readable(writer_pidfd)
                os.close(writer_pidfd)
    if writer == "process" and writer_pidfd is None:
        raise CrashFinding(f"seed {seed}: the child never said its writer process id")
    if process.returncode != -signal.SIGKILL:
        raise CrashFinding(f"seed {seed}: the child ended with {process.returncode}, not SIGKILL")
    return acknowledged


def _snapshot(db: pathlib.Path) -> tuple[dict[str, tuple[str, str]], int, dict[str, int],
                                        list[str]]:
    """``delivery_id -> (outbox status, kind)`` as the kill left it, the killed epoch, the
    attempts of each row and the turns left ``running``."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        rows = {d: (s, k) for d, s, k in conn.execute(
            "SELECT delivery_id, status, kind FROM outbox")}
        epoch = conn.execute("SELECT MAX(epoch) FROM process_epochs").fetchone()[0]
        attempts = dict(conn.execute("SELECT delivery_id, attempts FROM outbox"))
        running = [row[0] for row in conn.execute(
            "SELECT turn_id FROM turns WHERE status = 'running'")]
        return rows, int(epoch), attempts, running
    finally:
        conn.close()


def _turns_and_attempts(db: pathlib.Path) -> tuple[dict[str, tuple[str, str | None]],
                                                   dict[str, int]]:
    """``turn_id -> (status, error)`` and ``delivery_id -> attempts`` after recovery."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        turns = {t: (s, e) for t, s, e in conn.execute("SELECT turn_id, status, error FROM turns")}
        return turns, dict(conn.execute("SELECT delivery_id, attempts FROM outbox"))
    finally:
        conn.close()


def _recorded(sent_file: pathlib.Path) -> list[str]:
    if not sent_file.exists():
        return []
    text = sent_file.read_text()
    lines = text.split("\n")
    return [line for line in lines[:-1] if line]  # a torn last line was never fsync'd whole


async def _restart_and_recover(db: pathlib.Path) -> tuple[list[str], dict[str, int]]:
    """Restart in-process, recover, wait until nothing is queued or sending."""
    import tidings
    from tidings.testing import MemoryRoute

    route = MemoryRoute()
    async with tidings.open_runtime(db, workspace=db.parent, recover="manual") as rt:
        for session_id in await rt.store.read(_session_ids):
            rt.router.bind(session_id, route)
        after = await rt.store.read(_newest_event)
        await rt.recover()
        with trio.move_on_after(60) as guard:  # a guard against a hang, not a wait
            while True:
                counts = await rt.status_counts()
                if counts["queued"] == 0 and counts["sending"] == 0:
                    break
                async for event in rt.events(after_seq=after):  # the next state change
                    after = event.seq
                    break
        if guard.cancelled_caught:
            raise CrashFinding(f"recovery did not finish: {counts}")
    return [outbound.delivery_id for outbound in route.delivered], counts


def _newest_event(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(event_seq), 0) FROM events").fetchone()[0])


def _session_ids(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT session_id FROM sessions")]


def _final_state(db: pathlib.Path) -> tuple[dict[str, tuple[str, str, str | None]],
                                            Counter[tuple[str, str]],
                                            dict[str, set[str | None]]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        rows = {d: (s, k, e) for d, s, k, e in conn.execute(
            "SELECT delivery_id, status, kind, last_error FROM outbox")}
        events: Counter[tuple[str, str]] = Counter()
        sending_by: dict[str, set[str | None]] = {}
        for delivery_id, kind, claimant in conn.execute(
                "SELECT delivery_id, type, json_extract(data, '$.claimant') FROM events "
                "WHERE delivery_id IS NOT NULL"):
            events[(delivery_id, kind)] += 1
            if kind == "delivery.sending":
                sending_by.setdefault(delivery_id, set()).add(claimant)
        return rows, events, sending_by
    finally:
        conn.close()


async def run_kill_point(workdir: pathlib.Path, seed: int, *, sessions: int = 4,
                         max_kill_after: int = 80, writer: str = "thread") -> KillPointResult:
    """Run one kill point (see the module docstring); raise :class:`CrashFinding` on a broken
    promise, return what was found otherwise."""
    rng = random.Random(seed)
    kill_after = rng.randint(1, max_kill_after)
    await trio.Path(workdir).mkdir(parents=True, exist_ok=True)
    db, sent_file = workdir / "crash.db", workdir / "platform.log"
    acknowledged = await _run_child_until(db, sent_file, sessions, seed, kill_after, writer)
    at_kill, killed_epoch, attempts_at_kill, running_at_kill = _snapshot(db)
    recorded = _recorded(sent_file)
    redelivered, counts = await _restart_and_recover(db)
    rows, events, sending_by = _final_state(db)
    turns, attempts = _turns_and_attempts(db)

    def broken(promise: str, ids: object) -> CrashFinding:
        return CrashFinding(f"seed {seed} (kill after {kill_after} sends): {promise}: {ids}")

    missing = [d for d in acknowledged if d not in rows]
    if missing:
        raise broken("acknowledged intents are missing", missing)
    open_rows = {d: s for d, (s, _, _) in rows.items() if s in ("queued", "sending")}
    if open_rows or counts["queued"] or counts["sending"]:
        raise broken("rows still queued or sending after recovery", open_rows)
    wrong = {d: rows.get(d) for d in recorded if rows.get(d, ("",))[0] not in ("sent", "unknown")}
    if wrong:
        raise broken("rows the platform got are neither sent nor unknown", wrong)
    twice = set(recorded) & set(redelivered)
    if twice:
        raise broken("rows the platform got were delivered again after the restart", twice)
    repeated = [d for d, n in Counter(redelivered).items() if n > 1]
    repeated += [d for (d, kind), n in events.items() if kind == "delivery.sent" and n > 1]
    if repeated:
        raise broken("rows delivered twice", repeated)
    old = f"epoch:{killed_epoch}"
    for delivery_id, (status, _, _) in rows.items():
        if status != "unknown":
            continue
        if at_kill.get(delivery_id, ("",))[0] != "sending":
            raise broken("an unknown row was not sending at the kill", delivery_id)
        if old not in sending_by.get(delivery_id, set()):
            raise broken("an unknown row has no sending event from the killed epoch",
                         delivery_id)
        if events[(delivery_id, "delivery.sent")]:
            raise broken("an unknown row also recorded sent", delivery_id)
    for delivery_id, (status, _) in at_kill.items():
        if status != "sending":
            continue
        if rows[delivery_id][0] != "unknown":
            raise broken("a row sending at the kill is not unknown", delivery_id)
        if events[(delivery_id, "delivery.unknown")] != 1:
            raise broken("an unknown row has not exactly one delivery.unknown event",
                         (delivery_id, events[(delivery_id, "delivery.unknown")]))
        if attempts[delivery_id] != attempts_at_kill[delivery_id]:
            raise broken("recovery changed the attempts of a row it made unknown",
                         (delivery_id, attempts_at_kill[delivery_id], attempts[delivery_id]))
    still_running = [t for t, (s, _) in turns.items() if s == "running"]
    if still_running:
        raise broken("turns left running after recovery", still_running)
    cut = {t: turns[t] for t in running_at_kill if turns[t] != ("failed", _DEAD_TURN)}
    if cut:
        raise broken("turns the kill left running did not end failed as dead turns", cut)
    stale = [d for d, (s, k) in at_kill.items() if s == "queued" and k == "progress"]
    replayed = [d for d in stale if rows[d][0] != "failed" or rows[d][2] != "stale_progress"]
    if replayed or set(stale) & set(redelivered):
        raise broken("progress left queued was replayed", replayed)
    statuses = Counter(s for s, _, _ in rows.values())
    return KillPointResult(
        seed=seed, kill_after=kill_after, acknowledged=len(acknowledged), rows=len(rows),
        recorded_by_platform=len(recorded),
        sending_at_kill=sum(s == "sending" for s, _ in at_kill.values()),
        queued_at_kill=sum(s == "queued" for s, _ in at_kill.values()),
        unknown=statuses["unknown"], redelivered=len(redelivered),
        unrouted=statuses["unrouted"], stale_progress=len(stale))


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "child":
    trio.run(child_main, sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
             sys.argv[6])
