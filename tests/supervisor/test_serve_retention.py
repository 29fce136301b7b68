"""``tidings serve`` with ``[retention]``: the config keys, and the periodic prune."""

from __future__ import annotations

import functools
import itertools
import logging
import pathlib
import re
import sqlite3
import threading
import time

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import Runtime
from tidings.errors import ConfigError, StoreError
from tidings.store import Call
from tidings.store import _prune as prune_module
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl
from tidings.testing import MemoryRoute

from ..io_clock import io_clock

TOKEN = "serve-test-token"
DAY = 86_400.0


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """The root conftest's clock for tests with I/O (this directory's jumps at once, which
    a serve with a database and sockets must not): it holds still while SQLite works."""
    return io_clock()


def _write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    return path


def test_retention_is_off_unless_configured(tmp_path) -> None:
    assert load_config().keep is None
    config = load_config(_write(tmp_path, '[retention]\nkeep = "30d"\n'))
    assert (config.keep, config.prune_interval) == (30 * DAY, 3600.0)
    config = load_config(_write(tmp_path, '[retention]\nkeep = 7200\ninterval = "15m"\n'))
    assert (config.keep, config.prune_interval) == (7200.0, 900.0)


@pytest.mark.parametrize(("text", "field"), [
    ('keep = "30 days"', "retention.keep"),
    ('keep = "-1d"', "retention.keep"),
    ("keep = -1", "retention.keep"),
    ("keep = true", "retention.keep"),
    ("keep = nan", "retention.keep"),
    ("keep = inf", "retention.keep"),
    (f"keep = {10 ** 400}", "retention.keep"),
    ('keep = "30d"\ninterval = "0s"', "retention.interval"),
    ('keep = "30d"\ninterval = "often"', "retention.interval"),
    ('keep = "30d"\ninterval = [1]', "retention.interval"),
    ('interval = "1h"', "retention.keep"),  # nothing would ever be pruned
    ('kept = "30d"', "retention.kept"),
])
def test_bad_retention_is_refused_naming_the_key(tmp_path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, f"[retention]\n{text}\n"))
    assert caught.value.field == field
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("interval", ['"0.001s"', "0.001", '"0.5s"', "0.999"])
def test_an_interval_under_a_second_is_refused_naming_it(tmp_path, interval: str) -> None:
    """Any interval above 0 was taken: a millisecond one made the retention child a busy
    loop of prunes through the writer, each scanning the outbox and the events."""
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, f'[retention]\nkeep = "30d"\ninterval = {interval}\n'))
    assert caught.value.field == "retention.interval"
    assert "at least 1 second" in str(caught.value)
    assert load_config(_write(tmp_path, '[retention]\nkeep = "30d"\ninterval = 1\n')
                       ).prune_interval == 1.0


@pytest.mark.parametrize("keep", ["0", '"0s"', '"59m"', "3599.5"])
def test_a_keep_under_an_hour_is_refused_naming_it(tmp_path, keep: str) -> None:
    """A keep of 0 was taken: the client message ids a serve prune forgets are its dedupe
    window, so a gateway client's resend after a reconnect (or a platform's retry) of a
    message answered meanwhile ran as a new message, a second turn. The prune at start, just
    after recovery told the messages a crash cut, forgot their ids before the clients were
    back to send them again."""
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, f"[retention]\nkeep = {keep}\n"))
    assert caught.value.field == "retention.keep"
    assert "at least 1 hour" in str(caught.value)
    assert load_config(_write(tmp_path, '[retention]\nkeep = "1h"\n')).keep == 3600.0
    assert load_config(_write(tmp_path, "[retention]\nkeep = 3600\n")).keep == 3600.0


async def _old_database(db: pathlib.Path, workspace: pathlib.Path) -> None:
    """Two deliveries sent 40 days ago and one sent now."""
    clock = [time.time() - 40 * DAY]
    async with tidings.open_runtime(db, workspace=workspace, grace=0,
                                    clock=lambda: clock[0]) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            for text in ("old 1", "old 2"):
                assert await (await ctx.output.send_text(text)).wait() == "delivered"
            clock[0] = time.time()
            assert await (await ctx.output.send_text("new")).wait() == "delivered"


def _outbox(db: pathlib.Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT text FROM outbox ORDER BY seq")]
    finally:
        conn.close()


async def test_serve_prunes_at_start_and_every_interval(tmp_path, caplog, monkeypatch,
                                                        autojump_clock) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    calls: list[float] = []
    first_done, fourth = trio.Event(), trio.Event()
    original = Runtime.prune

    async def prune(self, *, older_than, on_chunk=None):
        calls.append(trio.current_time())
        if len(calls) == 4:
            fourth.set()
        if len(calls) == 2:  # a store error: logged, and tried again at the next interval
            raise StoreError("disk I/O error")
        try:
            return await original(self, older_than=older_than, on_chunk=on_chunk)
        finally:
            first_done.set()

    monkeypatch.setattr(Runtime, "prune", prune)
    db = tmp_path / "serve.db"
    await _old_database(db, tmp_path)
    config = load_config(_write(tmp_path, '[retention]\nkeep = "30d"\ninterval = "1m"\n'),
                         db=str(db), port=0, token=TOKEN, workspace=str(tmp_path))
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control))
        children = [child.name for child in info.supervisor.statistics().children]
        assert children == ["gateway", "retention"]
        with trio.fail_after(60):
            await first_done.wait()
            assert _outbox(db) == ["new"]
        with trio.fail_after(5 * 60):  # three more prunes, one a minute, deleting nothing
            await fourth.wait()
        control.request("test")
    assert len(calls) == 4
    assert all(b - a >= 60 for a, b in itertools.pairwise(calls))
    messages = [r.getMessage() for r in caplog.records]
    pruned = [m for m in messages if "event=pruned" in m]
    assert len(pruned) == 1
    assert "deliveries=2 work_items=2 events=" in pruned[0]
    assert f"keep={30 * DAY:g}" in pruned[0]
    [failed] = [m for m in messages if "event=prune_failed" in m]
    assert 'error="disk I/O error"' in failed


async def test_a_prune_the_stop_cuts_short_says_what_it_deleted(tmp_path, caplog, monkeypatch,
                                                                 autojump_clock) -> None:
    """A stop while a prune is still going (chunk after chunk) cancels it; the chunks it had
    committed stay deleted, and were never logged: 17,000 rows could go with no
    ``event=pruned`` line (found by two hunts). One line now, ``cut_short=yes``."""
    caplog.set_level(logging.INFO, logger="tidings")
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    first_chunk = trio.Event()
    original = Runtime.prune

    async def prune(self, *, older_than, on_chunk=None):
        commit = self.store.commit

        async def one_chunk_then_hang(ops, **kwargs):
            if first_chunk.is_set():
                await trio.sleep_forever()  # the second chunk: until the stop cancels it
            return await commit(ops, **kwargs)

        def chunk_done(report):
            on_chunk(report)
            first_chunk.set()

        self.store.commit = one_chunk_then_hang
        return await original(self, older_than=older_than, on_chunk=chunk_done)

    monkeypatch.setattr(Runtime, "prune", prune)
    db = tmp_path / "serve.db"
    await _old_database(db, tmp_path)
    config = load_config(_write(tmp_path, '[retention]\nkeep = "30d"\n'),
                         db=str(db), port=0, token=TOKEN, workspace=str(tmp_path))
    control = StopControl()
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve, config, control))
        with trio.fail_after(60):
            await first_chunk.wait()
        control.request("test")
    assert _outbox(db) == ["old 2", "new"]  # the first chunk's delivery went, and stays gone
    [pruned] = [r.getMessage() for r in caplog.records if "event=pruned" in r.getMessage()]
    assert "deliveries=1 work_items=1 " in pruned
    assert pruned.endswith(" cut_short=yes")


async def test_a_chunk_that_commits_after_the_stop_cut_its_prune_is_logged(
        tmp_path, caplog, monkeypatch, autojump_clock) -> None:
    """A stop cancels the prune, but not a chunk the writer already has (a cancel does not
    withdraw a write): with the writer busy, the chunk committed as the runtime closed, after
    the prune's cut_short line was written (of nothing: no line at all), so two deliveries
    went with no ``event=pruned`` line saying so, where README says one the stop cut short
    says what its committed chunks deleted."""
    caplog.set_level(logging.INFO, logger="tidings")
    holding, cut = trio.Event(), trio.Event()
    entered, gate = threading.Event(), threading.Event()
    original = Runtime.prune

    def busy(conn: sqlite3.Connection) -> None:  # the writer's thread, inside a batch
        entered.set()
        gate.wait(30)

    async def prune(self, *, older_than, on_chunk=None):
        self.store.commit_nowait([Call(busy)], on_commit=lambda _: None, on_error=lambda _: None)
        await trio.to_thread.run_sync(entered.wait, 30)
        holding.set()
        try:  # its chunk waits behind busy
            return await original(self, older_than=older_than, on_chunk=on_chunk)
        finally:
            cut.set()

    monkeypatch.setattr(Runtime, "prune", prune)
    db = tmp_path / "serve.db"
    await _old_database(db, tmp_path)
    config = load_config(_write(tmp_path, '[retention]\nkeep = "30d"\n'),
                         db=str(db), port=0, token=TOKEN, workspace=str(tmp_path))
    control = StopControl()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(serve, config, control))
            with trio.fail_after(60):
                await holding.wait()
                await trio.testing.wait_all_tasks_blocked()
                control.request("test")
                await cut.wait()  # the prune is cancelled, its chunk still with the writer
            gate.set()
    finally:
        gate.set()
    assert _outbox(db) == ["new"]  # the chunk committed: both old deliveries went
    lines = [r.getMessage() for r in caplog.records if "event=pruned" in r.getMessage()]
    assert lines, "two deliveries deleted, and no event=pruned line"
    assert sum(int(re.search(r"deliveries=(\d+)", line)[1]) for line in lines) == 2
    assert all(line.endswith(" cut_short=yes") for line in lines)


async def test_serve_without_retention_deletes_nothing(tmp_path, caplog,
                                                       autojump_clock) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    db = tmp_path / "serve.db"
    await _old_database(db, tmp_path)
    config = load_config(db=str(db), port=0, token=TOKEN, workspace=str(tmp_path))
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control))
        assert [c.name for c in info.supervisor.statistics().children] == ["gateway"]
        await trio.sleep(120)
        control.request("test")
    assert _outbox(db) == ["old 1", "old 2", "new"]
    assert not any("event=pruned" in r.getMessage() for r in caplog.records)
