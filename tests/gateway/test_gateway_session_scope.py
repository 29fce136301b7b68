"""The gateway has one session per conversation NAME, shared by every client that says it
(README, Opening): it makes no conversation per sender. A ``ChannelConfig`` with
``session_scope = "sender"`` (``[channels.gateway]``) was taken and silently ignored, so an
operator who asked for a session per client got one shared session; it is refused by name."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig
from tidings.errors import ConfigError
from tidings.supervisor._config import load_config

from .conftest import TOKEN


async def test_a_sender_session_scope_is_refused_by_name(rt) -> None:
    with pytest.raises(ConfigError, match=r"channels\.gateway\.session_scope"):
        GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                       ChannelConfig("gateway", session_scope="sender"))


async def test_the_chat_session_scope_is_taken(rt) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", session_scope="chat"))
    try:
        assert gateway.config.session_scope == "chat"
    finally:
        await gateway.aclose()


def test_serve_refuses_it_when_it_reads_its_config(tmp_path) -> None:
    """``tidings serve`` says so when it reads the file, before it makes a database."""
    path = tmp_path / "tidings.toml"
    path.write_text('[gateway]\ntoken = "gateway-test-token"\n\n'
                    '[channels.gateway]\nsession_scope = "sender"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"channels\.gateway\.session_scope"):
        load_config(path)
