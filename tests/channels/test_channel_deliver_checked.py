"""An adapter is a ``ChannelBase`` subclass that implements ``async deliver(outbound)``. One
that did not (forgotten, or a plain ``def deliver``) was built all the same: without one,
every message started a turn whose reply the base's ``deliver`` refused at delivery (the row
``failed``, the user told nothing); with a plain one, the first message failed when the route
was bound. Both are refused by name (``deliver``) when the channel is built, as an agent
without an async ``run`` is."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelBase, ChannelConfig
from tidings.errors import ValidationError


class Forgot(ChannelBase):
    """An adapter that implements nothing."""


class Plain(ChannelBase):
    def deliver(self, outbound) -> None:  # type: ignore[override]
        print(outbound.text)


@pytest.mark.parametrize("adapter", [Forgot, Plain])
async def test_an_adapter_without_an_async_deliver_is_refused_by_name(rt, adapter) -> None:
    with pytest.raises(ValidationError) as caught:
        adapter(rt, ChannelConfig("ops"))
    assert caught.value.field == "deliver"
    assert adapter.__name__ in str(caught.value)


async def test_an_adapter_with_an_async_deliver_is_built(rt) -> None:
    class Fine(ChannelBase):
        async def deliver(self, outbound) -> None:
            pass

    assert Fine(rt, ChannelConfig("ops")).config.name == "ops"
