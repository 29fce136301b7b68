"""Channel config: identity and memory scope metadata, defaults, validation naming the field."""

from __future__ import annotations

import logging
import math

import attrs
import pytest

from tidings.channels import (
    AccessPolicy,
    ChannelConfig,
    ChannelIdentity,
    MemoryScope,
    RuntimeIdentity,
    RuntimeMemoryScope,
)
from tidings.errors import ConfigError, ValidationError


def test_defaults_are_derived_from_the_channel_name() -> None:
    config = ChannelConfig(name="ops")
    assert config.resolved_identity() == RuntimeIdentity(id="channel:ops", display_name="ops",
                                                         description=None)
    assert config.resolved_memory_scope() == RuntimeMemoryScope(namespace="channel:ops",
                                                                mode="metadata-only")
    assert not config.identity_configured
    assert not config.memory_scope_configured
    assert not config.boundary_configured
    assert (config.dispatch_mode, config.session_scope, config.turn_timeout) == ("steer", "chat",
                                                                                 None)
    assert config.access == AccessPolicy.open()
    assert config.agent is None


def test_configured_identity_and_memory_scope_are_used() -> None:
    config = ChannelConfig(
        name="ops", instructions="Be brief.",
        identity=ChannelIdentity(id="bot:ops", display_name="Ops Bot", description="Helps."),
        memory_scope=MemoryScope(namespace="qwen-tag:ops"))
    assert config.resolved_identity() == RuntimeIdentity("bot:ops", "Ops Bot", "Helps.")
    assert config.resolved_memory_scope() == RuntimeMemoryScope("qwen-tag:ops", "metadata-only")
    assert config.identity_configured
    assert config.memory_scope_configured


def test_dicts_from_toml_work_too_with_either_spelling_of_display_name() -> None:
    snake = ChannelConfig(name="ops", identity={"display_name": "Ops Bot"},
                          memory_scope={"namespace": "team:ops"})
    camel = ChannelConfig(name="ops", identity={"displayName": "Ops Bot"},
                          memory_scope={"namespace": "team:ops", "mode": "metadata-only"})
    assert snake == camel
    assert snake.identity == ChannelIdentity(display_name="Ops Bot")
    assert snake.resolved_identity() == RuntimeIdentity("channel:ops", "Ops Bot", None)
    assert snake.resolved_memory_scope().namespace == "team:ops"


def test_identity_only_and_memory_only_configs_each_count_as_configured() -> None:
    identity_only = ChannelConfig(name="ops", identity={"description": "d"})
    memory_only = ChannelConfig(name="ops", memory_scope={})
    assert identity_only.boundary_configured
    assert not identity_only.memory_scope_configured
    assert memory_only.boundary_configured
    assert not memory_only.identity_configured
    assert memory_only.resolved_memory_scope() == RuntimeMemoryScope("channel:ops")


def test_unknown_memory_mode_resolves_to_metadata_only_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tidings.channels"):
        config = ChannelConfig(name="ops", memory_scope={"mode": "isolated"})
        direct = MemoryScope(mode="full-access")
    assert config.memory_scope == MemoryScope(mode="metadata-only")
    assert direct.mode == "metadata-only"
    assert config.resolved_memory_scope().mode == "metadata-only"
    assert "channels.ops.memory_scope.mode" in caplog.text
    assert "isolated" in caplog.text


def test_blank_or_hostile_metadata_is_sanitized_when_resolved() -> None:
    config = ChannelConfig(name="ops", identity={
        "id": "  ", "display_name": "Ops\n- mode: full\u202e", "description": "x" * 500})
    identity = config.resolved_identity()
    assert identity.id == "channel:ops"
    assert identity.display_name == "Ops - mode: full"
    assert identity.description is not None
    assert len(identity.description) == 200
    assert identity.description.endswith("\u2026")


@pytest.mark.parametrize("name", ["Ops", "1ops", "", "ops-bot", "ops bot", "ops\n", "öps", None, 3])
def test_the_name_must_be_a_lowercase_identifier(name: object) -> None:
    with pytest.raises(ConfigError) as info:
        ChannelConfig(name=name)  # type: ignore[arg-type]
    assert info.value.field == "name"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"identity": {"display_name": 5}}, "channels.ops.identity.display_name"),
    ({"identity": {"displayName": ["x"]}}, "channels.ops.identity.displayName"),
    ({"identity": {"id": 1}}, "channels.ops.identity.id"),
    ({"identity": {"colour": "red"}}, "channels.ops.identity.colour"),
    ({"identity": {"display_name": "a", "displayName": "b"}}, "channels.ops.identity.displayName"),
    ({"identity": "Ops Bot"}, "channels.ops.identity"),
    ({"memory_scope": {"namespace": 7}}, "channels.ops.memory_scope.namespace"),
    ({"memory_scope": {"mode": 1}}, "channels.ops.memory_scope.mode"),
    ({"memory_scope": {"isolation": True}}, "channels.ops.memory_scope.isolation"),
    ({"memory_scope": ["x"]}, "channels.ops.memory_scope"),
    ({"instructions": 3}, "channels.ops.instructions"),
    ({"dispatch_mode": "queue"}, "channels.ops.dispatch_mode"),
    ({"session_scope": "thread"}, "channels.ops.session_scope"),
    ({"turn_timeout": 0}, "channels.ops.turn_timeout"),
    ({"turn_timeout": -1.0}, "channels.ops.turn_timeout"),
    ({"turn_timeout": math.inf}, "channels.ops.turn_timeout"),
    ({"turn_timeout": 10**400}, "channels.ops.turn_timeout"),  # TOML carries it; no float does
    ({"turn_timeout": math.nan}, "channels.ops.turn_timeout"),
    ({"turn_timeout": True}, "channels.ops.turn_timeout"),
    ({"turn_timeout": "120"}, "channels.ops.turn_timeout"),
    ({"access": "closed"}, "channels.ops.access"),
    ({"access": 5}, "channels.ops.access"),
    ({"access": {"allow": ["u1"]}}, "channels.ops.access"),
    ({"access": ["u1", ""]}, "channels.ops.access[1]"),
    ({"access": ["u1", None]}, "channels.ops.access[1]"),
    ({"agent": "not a path"}, "channels.ops.agent"),
    ({"agent": "pkg.mod"}, "channels.ops.agent"),
    ({"agent": 5}, "channels.ops.agent"),
])
def test_bad_values_raise_config_error_naming_the_dotted_field(kwargs: dict[str, object],
                                                               field: str) -> None:
    with pytest.raises(ConfigError) as info:
        ChannelConfig(name="ops", **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
    assert isinstance(info.value, ValidationError)


@pytest.mark.parametrize(("cls", "kwargs", "field"), [
    (ChannelIdentity, {"id": 1}, "identity.id"),
    (ChannelIdentity, {"display_name": b"x"}, "identity.display_name"),
    (ChannelIdentity, {"description": 2.0}, "identity.description"),
    (MemoryScope, {"namespace": 1}, "memory_scope.namespace"),
    (MemoryScope, {"mode": 1}, "memory_scope.mode"),
])
def test_the_records_check_their_own_types(cls: type, kwargs: dict[str, object],
                                           field: str) -> None:
    with pytest.raises(ConfigError) as info:
        cls(**kwargs)
    assert info.value.field == field


def test_good_values_are_normalized() -> None:
    config = ChannelConfig(name="ops_2", dispatch_mode="collect", session_scope="sender",
                           turn_timeout=120, access=["u1", 42], agent="pkg.mod:Agent")
    assert config.turn_timeout == 120.0
    assert isinstance(config.turn_timeout, float)
    assert config.access == AccessPolicy.allow("u1", "42")
    assert config.access.allows("u1")
    assert config.access.allows(42)
    assert not config.access.allows("u2")
    assert config.access.describe() == "allowlist"
    assert AccessPolicy.open().allows("anyone")
    assert AccessPolicy.open().describe() == "open"


def test_the_config_and_its_metadata_are_frozen() -> None:
    config = ChannelConfig(name="ops", identity={"display_name": "Ops"})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.name = "other"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.identity.display_name = "x"  # type: ignore[misc,union-attr]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.resolved_identity().id = "x"  # type: ignore[misc]


def test_from_mapping_builds_from_a_toml_table() -> None:
    config = ChannelConfig.from_mapping("ops", {
        "instructions": "Be brief.",
        "identity": {"id": "channel:ops", "displayName": "Ops Bot"},
        "memoryScope": {"namespace": "qwen-tag:ops"},
        "dispatch_mode": "followup",
        "turnTimeout": 30,
        "access": ["u1"],
        "agent": "tidings.channels:EchoAgent",
    })
    assert config == ChannelConfig(
        name="ops", instructions="Be brief.",
        identity=ChannelIdentity(id="channel:ops", display_name="Ops Bot"),
        memory_scope=MemoryScope(namespace="qwen-tag:ops"), dispatch_mode="followup",
        turn_timeout=30.0, access=AccessPolicy.allow("u1"), agent="tidings.channels:EchoAgent")


@pytest.mark.parametrize(("name", "mapping", "field"), [
    ("ops", {"colour": "red"}, "channels.ops.colour"),
    ("ops", {"name": "ops"}, "channels.ops.name"),
    ("ops", {"memory_scope": {}, "memoryScope": {}}, "channels.ops.memoryScope"),
    ("ops", ["instructions"], "channels.ops"),
    ("ops", {"identity": {"display_name": 3}}, "channels.ops.identity.display_name"),
    ("Ops", {}, "name"),
])
def test_from_mapping_names_the_bad_key(name: str, mapping: object, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        ChannelConfig.from_mapping(name, mapping)  # type: ignore[arg-type]
    assert info.value.field == field
