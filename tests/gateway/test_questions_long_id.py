"""A question whose id is a valid id (at most MAX_ID_CHARS characters) but longer than the
200 characters the gateway takes for a client's message id: a host asking through
``rt.router.prompt_user`` / ``request_approval`` with its own id. The gateway sent it, but
refused every answer to it (``bad_field``, the id 'must be at most 200 characters'): nobody
could answer, and the host waited for the whole ``prompt_timeout``."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_ID_CHARS, ApprovalRequest, Prompt

from .conftest import frame_is


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_a_question_with_a_long_id_can_be_answered(rt, serve_gateway, connect,
                                                          kind) -> None:
    question_id = "q" * MAX_ID_CHARS
    outcome: list[object] = []
    async with serve_gateway(rt) as (_, url), connect(url, "alpha") as client:

        async def host() -> None:
            if kind == "prompt":
                outcome.append(await rt.router.prompt_user(Prompt(
                    client.session_id, "ok?", question_id, expires_at=None)))
            else:
                outcome.append(await rt.router.request_approval(ApprovalRequest(
                    client.session_id, "deploy", question_id)))

        with trio.fail_after(30):  # hang guard
            async with trio.open_nursery() as nursery:
                nursery.start_soon(host)
                asked = "prompt" if kind == "prompt" else "approval_request"
                await client.receive_until(frame_is(asked))
                await client.send({"type": "answer", "prompt_id": question_id, "text": "yes"}
                                  if kind == "prompt" else
                                  {"type": "approval", "request_id": question_id,
                                   "decision": "allow"})
                frames = await client.receive_until(
                    lambda f: f["type"] in ("prompt_closed", "error"))
                assert frames[-1] == {"type": "prompt_closed", "id": question_id,
                                      "reason": "answered"}, frames[-1]
    [answer] = outcome
    assert answer.text == "yes" if kind == "prompt" else answer.allowed


@pytest.mark.parametrize("frame", [
    {"type": "hello", "token": "t" * 16, "protocol": 1, "conversation": "c"},
    {"type": "ack", "up_to_seq": 3},
    {"type": "sync"},
])
def test_a_client_may_name_any_session_id_a_host_may_make(frame) -> None:
    # A host's session id may be up to MAX_ID_CHARS (1024); its deliveries and questions reach
    # a client with that id, but a hello, ack or sync naming it back was refused over 200.
    import json

    from tidings.channels._gateway_frames import FrameError, parse_client_frame

    longest = "s" * MAX_ID_CHARS
    parsed = parse_client_frame(json.dumps({**frame, "session_id": longest}),
                                max_frame_bytes=1 << 16)
    assert parsed.session_id == longest
    with pytest.raises(FrameError) as caught:
        parse_client_frame(json.dumps({**frame, "session_id": longest + "s"}),
                           max_frame_bytes=1 << 16)
    assert caught.value.field == "session_id"
