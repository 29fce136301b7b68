"""GatewayConfig: defaults, and a refused value names its dotted key."""

from __future__ import annotations

import pytest

from tidings.channels import GatewayConfig
from tidings.errors import ConfigError


def test_defaults_listen_on_loopback_8765_with_a_window_of_32() -> None:
    config = GatewayConfig(token="secret-token")
    assert (config.host, config.port, config.ack_window) == ("127.0.0.1", 8765, 32)
    assert "secret-token" not in repr(config)


@pytest.mark.parametrize(("values", "field"), [
    ({"port": 70000}, "gateway.port"),
    ({"port": "80"}, "gateway.port"),
    ({"ack_window": 0}, "gateway.ack_window"),
    ({"heartbeat_s": 0}, "gateway.heartbeat_s"),
    ({"heartbeat_s": float("inf")}, "gateway.heartbeat_s"),
    # TOML carries any integer: one no float holds is refused as inf is, by its key
    ({"heartbeat_s": 10**400}, "gateway.heartbeat_s"),
    ({"prompt_timeout": 10**400}, "gateway.prompt_timeout"),
    ({"max_frame_bytes": 10}, "gateway.max_frame_bytes"),
    ({"rate": -1}, "gateway.rate"),
    ({"burst": True}, "gateway.burst"),
    ({"host": "bad host"}, "gateway.host"),
    ({"colour": "red"}, "gateway.colour"),
])
def test_a_bad_value_is_refused_naming_its_key(values: dict, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_mapping(values, token="secret-token")
    assert caught.value.field == field


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"gateway\.token"):
        GatewayConfig(token="short")
    with pytest.raises(ConfigError, match=r"gateway\.token"):
        GatewayConfig.from_mapping({})
