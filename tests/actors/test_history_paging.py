"""Paging history: ``rt.history(session_id, model_context, *, limit=, before=)``.

A host that builds a model's context from a long-lived session reads a page (the latest
``limit`` rows, or those before a message it has) instead of every row; a page costs the same
in a session of any length.
"""

from __future__ import annotations

import functools
import sqlite3

import pytest

from tidings.errors import SessionNotFoundError, ValidationError
from tidings.store import MAX_INTEGER, Call
from tidings.store import _queries as queries


async def _written(rt, texts: list[tuple[str, str]]) -> str:
    """A session whose history is *texts* (``(text, policy)``), written by one turn."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        for text, policy in texts:
            await ctx.output.send_text(text, history_policy=policy, visible=False)
    return session_id


def _texts(page) -> list[str]:
    return [message.text for message in page]


async def test_limit_keeps_the_latest_rows_oldest_first(rt) -> None:
    session_id = await _written(rt, [(str(i), "persist") for i in range(5)])
    assert _texts(await rt.history(session_id, limit=2)) == ["3", "4"]
    assert _texts(await rt.history(session_id, limit=1)) == ["4"]
    assert _texts(await rt.history(session_id, limit=5)) == ["0", "1", "2", "3", "4"]
    assert _texts(await rt.history(session_id, limit=50)) == ["0", "1", "2", "3", "4"]
    assert _texts(await rt.history(session_id, limit=None)) == ["0", "1", "2", "3", "4"]
    assert await rt.history(await rt.create_session(channel="web"), limit=3) == []


async def test_before_pages_backwards_to_the_first_row(rt) -> None:
    session_id = await _written(rt, [(str(i), "persist") for i in range(7)])
    everything = await rt.history(session_id)
    pages = [await rt.history(session_id, limit=3)]
    while pages[-1]:
        pages.append(await rt.history(session_id, limit=3, before=pages[-1][0].message_id))
    assert [_texts(page) for page in pages] == [["4", "5", "6"], ["1", "2", "3"], ["0"], []]
    assert [message for page in reversed(pages) for message in page] == everything
    # before alone: every row older than the message
    assert _texts(await rt.history(session_id, before=everything[3].message_id)) == [
        "0", "1", "2"]


async def test_the_limit_counts_rows_after_the_model_context_filter(rt) -> None:
    session_id = await _written(rt, [("a", "persist"), ("b", "model_hidden"),
                                     ("c", "persist"), ("d", "model_hidden"),
                                     ("e", "persist"), ("f", "model_hidden")])
    assert _texts(await rt.history(session_id, True, limit=2)) == ["c", "e"]
    assert _texts(await rt.history(session_id, limit=2)) == ["e", "f"]
    everything = await rt.history(session_id)
    # a model-hidden row can mark the page's end: the model-visible rows older than it
    assert _texts(await rt.history(session_id, model_context=True, limit=5,
                                   before=everything[3].message_id)) == ["a", "c"]


@pytest.mark.parametrize("limit", [0, -1, True, False, 1.0, 2.5, "3", MAX_INTEGER + 1])
async def test_a_bad_limit_is_refused_by_name(rt, limit) -> None:
    session_id = await _written(rt, [("a", "persist")])
    with pytest.raises(ValidationError) as caught:
        await rt.history(session_id, limit=limit)
    assert caught.value.field == "limit"
    # refused before anything is read: an unknown session is not looked at
    with pytest.raises(ValidationError) as caught:
        await rt.history("session_nobody", limit=limit)
    assert caught.value.field == "limit"


@pytest.mark.parametrize("before", [1, b"msg", "", "\ud800", ["msg"]])
async def test_a_before_that_is_no_id_is_refused_by_name(rt, before) -> None:
    session_id = await _written(rt, [("a", "persist")])
    with pytest.raises(ValidationError) as caught:
        await rt.history(session_id, before=before)
    assert caught.value.field == "before"
    with pytest.raises(ValidationError) as caught:
        await rt.history("session_nobody", before=before)
    assert caught.value.field == "before"


async def test_a_before_of_another_session_or_of_no_message_is_refused_by_name(rt) -> None:
    session_id = await _written(rt, [("a", "persist"), ("b", "persist")])
    other = await _written(rt, [("x", "persist")])
    [theirs] = await rt.history(other)
    for before in (theirs.message_id, "msg_nothing", "m" * 5000):
        with pytest.raises(ValidationError, match="before") as caught:
            await rt.history(session_id, limit=1, before=before)
        assert caught.value.field == "before"
    # the session's own rows still page, and an unknown session is still not found
    [first, _] = await rt.history(session_id)
    assert await rt.history(session_id, before=first.message_id) == []
    with pytest.raises(SessionNotFoundError):
        await rt.history("session_nobody", limit=1, before=theirs.message_id)


def _fill(session_id: str, count: int, conn: sqlite3.Connection) -> None:
    conn.executemany(
        "INSERT INTO messages (message_id, session_id, role, kind, text, policy, visible, "
        "model_visible, created_at, updated_at) VALUES (?, ?, 'assistant', 'text', ?, "
        "'persist', 1, ?, 0, 0)",
        ((f"{session_id}-{i}", session_id, str(i), i % 2) for i in range(count)))


def _page_cost(db_path, session_id: str, count: int) -> tuple[int, list[str]]:
    """The SQLite VM steps of reading one page of *session_id* (5 model-visible rows before
    its tenth-from-last row), and the query plans of the statements it ran."""
    conn = sqlite3.connect(db_path)
    try:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        steps = 0

        def count_step() -> int:
            nonlocal steps
            steps += 1
            return 0

        conn.set_progress_handler(count_step, 1)
        page = queries.history(conn, session_id, model_context=True, limit=5,
                               before=f"{session_id}-{count - 10}")
        conn.set_progress_handler(None, 1)
        conn.set_trace_callback(None)
        assert _texts(page) == [str(i) for i in range(count - 19, count - 10, 2)]
        plans = [" / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
                 for sql in statements if "messages" in sql]
        return steps, plans
    finally:
        conn.close()


async def test_a_page_costs_the_same_in_a_session_of_any_length(rt, db_path) -> None:
    short = await rt.create_session(channel="web")
    long = await rt.create_session(channel="web")
    await rt.store.commit([Call(functools.partial(_fill, short, 20)),
                           Call(functools.partial(_fill, long, 20_000))])
    short_steps, plans = _page_cost(db_path, short, 20)
    long_steps, long_plans = _page_cost(db_path, long, 20_000)
    assert plans == long_plans
    # the message is found by its id, the page through messages_session: no scan of the
    # session's rows, no sort
    assert plans == ["SEARCH messages USING INDEX sqlite_autoindex_messages_1 (message_id=?)",
                     "SEARCH messages USING INDEX messages_session "
                     "(session_id=? AND history_id<?)"]
    # deterministic (VM steps, not time): a page of 20,000 rows reads what one of 20 does
    assert long_steps <= short_steps * 1.1
