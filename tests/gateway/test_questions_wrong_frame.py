"""An ``answer`` naming an approval request (or an ``approval`` naming a prompt) answers no
question of its kind: ``unknown_prompt``, also once that question closed. It was refused
with the other question's fate (``expired``, ``already_answered``), telling the client its
answer came too late when it had sent the wrong frame."""

from __future__ import annotations

import trio

from tidings.actors import ApprovalRequest


async def test_an_answer_naming_a_closed_approval_request_is_unknown_prompt(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        request = ApprovalRequest(client.session_id, "deploy", "req-1")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rt.router.request_approval, request)
            with trio.fail_after(10):
                await client.receive_until(lambda f: f["type"] == "approval_request")
                await client.send({"type": "approval", "request_id": "req-1",
                                   "decision": "deny"})
                await client.receive_until(lambda f: f["type"] == "prompt_closed")
        await client.send({"type": "answer", "prompt_id": "req-1", "text": "yes"})
        await client.send({"type": "approval", "request_id": "req-1", "decision": "allow"})
        with trio.fail_after(10):
            wrong = await client.receive()
            late = await client.receive()
    assert (wrong["code"], wrong["field"]) == ("unknown_prompt", "prompt_id")
    assert (late["code"], late["field"]) == ("already_answered", "request_id")
