"""Rules of the delivery runtime (issue 3, DESIGN.md "History") that no other test pinned:

- questions fail closed without an *interactive* route: a route bound to the session that only
  delivers is no route to ask (``prompt_user`` / ``request_approval`` are optional), and a child
  session's questions never reach its parent's route, as its output does not;
- ``failure_history_text`` replaces only the text of the row it rewrites: its kind, policy,
  flags, ids and creation time stay as written (a ``model_hidden`` image stays one);
- a text send's ``history_text`` is what history (and so a later model) keeps, while the route
  gets the text itself.
"""

from __future__ import annotations

import trio

from tidings.actors import ApprovalDecision
from tidings.testing import MemoryRoute


class DeliverOnly:
    """A route with ``deliver`` and nothing else: not interactive."""

    def __init__(self) -> None:
        self.delivered: list[object] = []

    async def deliver(self, outbound: object) -> None:
        self.delivered.append(outbound)


async def test_a_route_that_only_delivers_is_no_one_to_ask(rt, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = DeliverOnly()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            decision = await ctx.request_approval("deploy")
            answer = await ctx.prompt_user("Which branch?")
    assert decision == ApprovalDecision(False, "no_interactive_route")
    assert (answer.text, answer.reason) == (None, "no_interactive_route")
    assert route.delivered == []  # not asked through deliver() either


async def test_a_child_sessions_questions_never_reach_its_parents_route(
        rt, autojump_clock) -> None:
    parent = await rt.create_session(channel="web")
    child = await rt.create_session(channel="web", parent_session_id=parent)
    parent_route = MemoryRoute()
    parent_route.answers.append("main")
    parent_route.decisions.append("allow")
    rt.router.bind(parent, parent_route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(child) as ctx:
            decision = await ctx.request_approval("deploy")
            answer = await ctx.prompt_user("Which branch?")
        assert decision == ApprovalDecision(False, "no_interactive_route")
        assert answer.reason == "no_interactive_route"
        assert (parent_route.prompts, parent_route.approvals) == ([], [])
        child_route = MemoryRoute()
        child_route.decisions.append("allow")
        rt.router.bind(child, child_route)
        async with rt.open_turn(child) as ctx:
            assert await ctx.request_approval("deploy") == ApprovalDecision(True)
    assert [request.session_id for request in child_route.approvals] == [child]
    assert parent_route.approvals == []


async def test_a_failure_rewrite_keeps_every_field_of_the_row_but_its_text(
        rt, workspace, autojump_clock) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute(capabilities={"image"}, fail=RuntimeError("down")))
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_image(
                "chart.png", history_policy="model_hidden", history_text="the Q3 chart",
                failure_history_text="(the Q3 chart could not be shown)")
            turn_id = ctx.turn_id
        [before] = await rt.history(session_id)
        assert await handle.wait() == "failed"
    [after] = await rt.history(session_id)
    assert after.text == "(the Q3 chart could not be shown)"
    assert (after.message_id, after.delivery_id, after.turn_id, after.role, after.kind,
            after.policy, after.visible, after.model_visible, after.created_at) == (
        before.message_id, handle.delivery_id, turn_id, "assistant", "image",
        "model_hidden", True, False, before.created_at)
    assert await rt.history(session_id, model_context=True) == []  # still hidden from it


async def test_a_text_sends_history_text_is_what_history_keeps(rt, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("Here are all 412 log lines: ...",
                                                history_text="(sent the log, 412 lines)")
        assert await handle.wait() == "delivered"
    assert route.texts() == ["Here are all 412 log lines: ..."]
    assert [(m.text, m.kind, m.delivery_id) for m in await rt.history(
        session_id, model_context=True)] == [
        ("(sent the log, 412 lines)", "text", handle.delivery_id)]
