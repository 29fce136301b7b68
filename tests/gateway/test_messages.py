"""Messages through the gateway: commands, steer, durable message ids, prompts, approvals."""

from __future__ import annotations

import collections

import pytest
import trio

import tidings
from tidings.channels import GatewayChannel, GatewayConfig


class GatedAgent:
    """``hold:NAME`` streams a chunk then waits for ``release:NAME`` (from any conversation);
    ``ask:Q`` prompts; ``approve:A`` asks for approval; anything else is echoed."""

    def __init__(self) -> None:
        self.gates: collections.defaultdict[str, trio.Event] = collections.defaultdict(
            trio.Event)

    async def run(self, turn) -> None:
        text = turn.text
        if text.startswith("hold:"):
            name = text[5:]
            await turn.send_chunk(f"holding {name}")
            await self.gates[name].wait()
            await turn.send_chunk(f" released {name}")
        elif text.startswith("release:"):
            self.gates[text[8:]].set()
            await turn.send_chunk(f"released {text[8:]}")
        elif text.startswith("ask:"):
            answer = await turn.prompt_user(text[4:], timeout=30)
            await turn.send_chunk(f"answer: {answer}")
        elif text.startswith("approve:"):
            timeout = 0.05 if text.endswith("!") else 30
            decision = await turn.request_approval(text[8:], details={"why": "test"},
                                                   timeout=timeout)
            await turn.send_chunk(f"allowed={decision.allowed} reason={decision.reason}")
        else:
            await turn.send_chunk(turn.prompt)


async def _until(client, predicate) -> list[dict]:
    with trio.fail_after(10):
        return await client.receive_until(predicate)


async def _all(client, *predicates) -> list[dict]:
    """Frames until each predicate has matched one (in any order)."""
    waiting = list(predicates)

    def done(frame: dict) -> bool:
        for predicate in list(waiting):
            if predicate(frame):
                waiting.remove(predicate)
        return not waiting

    return await _until(client, done)


async def test_cancel_clear_and_steer_reach_the_running_turn(rt, serve_gateway, connect,
                                                             is_frame) -> None:
    async with serve_gateway(rt, agent=GatedAgent()) as (_gateway, url), \
            connect(url, "alpha") as client:
        held = await client.message("hold:a")
        await _until(client, is_frame("lifecycle", event="text_chunk", message_id=held))
        await client.message("/cancel")
        frames = await _all(client, is_frame("delivery", command="cancel"),
                            is_frame("lifecycle", event="cancelled", reason="cancel_command",
                                     message_id=held))
        [answer] = [f for f in frames if f["type"] == "delivery"]
        assert answer["text"] == "Cancelled the running request."

        held = await client.message("hold:b")
        await _until(client, is_frame("lifecycle", event="text_chunk", message_id=held))
        steer = await client.message("after the steer")
        frames = await _all(client, is_frame("lifecycle", event="completed", message_id=steer),
                            is_frame("delivery", kind="message"))
        events = [(f.get("event"), f.get("message_id"), f.get("reason")) for f in frames
                  if f["type"] == "lifecycle"]
        assert ("cancelled", held, "steer") in events
        assert events.index(("cancelled", held, "steer")) < events.index(
            ("started", steer, None))
        [reply] = [f for f in frames if f["type"] == "delivery"]
        assert reply["text"].endswith("after the steer")
        assert "new message while you were working" in reply["text"]

        session_id = reply["session_id"]
        held = await client.message("hold:c")
        await _until(client, is_frame("lifecycle", event="text_chunk", message_id=held))
        await client.message("/clear")
        await _all(client, is_frame("delivery", command="clear"),
                   is_frame("lifecycle", event="cancelled", reason="clear", message_id=held))
        await client.message("fresh start")
        frames = await _until(client, is_frame("delivery", kind="message"))
        assert frames[-1]["session_id"] != session_id
        assert frames[-1]["seq"] == 1


async def test_a_repeated_message_id_is_not_processed_twice_even_after_a_restart(
        db_path, workspace, is_frame) -> None:
    settings = GatewayConfig(token="gateway-test-token", port=0)

    async def send_twice(expect_first: str) -> list[str]:
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            gateway = GatewayChannel(rt, settings)
            try:
                async with gateway.serving() as port:
                    url = f"ws://127.0.0.1:{port}"
                    from tidings.channels import GatewayClient
                    async with GatewayClient.connect(url, token=settings.token,
                                                     conversation="alpha") as client:
                        outcomes = []
                        for _ in range(2):
                            await client.message("once only", message_id="msg-1")
                            frames = await _until(client, is_frame("accepted", id="msg-1"))
                            accepted = frames[-1]
                            outcomes.append("duplicate" if accepted.get("duplicate")
                                            else accepted["outcome"])
                        return outcomes
            finally:
                with trio.CancelScope(shield=True):
                    await gateway.aclose()

    assert await send_twice("started") == ["started", "duplicate"]
    assert await send_twice("duplicate") == ["duplicate", "duplicate"]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        history = [m for m in await rt.history(await rt.conversation_session(
            "gateway", "gateway:conv:alpha")) if m.role == "user"]
    assert [m.text for m in history] == ["once only"]


async def test_messages_are_refused_while_the_server_stops(rt, serve_gateway, connect,
                                                           is_frame) -> None:
    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as client:
        gateway.stop_accepting()
        message_id = await client.message("too late")
        [frame] = await _until(client, is_frame("error"))
        assert (frame["code"], frame["ref"]) == ("shutting_down", message_id)


async def test_a_prompt_is_answered_once(rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt, agent=GatedAgent()) as (_gateway, url), \
            connect(url, "alpha") as client, connect(url, "alpha") as other:
        await client.message("ask:your name?")
        prompt = (await _until(client, is_frame("prompt")))[-1]
        assert prompt["text"] == "your name?"
        assert (await _until(other, is_frame("prompt")))[-1] == prompt  # both devices
        await client.send({"type": "answer", "prompt_id": prompt["prompt_id"], "text": "Ada"})
        frames = await _all(client, is_frame("delivery", kind="message"),
                            is_frame("prompt_closed", reason="answered"))
        assert [f["text"] for f in frames if f["type"] == "delivery"] == ["answer: Ada"]
        await other.send({"type": "answer", "prompt_id": prompt["prompt_id"], "text": "Bob"})
        error = (await _until(other, is_frame("error")))[-1]
        assert error["code"] == "already_answered"


async def test_an_approval_is_applied_once_and_never_after_it_expired(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt, agent=GatedAgent()) as (_gateway, url), \
            connect(url, "alpha") as client:
        await client.message("approve:deploy")
        request = (await _until(client, is_frame("approval_request")))[-1]
        assert (request["action"], request["details"]) == ("deploy", {"why": "test"})
        assert request["expires_at"] > 0
        await client.send({"type": "approval", "request_id": request["request_id"],
                           "decision": "allow"})
        reply = (await _until(client, is_frame("delivery", kind="message")))[-1]
        assert reply["text"] == "allowed=True reason=None"
        await client.send({"type": "approval", "request_id": request["request_id"],
                           "decision": "deny"})
        assert (await _until(client, is_frame("error")))[-1]["code"] == "already_answered"

        await client.message("approve:late!")  # expires after 0.05 s
        request = (await _until(client, is_frame("approval_request")))[-1]
        await _until(client, is_frame("prompt_closed", id=request["request_id"],
                                      reason="expired"))
        await client.send({"type": "approval", "request_id": request["request_id"],
                           "decision": "allow"})
        frames = await _all(client, is_frame("error"), is_frame("delivery", kind="message"))
        assert [f["code"] for f in frames if f["type"] == "error"] == ["expired"]
        assert [f["text"] for f in frames if f["type"] == "delivery"] == [
            "allowed=False reason=expired"]


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_without_a_connected_client_questions_fail_closed(rt, kind) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token="t" * 16))
    session_id = await rt.create_session(channel="gateway")
    async with rt.open_turn(session_id) as ctx:
        if kind == "prompt":
            answer = await ctx.prompt_user("anyone?")
            assert (answer.text, answer.reason) == (None, "no_interactive_route")
        else:
            decision = await ctx.request_approval("deploy")
            assert (decision.allowed, decision.reason) == (False, "no_interactive_route")
    assert gateway.hubs == {}
