"""The runtime's observation APIs: the live event feed, the lifecycle view, history and
sessions, and how they answer bad input."""

from __future__ import annotations

import time

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import DeliveryNotFoundError, SessionNotFoundError, ValidationError
from tidings.store import OUTBOX_STATUSES, queries
from tidings.testing import MemoryRoute

from .conftest import rows


async def test_a_follower_that_outlives_its_runtime_reads_the_rest_and_ends(
        db_path, workspace) -> None:
    seen: list[int] = []
    ended = trio.Event()
    cpu = 0.0

    async def follow(rt, task_status=trio.TASK_STATUS_IGNORED) -> None:
        feed = rt.events(after_seq=0)
        task_status.started()
        async for event in feed:
            seen.append(event.seq)
        ended.set()

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery:
            async with tidings.open_runtime(db_path, workspace=workspace) as rt:
                session_id = await rt.create_session(channel="web")
                rt.router.bind(session_id, MemoryRoute())
                await nursery.start(follow, rt)
                await trio.testing.wait_all_tasks_blocked()
                async with rt.open_turn(session_id) as ctx:
                    handle = await ctx.output.send_text("last words")
                assert await handle.wait() == "delivered"
            # The runtime is closed: the feed must end, not spin on a bus nobody rings. It ends
            # within milliseconds; the bound is for a loaded machine, and only a hang meets it.
            start = time.process_time()
            with trio.move_on_after(20):
                await ended.wait()
            cpu = time.process_time() - start
            nursery.cancel_scope.cancel()
    assert ended.is_set(), f"the feed did not end (spent {cpu:.2f} s of CPU waiting)"
    assert seen == [seq for (seq,) in rows(db_path, "SELECT event_seq FROM events "
                                                    "ORDER BY event_seq")]


async def test_a_follower_whose_read_the_close_overtakes_reads_the_rest_from_the_file(
        db_path, workspace) -> None:
    # The feed saw the runtime open and asked the store's read pool for the next page; the
    # runtime closed before the pool ran the read (under load, a worker thread starts late).
    # The feed must read that page from the file and end, not fail with StoreClosedError.
    seen: list[int] = []
    sessions: set[str | None] = set()
    ended = trio.Event()
    held = trio.Event()
    closed = trio.Event()

    async def follow(rt, task_status=trio.TASK_STATUS_IGNORED) -> None:
        feed = rt.events(after_seq=0)
        task_status.started()
        async for event in feed:
            seen.append(event.seq)
            sessions.add(event.session_id)
        ended.set()

    caught_up = trio.Event()
    holding = False

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery:
            async with tidings.open_runtime(db_path, workspace=workspace) as rt:
                real_read = rt.store.read

                async def read(fn, *args):
                    if fn is queries.events_after and holding:
                        held.set()
                        await closed.wait()
                    page = await real_read(fn, *args)
                    if fn is queries.events_after and not page:
                        caught_up.set()
                    return page

                rt.store.read = read
                await rt.create_session(channel="web")
                await nursery.start(follow, rt)
                # Caught up, waiting for a commit: its reads are in worker threads, and "all
                # tasks blocked" held while one ran, so the hold below could catch a read of
                # the events before ``last`` instead of the one ``last`` wakes.
                await caught_up.wait()
                await trio.testing.wait_all_tasks_blocked()  # from the empty page to the wait
                holding = True
                last = await rt.create_session(channel="web")  # wakes the follower
                await held.wait()
            closed.set()
            await ended.wait()
    assert seen == [seq for (seq,) in rows(db_path, "SELECT event_seq FROM events "
                                                    "ORDER BY event_seq")]
    assert last in sessions  # its events were read from the file


@pytest.mark.parametrize(("kwargs", "field"), [({"status": "Sent"}, "status"),
                                               ({"status": "delivered"}, "status"),
                                               ({"since": "1h"}, "since"),
                                               ({"limit": -1}, "limit"),
                                               ({"limit": "10"}, "limit")])
async def test_deliveries_refuse_bad_filters_naming_the_field(rt, kwargs, field) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        assert await (await ctx.output.send_text("x")).wait() == "unrouted"
    with pytest.raises(ValidationError) as caught:
        await rt.deliveries(**kwargs)
    assert caught.value.field == field


async def test_deliveries_filter_by_every_status(rt) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
    assert await handle.wait() == "unrouted"
    for status in OUTBOX_STATUSES:
        found = [d.delivery_id for d in await rt.deliveries(status=status)]
        assert found == ([handle.delivery_id] if status == "unrouted" else [])


@pytest.mark.parametrize("bad", ["", 123, None, ["dlv_x"]])
async def test_a_delivery_id_that_is_not_a_non_empty_string_is_refused_by_name(rt, bad) -> None:
    for read in (rt.delivery_status, rt.delivery_report, rt.delivery_events):
        with pytest.raises(ValidationError) as caught:
            await read(bad)
        assert caught.value.field == "delivery_id"
    with pytest.raises(DeliveryNotFoundError):
        await rt.delivery_status("dlv_nope")


@pytest.mark.parametrize("bad", ["", 123, ["session_x"]])
async def test_a_session_id_that_is_not_a_non_empty_string_is_refused_by_name(rt, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.history(bad)
    assert caught.value.field == "session_id"
    with pytest.raises(ValidationError) as caught:
        await rt.deliveries(session_id=bad)
    assert caught.value.field == "session_id"


async def test_history_of_an_unknown_session_is_a_lookup_error_not_an_empty_history(rt) -> None:
    session_id = await rt.create_session(channel="web")
    assert await rt.history(session_id) == []
    assert await rt.history(session_id, model_context=True) == []
    for model_context in (False, True):
        with pytest.raises(SessionNotFoundError):
            await rt.history(session_id + "x", model_context=model_context)


async def _first_event(rt, after_seq):
    feed = rt.events(after_seq=after_seq)
    with trio.fail_after(5):  # a string after_seq matched nothing, for ever
        return await feed.__anext__()


@pytest.mark.parametrize("bad", ["3", 2.5, True, -1, 2**63, "10**5000"])
async def test_events_refuse_an_after_seq_that_is_not_a_seq(rt, bad) -> None:
    bad = 10**5000 if bad == "10**5000" else bad  # (pytest cannot name it)
    with pytest.raises(ValidationError) as caught:
        await _first_event(rt, bad)
    assert caught.value.field == "after_seq"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"metadata": {"when": object()}}, "metadata"),
    ({"metadata": [("a", 1)]}, "metadata"),
    ({"parent_session_id": 5}, "parent_session_id"),
    ({"parent_session_id": ""}, "parent_session_id"),
])
async def test_create_session_refuses_bad_arguments_by_name_and_writes_nothing(
        rt, db_path, kwargs, field) -> None:
    before = rows(db_path, "SELECT count(*) FROM sessions")
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", **kwargs)
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM sessions") == before


async def test_child_sessions_nest_and_an_unknown_parent_is_a_lookup_error(rt) -> None:
    parent = await rt.create_session(channel="web")
    child = await rt.create_session(channel="web", parent_session_id=parent)
    grandchild = await rt.create_session(parent_session_id=child)
    assert child.startswith("session_child_")
    assert grandchild.startswith("session_child_")
    assert (await rt.session(grandchild)).parent_session_id == child
    with pytest.raises(SessionNotFoundError):
        await rt.create_session(parent_session_id="session_nope")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"statuses": "queued"}, "statuses"),  # a string is not a list of statuses
    ({"statuses": ()}, "statuses"),
    ({"statuses": ("delivered",)}, "statuses"),
    ({"kinds": "message"}, "kinds"),
    ({"kinds": []}, "kinds"),
    ({"kinds": ("text",)}, "kinds"),
    ({"limit": -1}, "limit"),
    ({"limit": "10"}, "limit"),
    ({"limit": 0}, "limit"),  # an empty page, which a pager reads as the end: nothing replayed
])
async def test_stored_deliveries_refuse_bad_filters_by_name(rt, kwargs, field) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        assert await (await ctx.output.send_text("x")).wait() == "unrouted"
    assert len(await rt.stored_deliveries(session_id, statuses=("unrouted",))) == 1
    with pytest.raises(ValidationError) as caught:
        await rt.stored_deliveries(session_id, **kwargs)
    assert caught.value.field == field


async def test_the_session_record_is_read_as_it_is_now_not_as_first_read(rt) -> None:
    session_id = await rt.create_session(channel="web")
    assert (await rt.session(session_id)).last_seq == 0
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("a")
        handle = await ctx.output.send_text("b")
    assert await handle.wait() == "unrouted"
    assert (await rt.session(session_id)).last_seq == 2 == await rt.last_seq(session_id)


async def test_a_forgotten_conversations_session_reads_closed(rt) -> None:
    session_id, created = await rt.resolve_conversation("web", "web:dm:1")
    assert created
    assert (await rt.session(session_id)).state == "active"
    assert await rt.forget_conversation("web", "web:dm:1") == session_id
    assert (await rt.session(session_id)).state == "closed"
