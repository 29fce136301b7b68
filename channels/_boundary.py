"""The channel boundary note and the shape of a session's first prompt.

The note states the channel's identity and memory scope so an agent keeps channels apart. It
is added once per agent session, after the channel's instructions (recency gives it priority),
and only when identity or memory scope is configured: instructions-only channels keep their
old prompt shape. Every field is sanitized to one capped line, so configuration cannot forge
prompt structure.
"""

from __future__ import annotations

from tidings.actors._blocks import check_text
from tidings.actors._policy import check_flag
from tidings.channels._arguments import expect_instance
from tidings.channels._config import ChannelConfig, RuntimeIdentity, RuntimeMemoryScope
from tidings.channels._sanitize import sanitize_line

__all__ = ["BLOCK_SEPARATOR", "STEER_NOTE", "boundary_note", "compose_first_prompt"]

BLOCK_SEPARATOR = "\n\n"
"""Between instructions, the boundary note, the steer note and the user's text."""

STEER_NOTE = ("[The user sent a new message while you were working. "
              "Their previous request has been cancelled.]")
"""Prefixed to the user's text of a turn that replaced a cancelled one (dispatch mode steer),
only when the agent had been given the cancelled request: a turn steered away before its agent
ran was never worked on."""

_FIELD_LIMIT = 200


def boundary_note(identity: RuntimeIdentity, memory_scope: RuntimeMemoryScope) -> str:
    """The boundary note for resolved metadata (no trailing newline).

    The description line is left out when there is none; every value is sanitized again here
    (one line, no control or bidi characters, at most 200 characters), whatever its origin.
    A wrong type (not a :class:`RuntimeIdentity` / :class:`RuntimeMemoryScope`: what
    ``ChannelConfig.resolved_identity()`` and ``resolved_memory_scope()`` return) is a
    ``TypeError`` naming ``identity`` or ``memory_scope``.
    """
    expect_instance("identity", identity, RuntimeIdentity)
    expect_instance("memory_scope", memory_scope, RuntimeMemoryScope)
    lines = ["Channel identity:",
             f"- id: {sanitize_line(identity.id, limit=_FIELD_LIMIT)}",
             f"- display name: {sanitize_line(identity.display_name, limit=_FIELD_LIMIT)}"]
    description = sanitize_line(identity.description or "", limit=_FIELD_LIMIT)
    if description:
        lines.append(f"- description: {description}")
    lines += ["",
              "Memory scope:",
              f"- namespace: {sanitize_line(memory_scope.namespace, limit=_FIELD_LIMIT)}",
              f"- mode: {sanitize_line(memory_scope.mode, limit=_FIELD_LIMIT)}",
              "- data from other channels must not be shared."]
    return "\n".join(lines)


def compose_first_prompt(config: ChannelConfig, user_text: str, *, first_in_session: bool,
                   steered: bool = False) -> str:
    """What the agent sees for ``user_text``.

    With ``first_in_session``: the instructions (when not blank), then the boundary note (only
    when identity or memory scope is configured), then the text, joined by
    :data:`BLOCK_SEPARATOR`. Otherwise the text alone. ``steered`` puts :data:`STEER_NOTE`
    right before the text. A channel with none of these gets ``user_text`` unchanged.

    The caller decides both flags from what the agent has seen, not from the turn rows alone:
    ``first_in_session`` is true until a prompt of the session has reached the agent (a turn
    cancelled while it opened does not count), and ``steered`` only when the agent had been
    given the request that was steered away. A pure function: the same flags, the same prompt.

    Raises ``TypeError`` naming ``config`` (not a :class:`ChannelConfig`) or ``user_text``
    (not a ``str``), a ``ValidationError`` naming ``user_text`` for one that is not valid
    Unicode (a lone surrogate: no agent could be given it), and ``NotABoolError`` naming a
    flag that is not a real bool (a truthy stand-in would add the instructions or the steer
    note where none was meant).
    """
    expect_instance("config", config, ChannelConfig)
    check_text(user_text, "user_text")
    check_flag("first_in_session", first_in_session)
    check_flag("steered", steered)
    blocks: list[str] = []
    if first_in_session:
        if config.instructions is not None and config.instructions.strip():
            blocks.append(config.instructions)
        if config.boundary_configured:
            blocks.append(boundary_note(config.resolved_identity(),
                                        config.resolved_memory_scope()))
    if steered:
        blocks.append(STEER_NOTE)
    blocks.append(user_text)
    return BLOCK_SEPARATOR.join(blocks)
