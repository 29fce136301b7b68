"""A refused value of a ``tidings serve`` file is said as the file spells it (``true``, a
quoted string, an array, a table, a date), not as Python's repr (``True``, ``None``,
``datetime.date(...)``): the user reads their TOML, not Python."""

from __future__ import annotations

import pytest

from tidings.errors import ConfigError
from tidings.supervisor._config import load_config


@pytest.mark.parametrize(("text", "field", "said"), [
    ("[serve]\ngrace = true\n", "serve.grace", "got true"),
    ("[serve]\ngrace = 1979-05-27\n", "serve.grace", "got 1979-05-27"),
    ("[serve]\ngrace = [1, false]\n", "serve.grace", "got [1, false]"),
    ("[serve]\ngrace = { a = true }\n", "serve.grace", "got { a = true }"),
    ("[serve]\nwriter = false\n", "serve.writer", "got false"),
    ("[serve]\ncore_id = false\n", "serve.core_id", "got false"),
    ("[serve]\ndb = true\n", "serve.db", "got true"),
    ("[logging]\njson = \"yes\"\n", "logging.json", "got 'yes'"),
    ("[logging]\nlevel = [\"info\"]\n", "logging.level", "got ['info']"),
    ("[supervisor]\nmax_restarts = true\n", "supervisor.max_restarts", "got true"),
    ("[retention]\nkeep = true\n", "retention.keep", "got true"),
    ("[gateway]\nport = true\n", "gateway.port", "got true"),
    ("[gateway]\nhost = false\n", "gateway.host", "got false"),
    ("[gateway]\nrate = true\n", "gateway.rate", "got true"),
    ("[gateway]\nburst = { n = 1 }\n", "gateway.burst", "got { n = 1 }"),
    ("[gateway]\nheartbeat_s = \"it's\"\n", "gateway.heartbeat_s", "got \"it's\""),
    ("[serve]\ncore_id = \"\"\n", "serve.core_id", "got ''"),
    ("[serve]\nagent = true\n", "serve.agent", "got true"),
    ("[channels.gateway]\nagent = [\"a:B\"]\n", "channels.gateway.agent", "got ['a:B']"),
    ("[channels.gateway]\ndispatch_mode = true\n", "channels.gateway.dispatch_mode",
     "got true"),
    ("[channels.gateway]\naccess = false\n", "channels.gateway.access", "got false"),
    ("[channels.gateway]\naccess = [\"ann\", true]\n", "channels.gateway.access[1]",
     "got true"),
    ("[channels.gateway]\nturn_timeout = -1.5\n", "channels.gateway.turn_timeout",
     "got -1.5"),
    ("[channels.gateway]\nturn_timeout = \"2m\"\n", "channels.gateway.turn_timeout",
     "got '2m'"),
    ("[serve]\ndb = \"a\\nb/\"\n", "serve.db", 'got "a\\nb/"'),
])
def test_a_refused_value_is_said_as_toml_spells_it(tmp_path, text: str, field: str,
                                                   said: str) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == field
    assert said in caught.value.reason, caught.value.reason
    for python in ("True", "False", "None", "datetime", "{'"):
        assert python not in caught.value.reason, caught.value.reason
