"""A ``gateway.host`` no listener can be opened on because of its text (bytes that are not
UTF-8 in ``--host``, a control character from the config file) passed the config check, and
serve made the database and the token file before it failed to listen (exit 1). Refused by
name with the other config errors now: exit 2, nothing made."""

from __future__ import annotations

import pytest

from tidings.channels import GatewayConfig
from tidings.errors import ConfigError
from tidings.supervisor import cli


@pytest.mark.parametrize("host", ["\udcff.example", "a\x00b", "local\x1bhost"],
                         ids=["not UTF-8", "NUL", "ESC"])
def test_a_host_that_is_no_host_text_is_refused_by_name(host) -> None:
    with pytest.raises(ConfigError) as caught:
        GatewayConfig(token="a-test-token", host=host)
    assert caught.value.field == "gateway.host"


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "b\u00fccher.example"])
def test_a_host_name_or_address_is_taken(host) -> None:
    assert GatewayConfig(token="a-test-token", host=host).host == host


def test_serve_refuses_it_before_making_anything(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["serve", "--host", "\udcff.example", "--port", "0"]) == 2
    assert "gateway.host" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
