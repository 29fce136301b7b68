"""``tidings serve`` checks every ``[channels.<name>]`` table of its file, not only the
gateway's: the file is shared with ``tidings chat --local`` (which reads the table of its
``--channel``), and a mistyped ``[channels.terminal]`` was accepted by ``serve`` and only
refused later, by the chat."""

from __future__ import annotations

import pytest

from tidings.errors import ConfigError
from tidings.supervisor._config import load_config


@pytest.mark.parametrize(("text", "field"), [
    ('[channels.terminal]\ndispatch_mode = "bogus"\n', "channels.terminal.dispatch_mode"),
    ("[channels.terminal]\nturn_timeout = -1\n", "channels.terminal.turn_timeout"),
    ("[channels.terminal]\ncolour = 1\n", "channels.terminal.colour"),
    ("[channels]\nterminal = 5\n", "channels.terminal"),
    ('[channels."Ops Room"]\n', "channels.Ops Room"),
])
def test_every_channel_table_is_checked(tmp_path, text, field) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == field


def test_other_channels_tables_are_still_taken_and_left_to_their_command(tmp_path) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text('[channels.terminal]\ndispatch_mode = "collect"\n'
                    '[channels.gateway]\ndispatch_mode = "followup"\n')
    config = load_config(path)
    assert config.channel.name == "gateway"
    assert config.channel.dispatch_mode == "followup"
