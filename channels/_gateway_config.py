"""The websocket gateway's settings, validated when built (``[gateway]`` in the TOML file)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

import attrs

from tidings.actors._status import finite
from tidings.errors import ConfigError
from tidings.store import MAX_INTEGER
from tidings.store._ids import lone_surrogate
from tidings.supervisor._token import MIN_TOKEN_LENGTH, is_token
from tidings.supervisor._toml_spelling import spelled

__all__ = ["GATEWAY_KEYS", "GatewayConfig"]


def _number(*, minimum: float, integer: bool = False, above: bool = False,
            maximum: int | None = None) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: object) -> None:
        field = f"gateway.{attribute.name}"
        kind = "an integer" if integer else "a number"
        if (isinstance(value, bool) or not isinstance(value, int if integer else int | float)
                or (not integer and not finite(value))):
            raise ConfigError(field, f"must be {kind}, got {spelled(value, 80)}")
        if value < minimum or (above and value == minimum):
            bound = f"> {minimum}" if above else f">= {minimum}"
            raise ConfigError(field, f"must be {bound}, got {spelled(value)}")
        if maximum is not None and value > maximum:
            raise ConfigError(field, f"must be at most {maximum}, got {spelled(value, 80)}")
    return check


def _host(instance: Any, attribute: attrs.Attribute, value: object) -> None:
    # Printable, valid Unicode: bytes that are not UTF-8 (``--host`` decoded with surrogates)
    # or a control character could open no listener, which serve found only after it had
    # made the database and the token file.
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value) \
            or not value.isprintable() or lone_surrogate(value) is not None:
        raise ConfigError("gateway.host",
                          f"must be a host name or address, got {spelled(value, 80)}")


def _port(instance: Any, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError("gateway.port", f"must be an integer 0-65535 (0: any free port), "
                                          f"got {spelled(value)}")


def _token(instance: Any, attribute: attrs.Attribute, value: object) -> None:
    if not is_token(value):
        raise ConfigError("gateway.token", f"must be at least {MIN_TOKEN_LENGTH} printable "
                                           "characters without spaces")


@final
@attrs.frozen(kw_only=True)
class GatewayConfig:
    """How the gateway listens and treats its clients.

    ``token`` authenticates clients (compared in constant time). ``ack_window``: deliveries a
    session may have unacked at once. ``heartbeat_s``: the server pings a client it has not
    heard from for that long and drops it after twice that. ``max_frame_bytes``: the largest
    client frame handled (bigger ones get an error; over four times that, and over
    ``HELLO_MAX_BYTES``, the connection is closed); the hello may be ``HELLO_MAX_BYTES``
    whatever it says. ``max_backlog``: frames queued for one connection before it is closed as
    too slow; ``max_backlog_bytes``: the same bound in bytes of encoded frames (a delivery
    frame may carry up to 2 MiB of text, so the frame count alone let a slow client pin
    gigabytes; a frame that finds the queue empty is always taken, however big). ``rate`` /
    ``burst``: frames per second a client may send (token bucket; acks of what it was sent are
    free). ``hello_timeout``: seconds to wait for the hello. ``prompt_timeout``: expiry of
    prompts and approval requests that have none. ``replay_page``: rows read per page when a
    client catches up.
    """

    token: str = attrs.field(validator=_token, repr=False)
    host: str = attrs.field(default="127.0.0.1", validator=_host)
    port: int = attrs.field(default=8765, validator=_port)
    ack_window: int = attrs.field(default=32, validator=_number(minimum=1, integer=True))
    heartbeat_s: float = attrs.field(default=20.0, validator=_number(minimum=0, above=True))
    max_frame_bytes: int = attrs.field(default=65536,
                                       validator=_number(minimum=256, integer=True))
    max_backlog: int = attrs.field(default=1024, validator=_number(minimum=16, integer=True))
    max_backlog_bytes: int = attrs.field(default=16 * 1024 * 1024,
                                         validator=_number(minimum=65536, integer=True))
    rate: float = attrs.field(default=20.0, validator=_number(minimum=0, above=True))
    burst: int = attrs.field(default=60, validator=_number(minimum=1, integer=True))
    hello_timeout: float = attrs.field(default=10.0, validator=_number(minimum=0, above=True))
    prompt_timeout: float = attrs.field(default=300.0, validator=_number(minimum=0, above=True))
    replay_page: int = attrs.field(default=256, validator=_number(minimum=1, integer=True,
                                                                  maximum=MAX_INTEGER))
    """A page's row limit is a SQLite integer: a larger one failed every hello (1011)."""

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], **overrides: Any) -> GatewayConfig:
        """Build from a ``[gateway]`` table (plus *overrides*, e.g. command-line flags).
        Unknown keys are refused by name. Raises :class:`ConfigError`."""
        if not isinstance(mapping, Mapping):
            raise ConfigError("gateway", f"must be a table, not {type(mapping).__name__}")
        unknown = sorted(set(mapping) - set(GATEWAY_KEYS))
        if unknown:
            raise ConfigError(f"gateway.{unknown[0]}",
                              f"unknown key (known: {', '.join(GATEWAY_KEYS)})")
        values = {**mapping, **{k: v for k, v in overrides.items() if v is not None}}
        if "token" not in values:
            raise ConfigError("gateway.token", "is required")
        return cls(**values)


GATEWAY_KEYS = tuple(field.name for field in attrs.fields(GatewayConfig))
"""Every key a ``[gateway]`` table may hold."""
