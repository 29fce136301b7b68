"""A key given in both spellings (``dispatchMode`` and ``dispatch_mode``) is refused, naming
both as the user wrote them. The message named the canonical name for the first one, so a
table with ``displayName`` then ``display_name`` was told it had ``display_name`` twice, and
the ``displayName`` to remove went unnamed."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig
from tidings.errors import ConfigError


@pytest.mark.parametrize(("table", "field", "spellings"), [
    ({"dispatchMode": "steer", "dispatch_mode": "collect"}, "channels.ops.dispatch_mode",
     ("dispatchMode", "dispatch_mode")),
    ({"dispatch_mode": "steer", "dispatchMode": "collect"}, "channels.ops.dispatchMode",
     ("dispatch_mode", "dispatchMode")),
    ({"identity": {"displayName": "A", "display_name": "B"}},
     "channels.ops.identity.display_name", ("displayName", "display_name")),
])
def test_a_key_in_both_spellings_names_both(table, field, spellings) -> None:
    with pytest.raises(ConfigError) as caught:
        ChannelConfig.from_mapping("ops", table)
    assert caught.value.field == field
    first, second = spellings
    assert f"as {first!r} and {second!r}" in caught.value.reason
