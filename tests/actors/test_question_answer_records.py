"""What a route answers a question with, as a record of its own: an ``ApprovalDecision`` whose
``allowed`` is no real bool, or a ``PromptAnswer`` whose ``text`` is neither a string nor None.

The router hands a route's ``ApprovalDecision`` (and ``PromptAnswer``) to the agent as it is.
An adapter that builds one from its platform's payload (``ApprovalDecision(payload["ok"])``,
where the payload says ``"false"``, ``"no"`` or ``0``) made a decision that reads allowed to
every ``if decision.allowed:``: the request the person denied went ahead. The records refuse
such a field when they are made, naming it, so the route's call raises and the question fails
closed (``route_failed``, logged), as any route that raises does."""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.errors import NotABoolError


class _PayloadRoute:
    """Answers an approval with ``ApprovalDecision(<the platform's value>)``."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def deliver(self, outbound) -> None:
        pass

    async def request_approval(self, request) -> ApprovalDecision:
        return ApprovalDecision(self.value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["false", "no", 1, None])
async def test_a_decision_whose_allowed_is_no_bool_is_refused_and_denies(rt, value) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _PayloadRoute(value))
    async with rt.open_turn(session_id) as ctx:
        decision = await ctx.request_approval("deploy")
    assert (decision.allowed, decision.reason) == (False, "route_failed")
    with pytest.raises(NotABoolError) as caught:
        ApprovalDecision(value)  # type: ignore[arg-type]
    assert caught.value.field == "allowed"
    with pytest.raises(NotABoolError):  # a host asking itself gets the route's error
        await rt.router.request_approval(ApprovalRequest(session_id, "deploy", "request_1"))


async def test_a_decision_of_a_real_bool_is_taken_as_it_is(rt) -> None:
    session_id = await rt.create_session(channel="web")
    for value, reason in ((True, None), (False, "denied")):  # (a denial says why: below)
        rt.router.bind(session_id, _PayloadRoute(value))
        async with rt.open_turn(session_id) as ctx:
            assert await ctx.request_approval("deploy") == ApprovalDecision(value, reason)


class _AnswerRoute:
    """Answers a prompt with ``PromptAnswer(<the platform's value>)``."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def deliver(self, outbound) -> None:
        pass

    async def prompt_user(self, prompt) -> PromptAnswer:
        return PromptAnswer(self.value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [42, b"blue", ["blue"]])
async def test_an_answer_whose_text_is_no_string_is_refused_and_fails_closed(rt, value) -> None:
    """The agent's ``turn.prompt_user`` returns ``str | None``: ``42`` from a platform's JSON
    reached it as it was, and its ``answer.strip()`` failed the turn."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _AnswerRoute(value))
    async with rt.open_turn(session_id) as ctx:
        answer = await ctx.prompt_user("how many?")
    assert (answer.text, answer.reason) == (None, "route_failed")
    with pytest.raises(TypeError, match=r"^text: "):
        PromptAnswer(value)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # a host asking itself gets the route's error
        await rt.router.prompt_user(Prompt(session_id, "how many?", "prompt_1"))


async def test_an_answer_of_text_or_none_is_taken_as_it_is(rt) -> None:
    session_id = await rt.create_session(channel="web")
    for value, reason in (("3", None), ("", None), (None, "declined")):  # (below)
        rt.router.bind(session_id, _AnswerRoute(value))
        async with rt.open_turn(session_id) as ctx:
            assert await ctx.prompt_user("how many?") == PromptAnswer(value, reason)



class _Returns:
    """Answers every question with *value*, a record of the route's own."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def deliver(self, outbound) -> None:
        pass

    async def prompt_user(self, prompt) -> object:
        return self.value

    async def request_approval(self, request) -> object:
        return self.value


@pytest.mark.parametrize(("answer", "expected"), [
    (PromptAnswer(None), PromptAnswer(None, "declined")),
    (PromptAnswer(None, "busy"), PromptAnswer(None, "busy")),
    (PromptAnswer("3"), PromptAnswer("3")),
])
async def test_a_route_s_own_unanswered_prompt_says_why(rt, answer, expected) -> None:
    """``PromptAnswer``: 'text is None when it was not answered (reason says why)'. A route
    that answered with its own ``PromptAnswer(None)`` gave the agent ``reason=None``, which
    none of the reasons it may branch on matches: it reads as the route's ``None`` does,
    ``declined``; a reason the route gave is kept."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _Returns(answer))
    async with rt.open_turn(session_id) as ctx:
        assert await ctx.prompt_user("how many?") == expected
    assert await rt.router.prompt_user(Prompt(session_id, "q?", "prompt_1")) == expected


@pytest.mark.parametrize(("decision", "expected"), [
    (ApprovalDecision(False), ApprovalDecision(False, "denied")),
    (ApprovalDecision(False, "policy"), ApprovalDecision(False, "policy")),
    (ApprovalDecision(True), ApprovalDecision(True)),
])
async def test_a_route_s_own_denial_says_why(rt, decision, expected) -> None:
    """``ApprovalDecision``: 'anything but an explicit allow is a denial with a reason'. A
    route's own ``ApprovalDecision(False)`` reached the agent with ``reason=None``: it reads
    as the route's ``False`` does, ``denied``; a reason the route gave is kept."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, _Returns(decision))
    async with rt.open_turn(session_id) as ctx:
        assert await ctx.request_approval("deploy") == expected
    assert await rt.router.request_approval(
        ApprovalRequest(session_id, "deploy", "request_1")) == expected
