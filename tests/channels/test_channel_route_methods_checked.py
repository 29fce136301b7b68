"""A ``ChannelBase`` adapter is the route of every session it resolves, bound at the
conversation's first message. What ``bind`` refuses in a route (a ``prompt_user``,
``request_approval`` or ``reconcile`` that is a plain function or not callable at all, a
``capabilities`` that is no collection of block types) was refused only then: the adapter was
built, and every message it was given raised that refusal as its route was bound, after the
conversation's session had been made. ``deliver`` was checked when the channel is built (see
test_channel_deliver_checked.py); now the optional route methods and ``capabilities`` are too,
by name (no message can reach a channel that was not built)."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelBase, ChannelConfig, Inbound
from tidings.errors import ValidationError


class _Adapter(ChannelBase):
    async def deliver(self, outbound) -> None:
        pass


class _PlainPrompt(_Adapter):
    def prompt_user(self, prompt) -> str:  # type: ignore[override]
        return "yes"


class _PlainApproval(_Adapter):
    def request_approval(self, request) -> bool:
        return True


class _PlainReconcile(_Adapter):
    def reconcile(self, delivery_ids) -> dict:
        return {}


class _PromptNotCallable(_Adapter):
    prompt_user = "yes"


class _CapabilitiesString(_Adapter):
    capabilities = "image"


class _CapabilitiesMisspelt(_Adapter):
    capabilities = frozenset({"text", "images"})


@pytest.mark.parametrize(("adapter", "field"), [
    (_PlainPrompt, "prompt_user"),
    (_PlainApproval, "request_approval"),
    (_PlainReconcile, "reconcile"),
    (_PromptNotCallable, "prompt_user"),
    (_CapabilitiesString, "capabilities"),
    (_CapabilitiesMisspelt, "capabilities"),
])
async def test_a_route_method_bind_would_refuse_is_refused_when_the_channel_is_built(
        rt, adapter, field) -> None:
    with pytest.raises(ValidationError) as caught:
        adapter(rt, ChannelConfig("ops"))
    assert caught.value.field == field
    if field != "capabilities":
        assert f"{adapter.__name__}.{field}" in str(caught.value)


async def test_an_adapter_with_async_questions_is_built_and_asks(rt) -> None:
    answers: list[object] = []

    class Asking:
        async def run(self, turn) -> None:
            answers.append(await turn.prompt_user("colour?"))
            answers.append((await turn.request_approval("deploy")).allowed)

    class Fine(_Adapter):
        capabilities = frozenset({"text", "image"})

        async def prompt_user(self, prompt) -> str:
            return "blue"

        async def request_approval(self, request) -> bool:
            return True

    channel = Fine(rt, ChannelConfig("ops"), agent=Asking())
    await channel.handle_inbound(Inbound(chat_id="c1", sender_id="u1", text="go",
                                         message_id="m1"))
    await channel.wait_idle()
    assert answers == ["blue", True]
