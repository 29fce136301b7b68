"""A channel name is stored as an id (in every session, held message and conversation row of
the channel), so the runtime refuses one over ``MAX_ID_CHARS``: ``ChannelConfig`` took such a
name (``tidings serve`` started with it) and then every message of the channel failed as its
hold was refused, naming ``channel``. The config now refuses it, naming ``name`` (a name at
the cap works: tests/channels/test_dispatch_task_name.py)."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_ID_CHARS
from tidings.channels import ChannelConfig
from tidings.errors import ConfigError


def test_a_channel_name_over_max_id_chars_is_refused_by_the_config() -> None:
    with pytest.raises(ConfigError) as info:
        ChannelConfig(name="a" * (MAX_ID_CHARS + 1))
    assert info.value.field == "name"
    assert str(MAX_ID_CHARS) in str(info.value)
