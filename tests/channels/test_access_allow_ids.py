"""``AccessPolicy.allow(*sender_ids)`` takes the ids as arguments, each text or a number. A
list passed whole (``AccessPolicy.allow(["u1", "u2"])``, as ``access`` takes one) was
``str()``-ed into the one id ``"['u1', 'u2']"``: every sender was refused, with nothing said
about why. Anything but text or a number is refused naming ``access``."""

from __future__ import annotations

import pytest

from tidings.channels import AccessPolicy, ChannelConfig
from tidings.errors import ConfigError


@pytest.mark.parametrize("ids", [(["u1", "u2"],), (("u1",),), ({"u1"},), (None,), (True,),
                                 ("u1", b"u2")])
def test_an_id_that_is_neither_text_nor_a_number_is_refused(ids) -> None:
    with pytest.raises(ConfigError) as caught:
        AccessPolicy.allow(*ids)
    assert caught.value.field == "access"


def test_text_and_numbers_are_allowed() -> None:
    policy = AccessPolicy.allow("u1", 42)
    assert policy.allows("u1")
    assert policy.allows(42)
    assert policy.allows("42")
    assert not policy.allows("u2")
    assert ChannelConfig("ops", access=["u1", 42]).access == policy
