"""``tidings serve`` configuration: a TOML file (stdlib ``tomllib``) overridden by flags.

Every key is optional; with none at all ``tidings serve`` runs ``./tidings.db``, the built-in
``EchoAgent`` and the gateway on 127.0.0.1:8765. The file's tables (``docs/tidings.example.toml``
shows them all)::

    [serve]           db, workspace, core_id, agent, grace, writer
    [gateway]         host, port, token, token_file, ack_window, heartbeat_s, max_frame_bytes,
                      max_backlog, max_backlog_bytes, rate, burst, hello_timeout,
                      prompt_timeout, replay_page
    [channels.gateway] the gateway channel's ChannelConfig (instructions, identity,
                      memory_scope, dispatch_mode, turn_timeout, access, agent: used
                      when serve.agent is not given)
    [channels.<name>] other channels' tables (``tidings chat --local --channel NAME``):
                      not served, but checked as ChannelConfigs all the same
    [logging]         level, json
    [supervisor]      max_restarts, period
    [retention]       keep, interval (default: no retention, nothing is ever deleted)

Anything invalid is a :class:`ConfigError` naming the dotted key and the reason; nothing
starts then (``tidings serve`` exits 2).
"""

from __future__ import annotations

import math
import os
import pathlib
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from tidings.channels import ChannelConfig, GatewayConfig
from tidings.channels._gateway import check_gateway_channel_config
from tidings.channels._gateway_config import GATEWAY_KEYS
from tidings.channels._loader import split_import_path
from tidings.errors import ConfigError
from tidings.store import EXECUTORS, Executor
from tidings.supervisor._age import parse_age
from tidings.supervisor._cli_paths import names_a_folder
from tidings.supervisor._logging import LEVELS
from tidings.supervisor._toml_spelling import spelled

__all__ = ["DEFAULT_DB", "MAX_CONFIG_BYTES", "MIN_PRUNE_INTERVAL", "MIN_RETENTION_KEEP",
           "ServeConfig", "file_path", "load_config"]

DEFAULT_DB = "tidings.db"

MAX_CONFIG_BYTES = 1024 * 1024
"""The largest configuration file read (1 MiB; the example with every key is about 4 KiB).
Read whole into memory otherwise: ``--config /dev/zero``, or a log or dump named by mistake,
took all the memory it could and ended in a ``MemoryError`` traceback. A pipe (``--config
<(...)``) is still read, up to this size."""

_TABLES = ("serve", "gateway", "channels", "logging", "supervisor", "retention")
_SERVE_KEYS = ("db", "workspace", "core_id", "agent", "grace", "writer")
_LOGGING_KEYS = ("level", "json")
_SUPERVISOR_KEYS = ("max_restarts", "period")
_RETENTION_KEYS = ("keep", "interval")


@attrs.frozen
class ServeConfig:
    """Everything ``tidings serve`` needs, validated. ``gateway`` holds the ``[gateway]``
    settings except the token (resolved at start, see :mod:`._token`)."""

    db: pathlib.Path = pathlib.Path(DEFAULT_DB)
    workspace: pathlib.Path = pathlib.Path(".")
    core_id: str = "default"
    agent: str | None = None
    grace: float = 10.0
    writer: Executor = "process"
    token: str | None = attrs.field(default=None, repr=False)
    token_file: pathlib.Path | None = None
    gateway: Mapping[str, Any] = attrs.field(factory=dict)
    channel: ChannelConfig = attrs.field(factory=lambda: ChannelConfig("gateway"))
    log_level: str = "info"
    log_json: bool = False
    max_restarts: int = 5
    period: float = 60.0
    keep: float | None = None
    """``retention.keep``: prune what is older than this many seconds (None: never)."""
    prune_interval: float = 3600.0
    """``retention.interval``: seconds between prunes (the first comes at start), at least
    :data:`MIN_PRUNE_INTERVAL`."""
    config_path: pathlib.Path | None = attrs.field(default=None, eq=False)
    """The file it was read from (``--config``), if any: it may hold ``gateway.token``, so
    ``tidings serve`` never lets a turn send it (a private file, see ``open_runtime``). Not
    a setting: two configurations that set the same are equal, whichever file said so."""

    def gateway_config(self, token: str) -> GatewayConfig:
        return GatewayConfig.from_mapping(self.gateway, token=token)


def _table(data: Mapping[str, Any], name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(name, f"must be a table, not {type(value).__name__}")
    for key in value:
        if key not in keys:
            raise ConfigError(f"{name}.{key}", f"unknown key (known: {', '.join(keys)})")
    return dict(value)


def _channel_config(name: str, table: Any) -> ChannelConfig:
    """``[channels.<name>]`` as a channel's config. The file is shared with ``tidings chat
    --local``, which reads the table of its ``--channel``: ``serve`` checks every channel's
    table, so a mistyped one is refused here, naming its dotted key, not at a later chat."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"channels.{name}", "must be a table")
    try:
        return ChannelConfig.from_mapping(name, table)
    except ConfigError as exc:
        if exc.field != "name":
            raise
        raise ConfigError(f"channels.{name}", exc.reason) from None


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be a non-empty string, got {spelled(value)}")
    return value


def _path(field: str, value: Any, *, file: bool = False) -> pathlib.Path:
    """A path from the file (a string) or a flag (a string or a path): not a number, and no
    NUL character (TOML's ``"\\u0000"``): no file system takes one, and the OS call that
    finds out (a ``ValueError``) may come after the database was made. ``~`` is expanded (a
    refusal naming *field* when there is no home to expand it to). A *file*'s path ending
    with a separator (a folder's) is refused: pathlib drops it, and ``state/`` was made a
    database file named ``state``."""
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(field, f"must be a path (a string), got {spelled(value)}")
    text = _text(field, os.fspath(value))
    if "\x00" in text:
        raise ConfigError(field, f"must not hold a NUL character, got {spelled(text)}")
    if file and names_a_folder(text):  # pathlib drops the separator: 'state/' was a file
        hint = (f": give the file in it, such as {spelled(text + 'tidings.db')}"
                if field == "serve.db" else "")
        raise ConfigError(field, f"must be a file's path, got {spelled(text)}, which ends with "
                                 f"{text[-1]} (a folder's{hint})")
    try:
        return pathlib.Path(text).expanduser()
    except RuntimeError:  # '~' with no HOME and no password entry (a container's bare uid),
        # or '~name' for no such user: pathlib raises a bare RuntimeError
        raise ConfigError(field, f"{spelled(text)} starts with ~, but there is no home "
                                 "directory to expand it to (HOME is not set, or no such "
                                 "user): give the whole path") from None


def _seconds(field: str, value: Any) -> float:
    """A finite number of seconds >= 0. An integer TOML carries (it takes any) but no float
    holds is refused as ``inf`` is, by field (``math.isfinite`` raised a bare
    ``OverflowError`` on it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(field, f"must be a number of seconds >= 0, got {spelled(value, 80)}")
    try:
        seconds = float(value)
    except OverflowError:
        raise ConfigError(field, "must be a finite number of seconds >= 0, got an integer "
                                 "past a float's range") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(field, f"must be a number of seconds >= 0, got {spelled(value)}")
    return seconds


def _age(field: str, value: Any) -> float:
    """An age: a string like ``"30d"``, ``"12h"``, ``"90m"``, ``"3600s"``, or a number of
    seconds (finite, >= 0)."""
    if isinstance(value, str):
        try:
            return parse_age(value)
        except ValueError as exc:
            raise ConfigError(field, str(exc)) from None
    try:
        return _seconds(field, value)
    except ConfigError:
        raise ConfigError(field, f"must be an age like \"30d\", \"12h\", \"90m\" or a number of "
                                 f"seconds >= 0, got {spelled(value, 80)}") from None


MIN_PRUNE_INTERVAL = 1.0
"""The shortest ``retention.interval`` (seconds): any above 0 was taken, and one of a
millisecond made serve's retention a busy loop of prunes through the writer."""


MIN_RETENTION_KEEP = 3600.0
"""The shortest ``retention.keep`` (seconds). The client message ids a prune forgets are the
dedupe window: with a keep of 0 a gateway client's resend after a reconnect, or a platform's
retry, of a message answered meanwhile ran again as a new message once a prune had run (serve
prunes at start, right after recovery told the messages a crash cut)."""


def _retention(table: Mapping[str, Any]) -> tuple[float | None, float]:
    """``[retention]`` as (keep, interval). ``interval`` alone is refused: nothing would be
    pruned, which is not what someone who wrote it meant; so is one under
    :data:`MIN_PRUNE_INTERVAL`, and a keep under :data:`MIN_RETENTION_KEEP`."""
    interval = _age("retention.interval", table.get("interval", "1h"))
    if interval < MIN_PRUNE_INTERVAL:
        raise ConfigError("retention.interval", f"must be at least 1 second (a prune takes "
                                                f"the writer), got {interval:g}s")
    if "keep" not in table:
        if "interval" in table:
            raise ConfigError("retention.keep", "missing: retention.interval is given, but "
                                                "without keep nothing is pruned")
        return None, interval
    keep = _age("retention.keep", table["keep"])
    if keep < MIN_RETENTION_KEEP:
        raise ConfigError("retention.keep", f"must be at least 1 hour (\"1h\": the ids of "
                                            f"client messages are remembered that long, so a "
                                            f"resend is a duplicate), got {keep:g}s")
    return keep, interval


def file_path(field: str, value: str | os.PathLike[str]) -> pathlib.Path:
    """The file option *value* (``--config``, the chat's ``--token-file``) as a path, a
    leading ``~`` the home directory, as in every path of the file: the shell leaves it as
    typed in ``--config=~/t.toml``, and ``./~/t.toml`` was read. Raises
    :class:`ConfigError` naming *field* (no home to expand it to, a NUL, a folder's path)."""
    return _path(field, value, file=True)


def read_file(path: pathlib.Path) -> dict[str, Any]:
    """The TOML file at *path* (``~`` expanded), of at most :data:`MAX_CONFIG_BYTES`. Raises
    :class:`ConfigError` (field ``config``)."""
    return read_toml(file_path("config", path))


def read_toml(path: pathlib.Path) -> dict[str, Any]:
    """:func:`read_file` of a *path* :func:`file_path` gave (``~`` expanded already: once, by
    the caller, which keeps the path it read)."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError("config", f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError("config", f"{path} is over {MAX_CONFIG_BYTES} bytes: not a "
                                    "configuration file")
    if data.startswith(b"\xef\xbb\xbf"):  # tomllib: 'Invalid statement (at line 1, column 1)'
        raise ConfigError("config", f"{path} starts with a byte order mark (U+FEFF): TOML "
                                    "files are UTF-8 without one (save it so)")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("config", f"{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        raise ConfigError("config", f"{path} is not UTF-8 text (byte {exc.start}): TOML files "
                                    "are UTF-8") from None


def load_config(path: pathlib.Path | None = None, **flags: Any) -> ServeConfig:
    """Read the file at *path* (if any), apply *flags* (None means "not given"), validate.

    *flags* may be ``db``, ``workspace``, ``core_id``, ``agent``, ``grace``, ``writer``, ``host``,
    ``port``, ``token``, ``token_file``, ``log_level``, ``log_json``. Raises
    :class:`ConfigError` naming the dotted key, also for a value of the file that a flag
    replaces (the file is wrong all the same, and would be refused without the flag).
    """
    if path is not None:  # expanded once: the file read is the one kept private
        path = file_path("config", path)
    data = read_toml(path) if path is not None else {}
    for name in data:
        if name not in _TABLES:
            raise ConfigError(name, f"unknown table (known: {', '.join(_TABLES)})")
    serve = _table(data, "serve", _SERVE_KEYS)
    gateway = _table(data, "gateway", (*GATEWAY_KEYS, "token_file"))
    logging_ = _table(data, "logging", _LOGGING_KEYS)
    supervisor = _table(data, "supervisor", _SUPERVISOR_KEYS)
    keep, prune_interval = _retention(_table(data, "retention", _RETENTION_KEYS))
    channels = data.get("channels", {})
    if not isinstance(channels, Mapping):
        raise ConfigError("channels", "must be a table of channel tables")
    # Checked now, though only the gateway's is served; each once (one's warnings said once).
    checked = {name: _channel_config(name, table) for name, table in channels.items()}
    channel = checked.get("gateway") or _channel_config("gateway", {})
    check_gateway_channel_config(channel)  # the gateway honours not every channel setting
    # Every value the file gives is checked, also one a flag replaces: taken while the flag
    # hid it, it was refused at the first start without the flag.
    _checked(serve, gateway, logging_, supervisor, channel=channel, keep=keep,
             prune_interval=prune_interval)

    given = {k: v for k, v in flags.items() if v is not None}
    for key in _SERVE_KEYS:
        if key in given:
            serve[key] = given[key]
    for key in ("host", "port", "token", "token_file"):
        if key in given:
            gateway[key] = given[key]
    # --token and --token-file are two ways to give the one token: either flag replaces both
    # keys of the file (the file's token would otherwise win over --token-file).
    if "token" in given:
        gateway.pop("token_file", None)
    elif "token_file" in given:
        gateway.pop("token", None)
    elif "token" in gateway and "token_file" in gateway:  # both in the file: as both flags are
        raise ConfigError("gateway.token_file", "give gateway.token or gateway.token_file, "
                                                "not both (the token would be used and the "
                                                "file never read)")
    if "log_level" in given:
        logging_["level"] = given["log_level"]
    if given.get("log_json"):
        logging_["json"] = True

    config = _checked(serve, gateway, logging_, supervisor, channel=channel, keep=keep,
                      prune_interval=prune_interval)
    return config if path is None else attrs.evolve(config, config_path=path)


def _checked(serve: Mapping[str, Any], gateway: Mapping[str, Any], logging_: Mapping[str, Any],
             supervisor: Mapping[str, Any], *, channel: ChannelConfig, keep: float | None,
             prune_interval: float) -> ServeConfig:
    """The tables (not changed) as a :class:`ServeConfig`, each value checked."""
    gateway = dict(gateway)
    agent = serve.get("agent")
    if agent is not None:
        split_import_path(agent, field="serve.agent")
    writer = serve.get("writer", "process")
    if writer not in EXECUTORS:
        raise ConfigError("serve.writer", f"must be one of {', '.join(EXECUTORS)}, "
                                          f"got {spelled(writer, 80)}")
    level = logging_.get("level", "info")
    if level not in LEVELS:
        raise ConfigError("logging.level", f"must be one of {', '.join(LEVELS)}, "
                                           f"got {spelled(level, 80)}")
    as_json = logging_.get("json", False)
    if not isinstance(as_json, bool):
        raise ConfigError("logging.json", f"must be true or false, got {spelled(as_json, 80)}")
    max_restarts = supervisor.get("max_restarts", 5)
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ConfigError("supervisor.max_restarts", f"must be an integer >= 0, "
                                                     f"got {spelled(max_restarts, 80)}")
    period = _seconds("supervisor.period", supervisor.get("period", 60.0))
    if period == 0:
        raise ConfigError("supervisor.period", "must be more than 0 seconds")
    token = gateway.pop("token", None)
    if token is not None:
        _text("gateway.token", token)
    token_file = gateway.pop("token_file", None)
    if token_file is not None:
        token_file = _path("gateway.token_file", token_file, file=True)
    # Validate the gateway settings now (a placeholder token: the real one is resolved later).
    GatewayConfig.from_mapping(gateway, token=token or "x" * 8)
    return ServeConfig(
        db=_path("serve.db", serve.get("db", DEFAULT_DB), file=True),
        workspace=_path("serve.workspace", serve.get("workspace", ".")),
        core_id=_text("serve.core_id", serve.get("core_id", "default")),
        agent=agent,
        grace=_seconds("serve.grace", serve.get("grace", 10.0)), writer=writer,
        token=token, token_file=token_file, gateway=gateway, channel=channel,
        log_level=level, log_json=as_json, max_restarts=max_restarts, period=period,
        keep=keep, prune_interval=prune_interval)
