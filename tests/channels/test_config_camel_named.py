"""A camelCase key of a ``[channels.<name>]`` table whose value is refused is named as the
user spelled it (``channels.ops.dispatchMode``), as the keys inside ``identity`` already
were: the error named the snake_case field (``channels.ops.dispatch_mode``), a key the file
does not have."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig
from tidings.errors import ConfigError


@pytest.mark.parametrize(("table", "field"), [
    ({"dispatchMode": "fast"}, "channels.ops.dispatchMode"),
    ({"sessionScope": "room"}, "channels.ops.sessionScope"),
    ({"turnTimeout": -1}, "channels.ops.turnTimeout"),
    ({"dedupeMessageIds": "yes"}, "channels.ops.dedupeMessageIds"),
    ({"memoryScope": {"namespace": 1}}, "channels.ops.memoryScope.namespace"),
    ({"memoryScope": "x"}, "channels.ops.memoryScope"),
    ({"identity": {"displayName": 1}}, "channels.ops.identity.displayName"),
    ({"dispatch_mode": "fast"}, "channels.ops.dispatch_mode"),
    ({"memory_scope": {"namespace": 1}}, "channels.ops.memory_scope.namespace"),
])
def test_a_refused_value_is_named_by_its_key_as_written(table, field) -> None:
    with pytest.raises(ConfigError) as caught:
        ChannelConfig.from_mapping("ops", table)
    assert caught.value.field == field
