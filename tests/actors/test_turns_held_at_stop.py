"""A host's turn that the runtime's stop makes fail keeps the messages it was to answer held.

A host's own turn (``rt.open_turn`` from a nursery around the runtime) is not cancelled by the
runtime's stop: its question is withdrawn and its sends are refused, each with
:class:`RuntimeClosedError`, and a body that lets that error out ends its turn ``failed``. A
failed turn counted as having dealt with its ``inbound_ids``, so they were released with its
end (the writer still takes writes while the runtime stops): the person's message was never
answered, and the next start told them nothing. The stop cut that turn as it cuts a turn it
cancels (``shutdown``): what it held stays held, and recovery tells it."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import RuntimeClosedError

from .conftest import rows
from .test_questions_turn_ended import WaitingRoute


async def _ask(ctx) -> None:
    await ctx.prompt_user("which one?")  # withdrawn by the stop: RuntimeClosedError


async def _ask_then_say_sorry(ctx) -> None:
    try:
        await ctx.prompt_user("which one?")
    except RuntimeClosedError:
        await ctx.output.send_text("sorry, stopping")  # refused: the runtime is stopping


@pytest.mark.parametrize("body", [_ask, _ask_then_say_sorry], ids=["question", "send"])
async def test_a_host_turn_failed_by_the_stop_leaves_its_messages_held(db_path, workspace,
                                                                       body) -> None:
    route = WaitingRoute()
    failures: list[BaseException] = []

    async def host_turn(rt, session_id: str, inbound_id: str) -> None:
        try:
            async with rt.open_turn(session_id, inbound_ids=[inbound_id]) as ctx:
                await body(ctx)
        except RuntimeClosedError as exc:
            failures.append(exc)

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery, \
                tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            inbound_id = await rt.hold_inbound(session_id, notice="not answered: say again",
                                               message_id="m1")
            nursery.start_soon(host_turn, rt, session_id, inbound_id)
            await route.asked.wait()
    assert len(failures) == 1
    assert rows(db_path, "SELECT status FROM turns") == [("failed",)]
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == [(inbound_id,)]

    with trio.fail_after(30):
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            told = await rt.deliveries(session_id)
    assert [(d.kind, d.text) for d in told] == [("notice", "not answered: say again")]
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == []
