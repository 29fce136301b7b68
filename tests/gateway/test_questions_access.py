"""The gateway channel's ``access`` names the clients (``hello.client``) that may talk to the
agent; another client is still welcomed in the conversation, and each message it sends is
refused. Its answers were not: a client ``access`` does not allow was sent the approval
request an allowed client's message led to, and its ``allow`` was taken, so it approved the
very action it could not have asked for. An answer or decision from such a client is refused
(``error`` ``refused``), never applied, and the question stays open for an allowed one."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig

from .conftest import TOKEN, frame_is


class Approver:
    """An agent that asks to approve ``deploy`` (or asks a question) and replies with the
    outcome."""

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        if turn.text == "ask":
            answer = await turn.prompt_user("which branch?", timeout=60)
            await turn.send_chunk(f"answer: {answer}")
        else:
            decision = await turn.request_approval("deploy", timeout=60)
            await turn.send_chunk(f"allowed: {decision.allowed}")


@pytest.mark.parametrize("kind", ["approval", "prompt"])
async def test_a_client_access_does_not_allow_cannot_answer(rt, connect, kind) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", access=["alice"]), agent=Approver())
    try:
        frames = await _ask_both(gateway, connect, kind)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    expected = "allowed: False" if kind == "approval" else "answer: main"
    assert frames[-1]["text"] == expected


async def _ask_both(gateway, connect, kind) -> list[dict]:
    """Alice's message asks; Mallory's answer is refused; Alice's is the answer."""
    asked = "approval_request" if kind == "approval" else "prompt"
    with trio.fail_after(30):  # hang guard
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "team", client="alice") as alice, \
                connect(f"ws://127.0.0.1:{port}", "team", client="mallory") as mallory:
            await alice.send({"type": "message", "text": "ask" if kind == "prompt" else "go",
                              "id": "m1"})
            [*_, question] = await mallory.receive_until(frame_is(asked))
            await alice.receive_until(frame_is(asked))
            if kind == "approval":
                mallorys = {"type": "approval", "request_id": question["request_id"],
                        "decision": "allow"}
                alices = {**mallorys, "decision": "deny"}
            else:
                mallorys = {"type": "answer", "prompt_id": question["prompt_id"], "text": "prod"}
                alices = {**mallorys, "text": "main"}
            await mallory.send(mallorys)
            [*_, refused] = await mallory.receive_until(
                lambda f: f["type"] in ("error", "prompt_closed"))
            assert refused["type"] == "error", refused
            assert refused["code"] == "refused"
            await alice.send(alices)
            return await alice.receive_until(frame_is("delivery", kind="message"))


@pytest.mark.parametrize("kind", ["approval", "prompt"])
async def test_a_conversation_with_no_client_that_may_answer_is_not_asked(rt, connect,
                                                                         kind) -> None:
    """Only clients ``access`` does not allow are connected: none of them may answer, so the
    question fails closed at once (``no_interactive_route``), as with nobody connected, rather
    than being shown to them and waiting its whole expiry."""
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", access=["alice"]))
    try:
        with trio.fail_after(30):  # hang guard: the question waited its 300 s
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", "team", client="mallory") as mallory:
                session_id = mallory.session_id
                async with rt.open_turn(session_id, mode="parallel") as ctx:
                    if kind == "prompt":
                        outcome = await ctx.prompt_user("which branch?")
                        assert (outcome.text, outcome.reason) == (None, "no_interactive_route")
                    else:
                        outcome = await ctx.request_approval("deploy")
                        assert (outcome.allowed, outcome.reason) == (False,
                                                                     "no_interactive_route")
                await mallory.send({"type": "ping"})
                frames = await mallory.receive_until(frame_is("pong"))
                assert not [f for f in frames if f["type"] in ("prompt", "approval_request")]
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
