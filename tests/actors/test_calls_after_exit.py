"""Which error an ``rt.*`` call raises once ``open_runtime`` has exited, as README's error
classes say: a call that would start work (a session, a turn, a notice, a prune, a task, a
bind) raises :class:`RuntimeClosedError`, as it does from the moment the runtime starts
stopping; a read, or a write that settles rows already there (an ack, a hand-back, a
release), finds the store closed (:class:`StoreClosedError`). Each README lists examples; every
one it names is checked here, and each test fails when a call moves from one to the other."""

from __future__ import annotations

import inspect
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

import tidings
from tidings.errors import RuntimeClosedError, StoreClosedError

README = pathlib.Path(tidings.__file__).parent / "README.md"

CALLS: dict[str, Callable[[Any, str, str], Any]] = {
    # would start work: RuntimeClosedError
    "create_session": lambda rt, sid, did: rt.create_session("web"),
    "open_turn": lambda rt, sid, did: rt.open_turn(sid),
    "notify": lambda rt, sid, did: rt.notify(sid, "late"),
    "hold_inbound": lambda rt, sid, did: rt.hold_inbound(sid, notice="late"),
    "record_user_message": lambda rt, sid, did: rt.record_user_message(sid, "late"),
    "resolve_conversation": lambda rt, sid, did: rt.resolve_conversation("web", "k"),
    "new_conversation_session": lambda rt, sid, did: rt.new_conversation_session("web", "k"),
    "forget_conversation": lambda rt, sid, did: rt.forget_conversation("web", "k"),
    "prune": lambda rt, sid, did: rt.prune(older_than=0),
    "recover": lambda rt, sid, did: rt.recover(),
    "start_task": lambda rt, sid, did: rt.start_task("late", _nothing),
    "router.bind": lambda rt, sid, did: rt.router.bind(sid, object()),
    # reads and settling writes: StoreClosedError
    "session": lambda rt, sid, did: rt.session(sid),
    "delivery_status": lambda rt, sid, did: rt.delivery_status(did),
    "deliveries": lambda rt, sid, did: rt.deliveries(sid),
    "history": lambda rt, sid, did: rt.history(sid),
    "status_report": lambda rt, sid, did: rt.status_report(),
    "conversation_session": lambda rt, sid, did: rt.conversation_session("web", "k"),
    "confirm": lambda rt, sid, did: rt.confirm([did]),
    "confirm_through": lambda rt, sid, did: rt.confirm_through(sid, 1),
    "requeue": lambda rt, sid, did: rt.requeue(sid, [did]),
    "release_inbound": lambda rt, sid, did: rt.release_inbound(["inbound_late"]),
}
STARTS_WORK = ("create_session", "open_turn", "notify", "hold_inbound", "record_user_message",
               "resolve_conversation", "new_conversation_session", "forget_conversation",
               "prune", "recover", "start_task", "router.bind")


async def _nothing() -> None:
    pass


async def _call(rt: Any, name: str, session_id: str, delivery_id: str) -> None:
    result = CALLS[name](rt, session_id, delivery_id)
    if inspect.isawaitable(result):
        await result
    elif hasattr(result, "__aenter__"):
        async with result:
            raise AssertionError(f"rt.{name} opened after exit")


def _listed(error: str) -> set[str]:
    """The ``rt.*`` calls README's error classes name for *error* (in its parenthesis)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("- **Error classes**"):]
    start = section.index(f"`{error}` (") + len(error) + 4
    depth, end = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(section[end], 0)
        end += 1
    return set(re.findall(r"`rt\.([\w.]+)`", section[start:end]))


@pytest.fixture
async def stopped(db_path, workspace) -> tuple[Any, str, str]:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("before the stop")
    return rt, session_id, handle.delivery_id


@pytest.mark.parametrize("name", CALLS)
async def test_a_call_after_exit_raises_its_documented_error(stopped, name) -> None:
    error = RuntimeClosedError if name in STARTS_WORK else StoreClosedError
    with pytest.raises(error):
        await _call(*stopped[:1], name, *stopped[1:])


@pytest.mark.parametrize(("error", "kind"), [("RuntimeClosedError", RuntimeClosedError),
                                         ("StoreClosedError", StoreClosedError)])
async def test_the_calls_readme_names_raise_that_error_after_exit(stopped, error, kind) -> None:
    named = _listed(error)
    assert named, f"README's {error} names no rt.* call that raises it after a stop"
    assert named <= set(CALLS), sorted(named - set(CALLS))
    for name in sorted(named):
        with pytest.raises(kind):
            await _call(*stopped[:1], name, *stopped[1:])
