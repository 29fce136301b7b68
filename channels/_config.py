"""Channel configuration: identity, memory scope, dispatch, sessions, access, agent.

Everything is checked when the config is built; errors are :class:`~tidings.errors.ConfigError`
naming the dotted field (``channels.ops.identity.display_name``). Identity and memory scope
are optional; whether they were *configured* decides if the boundary note is injected, and
their resolved runtime values always exist (defaults ``channel:<name>`` / ``<name>``).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, final

import attrs

from tidings.actors._blocks import lone_surrogate
from tidings.actors._status import MAX_ID_CHARS
from tidings.channels._keys import id_refusal
from tidings.channels._loader import split_import_path
from tidings.channels._sanitize import sanitize_line
from tidings.errors import ConfigError
from tidings.supervisor._toml_spelling import spelled

__all__ = [
    "DISPATCH_MODES",
    "MEMORY_MODE",
    "SESSION_SCOPES",
    "AccessPolicy",
    "ChannelConfig",
    "ChannelIdentity",
    "DispatchMode",
    "MemoryScope",
    "RuntimeIdentity",
    "RuntimeMemoryScope",
    "SessionScope",
]

logger = logging.getLogger("tidings.channels")

DispatchMode = Literal["steer", "followup", "collect"]
SessionScope = Literal["chat", "sender"]
DISPATCH_MODES: tuple[DispatchMode, ...] = ("steer", "followup", "collect")
SESSION_SCOPES: tuple[SessionScope, ...] = ("chat", "sender")
MEMORY_MODE = "metadata-only"
"""The only memory mode: the namespace is a boundary marker and a prompt rule, not isolation."""

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_FIELD_LIMIT = 200


def _optional_str(field: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(field, f"must be a string, not {type(value).__name__}")


def _table(field: str, value: object, keys: Mapping[str, str]) -> dict[str, object]:
    """A TOML table's items under their canonical names (``keys`` maps spelling -> name)."""
    if not isinstance(value, Mapping):
        raise ConfigError(field, f"must be a table, not {type(value).__name__}")
    out: dict[str, object] = {}
    spelled: dict[str, str] = {}  # name -> the key it was given as (named if given again)
    for key, item in value.items():
        if key not in keys:
            known = ", ".join(sorted(set(keys.values())))
            raise ConfigError(f"{field}.{key}", f"unknown key (known: {known})")
        name = keys[key]
        if name in out:
            raise ConfigError(f"{field}.{key}",
                              f"given twice (as {spelled[name]!r} and {key!r})")
        out[name] = item
        spelled[name] = key
    return out


# --- identity and memory scope ---------------------------------------------------------------


@final
@attrs.frozen
class ChannelIdentity:
    """Configured identity metadata; any field may be missing (it is resolved from the name)."""

    id: str | None = attrs.field(default=None, converter=lambda v: _optional_str("identity.id", v))
    display_name: str | None = attrs.field(
        default=None, converter=lambda v: _optional_str("identity.display_name", v))
    description: str | None = attrs.field(
        default=None, converter=lambda v: _optional_str("identity.description", v))


def _resolve_mode(field: str, value: object) -> str:
    if value is None:
        return MEMORY_MODE
    if not isinstance(value, str):
        raise ConfigError(field, f"must be a string, not {type(value).__name__}")
    if value != MEMORY_MODE:
        logger.warning("%s: unknown memory mode %r resolves to %r (the only mode)",
                       field, sanitize_line(value, limit=40), MEMORY_MODE)
    return MEMORY_MODE


@final
@attrs.frozen
class MemoryScope:
    """Configured memory scope. ``mode`` always resolves to ``metadata-only``, the only mode:
    an unknown or missing mode never enables behaviour that does not exist."""

    namespace: str | None = attrs.field(
        default=None, converter=lambda v: _optional_str("memory_scope.namespace", v))
    mode: str = attrs.field(default=MEMORY_MODE,
                            converter=lambda v: _resolve_mode("memory_scope.mode", v))


@final
@attrs.frozen
class RuntimeIdentity:
    """Resolved, sanitized identity as hooks and commands see it (immutable)."""

    id: str
    display_name: str
    description: str | None = None


@final
@attrs.frozen
class RuntimeMemoryScope:
    """Resolved, sanitized memory scope as hooks and commands see it (immutable)."""

    namespace: str
    mode: str = MEMORY_MODE


_IDENTITY_KEYS = {"id": "id", "display_name": "display_name", "displayName": "display_name",
                  "description": "description"}
_MEMORY_KEYS = {"namespace": "namespace", "mode": "mode"}


def _identity(value: object, field: str) -> ChannelIdentity | None:
    if value is None or isinstance(value, ChannelIdentity):
        return value
    items = _table(field, value, _IDENTITY_KEYS)
    for key, item in value.items():  # type: ignore[attr-defined]
        _optional_str(f"{field}.{key}", item)  # named as the user spelled it
    return ChannelIdentity(**items)  # type: ignore[arg-type]


def _memory_scope(value: object, field: str) -> MemoryScope | None:
    if value is None or isinstance(value, MemoryScope):
        return value
    items = _table(field, value, _MEMORY_KEYS)
    _optional_str(f"{field}.namespace", items.get("namespace"))
    return MemoryScope(namespace=items.get("namespace"),  # type: ignore[arg-type]
                       mode=_resolve_mode(f"{field}.mode", items.get("mode")))


# --- access ----------------------------------------------------------------------------------


@final
@attrs.frozen
class AccessPolicy:
    """Who may talk to a channel: everyone (``allowlist is None``) or the listed sender ids.

    Raises:
      ConfigError: naming ``allowlist`` for a lone string (it was searched as text: an
        allowlist ``"alice"`` let ``"a"`` in) or an id :meth:`allow` refuses; ``TypeError``
        naming it for something not iterable.
    """

    allowlist: frozenset[str] | None = attrs.field(default=None,
                                                   converter=lambda v: _allowlist(v))

    @classmethod
    def open(cls) -> AccessPolicy:
        """Everyone may talk to the channel (the default)."""
        return cls(None)

    @classmethod
    def allow(cls, *sender_ids: object) -> AccessPolicy:
        """Only ``sender_ids`` (each text or a number, ``str()``-ed) may talk to the channel.

        Raises:
          ConfigError: naming ``access`` for an id that is neither (a list passed whole, not
            as arguments, would otherwise become one id no sender has: all refused).
        """
        for sender in sender_ids:
            refusal = id_refusal(sender)
            if refusal is not None:
                raise ConfigError("access", f"each sender id {refusal} (pass the ids as "
                                            f"arguments: AccessPolicy.allow(*ids))")
        return cls(frozenset(str(sender) for sender in sender_ids))

    @property
    def is_open(self) -> bool:
        """Whether everyone may talk to the channel (no allowlist)."""
        return self.allowlist is None

    def allows(self, sender_id: object) -> bool:
        """Whether ``sender_id`` (``str()``-ed) may talk to the channel."""
        return self.allowlist is None or str(sender_id) in self.allowlist

    def describe(self) -> str:
        """``"open"`` or ``"allowlist"``; the listed ids are never shown."""
        return "open" if self.allowlist is None else "allowlist"


def _allowlist(value: object) -> frozenset[str] | None:
    """An :class:`AccessPolicy`'s ``allowlist`` as a frozenset of ids, or an error naming it."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping):
        raise ConfigError("allowlist", f"must be a collection of sender ids, got {value!r:.80}")
    if not isinstance(value, Iterable):
        raise TypeError(f"allowlist must be a collection of sender ids, got "
                        f"{type(value).__name__}")
    senders = list(value)
    for sender in senders:
        refusal = id_refusal(sender)
        if refusal is not None:
            raise ConfigError("allowlist", f"each sender id {refusal}")
    return frozenset(str(sender) for sender in senders)


def _access(value: object, field: str) -> AccessPolicy:
    if isinstance(value, AccessPolicy):
        return value
    if value == "open":
        return AccessPolicy.open()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigError(field, f'must be "open" or a list of sender ids, '
                                 f'got {spelled(value, 80)}')
    senders: list[str] = []
    for index, sender in enumerate(value):
        if isinstance(sender, bool) or not isinstance(sender, str | int) or str(sender) == "":
            raise ConfigError(f"{field}[{index}]",
                              f"must be a non-empty sender id, got {spelled(sender, 80)}")
        senders.append(str(sender))
    return AccessPolicy.allow(*senders)


# --- the channel config ----------------------------------------------------------------------


def _check_name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ConfigError(
            "name", f"channel name must be a lowercase identifier matching ^[a-z][a-z0-9_]*$, "
                    f"got {value!r}")
    if len(value) > MAX_ID_CHARS:  # stored as an id in every row of the channel
        raise ConfigError("name", f"channel name is {len(value)} characters, over the limit of "
                                  f"{MAX_ID_CHARS} (MAX_ID_CHARS), got {value!r:.80}")
    return value


def _convert(fn: Any) -> attrs.Converter:
    """A converter that is told the dotted field name (``channels.<name>.<field>``)."""
    def convert(value: object, config: ChannelConfig, attribute: attrs.Attribute) -> object:
        return fn(value, f"channels.{config.name}.{attribute.name}")
    return attrs.Converter(convert, takes_self=True, takes_field=True)


def _one_of(options: tuple[str, ...]) -> Any:
    def check(value: object, field: str) -> str:
        if value not in options:
            raise ConfigError(field, f"must be one of {', '.join(options)}, "
                                     f"got {spelled(value, 80)}")
        return value  # type: ignore[return-value]
    return check


def _timeout(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(field, f"must be a number of seconds, got {spelled(value, 80)}")
    try:
        seconds = float(value)
    except OverflowError:  # an int TOML carries (it takes any) but no float does
        raise ConfigError(field, "must be a positive finite number of seconds, got an "
                                 "integer past a float's range") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(field, f"must be a positive finite number of seconds, "
                                 f"got {spelled(value)}")
    return seconds


def _flag(value: object, field: str) -> bool:
    """A yes/no key: a real bool (TOML's ``true``), not a string or a number read as one."""
    if not isinstance(value, bool):
        raise ConfigError(field, f"must be true or false, got {spelled(value, 80)}")
    return value


def _agent(value: object, field: str) -> str | None:
    if value is None:
        return None
    split_import_path(value, field=field)
    return value  # type: ignore[return-value]


def _instructions(value: object, field: str) -> str | None:
    """Put before every session's first prompt: text that is not valid Unicode could be
    neither sent nor stored, so each session's first turn would fail on it."""
    text = _optional_str(field, value)
    lone = None if text is None else lone_surrogate(text)
    if lone is not None:
        raise ConfigError(field, f"is not valid Unicode (lone surrogate at index {lone})")
    return text


_CONFIG_KEYS = {
    "instructions": "instructions", "identity": "identity", "agent": "agent", "access": "access",
    "memory_scope": "memory_scope", "memoryScope": "memory_scope",
    "dispatch_mode": "dispatch_mode", "dispatchMode": "dispatch_mode",
    "session_scope": "session_scope", "sessionScope": "session_scope",
    "turn_timeout": "turn_timeout", "turnTimeout": "turn_timeout",
    "dedupe_message_ids": "dedupe_message_ids", "dedupeMessageIds": "dedupe_message_ids",
}


@final
@attrs.frozen
class ChannelConfig:
    """One channel's configuration, validated when built.

    ``identity`` / ``memory_scope`` take the attrs records or plain dicts as they come from
    TOML (``display_name`` may be spelled ``displayName``). ``dispatch_mode``: ``steer``
    (default), ``followup`` or ``collect``; ``session_scope``: ``chat`` (default) or
    ``sender``; ``turn_timeout``: seconds or ``None``; ``access``: ``"open"`` (default), an
    :class:`AccessPolicy` or a list of allowed sender ids; ``agent``: an optional import path
    ``package.module:Name``; ``dedupe_message_ids``: ``True`` to answer a platform message id
    seen before (a webhook delivered again) ``duplicate`` instead of handling it again (see
    :meth:`ChannelBase.handle_inbound`).

    Raises:
      ConfigError: naming the field: ``name`` for a name that is not a lowercase identifier
        (or is over ``MAX_ID_CHARS`` characters: it is stored as an id),
        else the dotted path such as ``channels.ops.identity.display_name``.
    """

    name: str = attrs.field(converter=_check_name)
    instructions: str | None = attrs.field(default=None, kw_only=True,
                                           converter=_convert(_instructions))
    identity: ChannelIdentity | None = attrs.field(default=None, kw_only=True,
                                                   converter=_convert(_identity))
    memory_scope: MemoryScope | None = attrs.field(default=None, kw_only=True,
                                                   converter=_convert(_memory_scope))
    dispatch_mode: DispatchMode = attrs.field(default="steer", kw_only=True,
                                              converter=_convert(_one_of(DISPATCH_MODES)))
    session_scope: SessionScope = attrs.field(default="chat", kw_only=True,
                                              converter=_convert(_one_of(SESSION_SCOPES)))
    turn_timeout: float | None = attrs.field(default=None, kw_only=True,
                                             converter=_convert(_timeout))
    access: AccessPolicy = attrs.field(default="open", kw_only=True, converter=_convert(_access))
    agent: str | None = attrs.field(default=None, kw_only=True, converter=_convert(_agent))
    dedupe_message_ids: bool = attrs.field(default=False, kw_only=True,
                                           converter=_convert(_flag))

    @classmethod
    def from_mapping(cls, name: str, mapping: Mapping[str, Any]) -> ChannelConfig:
        """Build from a TOML table ``[channels.<name>]``; unknown keys are rejected by name.

        Both ``snake_case`` and the seed's ``camelCase`` spellings are accepted for multi-word
        keys (``memory_scope`` / ``memoryScope``), but not both at once.

        Raises:
          ConfigError: naming the bad key or value (``channels.ops.colour``), as spelled in
            *mapping* (``channels.ops.dispatchMode``).
        """
        _check_name(name)
        items = _table(f"channels.{name}", mapping, _CONFIG_KEYS)
        try:
            return cls(name, **items)
        except ConfigError as exc:  # named by the field: renamed to the key as written
            prefix = f"channels.{name}."
            head, dot, rest = exc.field.removeprefix(prefix).partition(".")
            head, bracket, index = head.partition("[")
            written = {_CONFIG_KEYS[key]: key for key in mapping}.get(head, head)
            if not exc.field.startswith(prefix) or written == head:
                raise
            raise ConfigError(f"{prefix}{written}{bracket}{index}{dot}{rest}",
                              exc.reason) from None

    @property
    def identity_configured(self) -> bool:
        """Whether an identity was given (even an empty one): the boundary note depends on it."""
        return self.identity is not None

    @property
    def memory_scope_configured(self) -> bool:
        """Whether a memory scope was given (even an empty one)."""
        return self.memory_scope is not None

    @property
    def boundary_configured(self) -> bool:
        """Whether the boundary note belongs in a session's first prompt."""
        return self.identity is not None or self.memory_scope is not None

    def resolved_identity(self) -> RuntimeIdentity:
        """The identity with defaults filled in and every field sanitized to one line.

        ``id`` defaults to ``channel:<name>``, ``display_name`` to ``<name>``; a field that is
        blank after sanitizing counts as missing.
        """
        given = self.identity or ChannelIdentity()
        return RuntimeIdentity(
            id=_clean(given.id) or f"channel:{self.name}",
            display_name=_clean(given.display_name) or self.name,
            description=_clean(given.description) or None,
        )

    def resolved_memory_scope(self) -> RuntimeMemoryScope:
        """The memory scope with defaults: namespace ``channel:<name>``, mode ``metadata-only``."""
        given = self.memory_scope or MemoryScope()
        return RuntimeMemoryScope(namespace=_clean(given.namespace) or f"channel:{self.name}",
                                  mode=MEMORY_MODE)


def _clean(value: str | None) -> str:
    return "" if value is None else sanitize_line(value, limit=_FIELD_LIMIT)
