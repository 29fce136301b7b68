"""A ``ChannelBase`` adapter whose ``deliver`` or optional route method cannot take its one
argument is refused when it is built, by name, as ``bind`` refuses such a route (f1980f5).

The adapter is the route of every session it resolves, bound at the conversation's first
message: left to ``bind``, the refusal came then, with every message, after the
conversation's session had been made (test_channel_route_methods_checked.py)."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import ChannelBase, ChannelConfig, Inbound
from tidings.errors import ValidationError


class _Adapter(ChannelBase):
    async def deliver(self, outbound) -> None:
        pass


class _DeliverTwo(ChannelBase):
    async def deliver(self, outbound, chat_id) -> None:  # type: ignore[override]
        pass


class _PromptNone(_Adapter):
    async def prompt_user(self) -> str:  # type: ignore[override]
        return "yes"


class _ApprovalTwo(_Adapter):
    async def request_approval(self, request, timeout_s) -> bool:  # type: ignore[override]
        return True


class _ReconcileNone(_Adapter):
    async def reconcile(self) -> dict:
        return {}


@pytest.mark.parametrize(("adapter", "field"), [
    (_DeliverTwo, "deliver"),
    (_PromptNone, "prompt_user"),
    (_ApprovalTwo, "request_approval"),
    (_ReconcileNone, "reconcile"),
])
async def test_a_route_method_that_cannot_take_its_argument_is_refused_when_built(
        rt, adapter, field) -> None:
    with pytest.raises(ValidationError) as caught:
        adapter(rt, ChannelConfig("ops"))
    assert caught.value.field == field
    assert f"{adapter.__name__}.{field}" in str(caught.value)


class _Lenient(_Adapter):
    async def prompt_user(self, prompt, *more) -> str:  # type: ignore[override]
        return "yes"


async def test_a_method_with_star_args_is_built_and_asked(rt) -> None:
    answers: list[object] = []

    class Asking:
        async def run(self, turn) -> None:
            answers.append(await turn.prompt_user("colour?"))

    channel = _Lenient(rt, ChannelConfig("ops"), agent=Asking())
    await channel.handle_inbound(Inbound(chat_id="c1", sender_id="u1", text="go"))
    with trio.fail_after(30):  # hang guard
        await channel.wait_idle()
    assert answers == ["yes"]
