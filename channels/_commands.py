"""Channel commands: parsing ``/help``, ``/who``, ``/status``, ``/cancel``, ``/clear``, ``/new``,
``/resume`` and the text of the read-only answers.

Only these names are commands; any other ``/x`` is ordinary text for the agent. Answers show
metadata (never an absolute path, never the allowlist's members): the workspace appears by its
basename only.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Literal, final

import attrs

from tidings.actors._policy import check_flag
from tidings.channels._arguments import expect_instance, expect_optional_text
from tidings.channels._config import ChannelConfig
from tidings.channels._sanitize import sanitize_line

__all__ = [
    "COMMAND_NAMES",
    "RESUME_USAGE",
    "Command",
    "CommandName",
    "InvalidCommand",
    "help_text",
    "parse_command",
    "status_text",
    "trim",
    "who_text",
    "workspace_name",
]

CommandName = Literal["help", "who", "status", "cancel", "clear", "new", "resume"]
COMMAND_NAMES: dict[str, CommandName] = {
    "help": "help", "who": "who", "status": "status", "cancel": "cancel", "clear": "clear",
    "reset": "clear", "new": "new", "resume": "resume",
}
"""Every spelling a user may type (lowercase, without ``/``) and the command it means."""

RESUME_USAGE = "Usage: /resume <session_id>"

# ``/name``, an optional ``@botname`` (Telegram groups: letters, digits and ``_``; anything
# else run into it, an invisible character's text included, is not dropped with it), then
# whitespace and the argument.
_COMMAND = re.compile(r"/(?P<name>[A-Za-z0-9_]+)(?:@[A-Za-z0-9_]*)?(?:\s+(?P<argument>.*))?",
                      re.DOTALL)


@final
@attrs.frozen
class Command:
    """A parsed command; ``argument`` is ``/resume``'s session id, None for the others
    (which take no argument)."""

    name: CommandName
    argument: str | None = None


@final
@attrs.frozen
class InvalidCommand:
    """A known command used wrongly (``/resume`` without a session id, ``/new hello``);
    ``message`` says how to use it and is meant to be sent back to the user."""

    name: CommandName
    message: str


def _invisible(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Cf"


def trim(text: str) -> str:
    """*text* without leading and trailing whitespace and invisible format characters (zero
    width space, BOM, word joiner, bidi marks): what a command, and a blank message, is read
    from."""
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def parse_command(text: str) -> Command | InvalidCommand | None:
    """The command ``text`` holds, or None when it is text for the agent.

    Leading and trailing whitespace and invisible format characters (zero width space, BOM,
    bidi marks) are ignored; the name is case-insensitive and ASCII; a ``@botname`` suffix
    (ASCII letters, digits and ``_``) is dropped, but text run into one by an invisible
    character (``/clear@bot``, a zero width space, ``x``) makes it no command, as it does
    without the name. ``/reset`` is ``clear``. Unknown names (``/deploy``), ``/ help``, ``//x`` and
    paths like ``/tmp/x`` are not commands. ``/resume`` needs exactly one session id, and
    every other command takes none (``/new hello``), else an :class:`InvalidCommand` with the
    command's usage is returned. Never raises for any ``str``; anything else is a
    ``TypeError`` naming ``text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    match = _COMMAND.fullmatch(trim(text))
    if match is None:
        return None
    name = COMMAND_NAMES.get(match["name"].lower())
    if name is None:
        return None
    argument = trim(match["argument"] or "") or None
    if name == "resume":
        words = argument.split() if argument else []
        if len(words) != 1:
            return InvalidCommand("resume", RESUME_USAGE)
        return Command("resume", words[0])
    if argument is not None:  # refused rather than dropped: nothing typed is silently lost
        return InvalidCommand(name, f"Usage: /{match['name'].lower()}")
    return Command(name)


def help_text() -> str:
    """The answer to ``/help``."""
    return "\n".join([
        "Commands:",
        "/help - show this help",
        "/who - this channel's identity, memory namespace and session",
        "/status - session state, access policy, identity, memory and dispatch mode",
        "/cancel - cancel the running request",
        "/clear - end this conversation's session (alias: /reset)",
        "/new - start a fresh session",
        "/resume <session_id> - switch back to one of this conversation's sessions",
        "Any other message goes to the agent.",
    ])


def workspace_name(workspace: str | os.PathLike[str]) -> str:
    """The basename of ``workspace`` (sanitized), never a path; ``(root)`` for ``/``.

    Raises ``TypeError`` naming ``workspace`` for anything but a str, bytes or
    ``os.PathLike`` of one (``os.fsdecode``'s own error named no argument)."""
    try:
        decoded = os.fsdecode(workspace)
    except TypeError:
        raise TypeError(f"workspace: expected str, bytes or os.PathLike, got "
                        f"{type(workspace).__name__}") from None
    path = os.path.abspath(decoded).rstrip("/\\")
    name = re.split(r"[/\\]", path)[-1] if path else ""
    return sanitize_line(name, limit=100) or "(root)"


def _session(session_id: str | None) -> str:
    return "active" if session_id else "none"


def who_text(config: ChannelConfig, *, session_id: str | None,
             workspace: str | os.PathLike[str] | None = None) -> str:
    """The answer to ``/who``: channel, display name, memory namespace, workspace basename and
    whether the conversation has a session.

    ``session_id`` is the conversation's current session, or None (``/who`` never creates one).
    Raises ``TypeError`` naming ``config`` (not a :class:`ChannelConfig`), ``session_id`` (not
    a ``str`` or None) or ``workspace`` (see :func:`workspace_name`).
    """
    expect_instance("config", config, ChannelConfig)
    expect_optional_text("session_id", session_id)
    identity = config.resolved_identity()
    lines = [f"Channel: {config.name}",
             f"Display name: {identity.display_name}",
             f"Memory namespace: {config.resolved_memory_scope().namespace}"]
    if workspace is not None:
        lines.append(f"Workspace: {workspace_name(workspace)}")
    lines.append(f"Session: {_session(session_id)}")
    return "\n".join(lines)


def status_text(config: ChannelConfig, *, session_id: str | None,
                turn_running: bool = False) -> str:
    """The answer to ``/status``: session state, access policy, identity id, memory mode.

    Raises ``TypeError`` naming ``config`` (not a :class:`ChannelConfig`) or ``session_id``
    (not a ``str`` or None), and ``NotABoolError`` naming ``turn_running`` (not a real bool).
    """
    expect_instance("config", config, ChannelConfig)
    expect_optional_text("session_id", session_id)
    check_flag("turn_running", turn_running)
    if session_id:
        state = "running a request" if turn_running else "idle"
        session = f"active, {state} (id {sanitize_line(session_id, limit=100)})"
    else:
        session = "none"
    return "\n".join([
        f"Session: {session}",
        f"Access: {config.access.describe()}",
        f"Identity id: {config.resolved_identity().id}",
        f"Memory mode: {config.resolved_memory_scope().mode}",
        f"Dispatch mode: {config.dispatch_mode}",
    ])
