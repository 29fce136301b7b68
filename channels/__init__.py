"""tidings.channels: channel configuration, conversation keys, the boundary note, task
lifecycle events, commands and the agent bridge (``EchoAgent``, ``CommandAgent``).

``ChannelBase`` wires them to the delivery runtime: an adapter subclasses it and implements
``async deliver(outbound)``.
"""

from tidings.channels._agents import Agent as Agent
from tidings.channels._agents import AgentTurn as AgentTurn
from tidings.channels._agents import EchoAgent as EchoAgent
from tidings.channels._base import REFUSAL as REFUSAL
from tidings.channels._base import ChannelBase as ChannelBase
from tidings.channels._base import InboundOutcome as InboundOutcome
from tidings.channels._boundary import BLOCK_SEPARATOR as BLOCK_SEPARATOR
from tidings.channels._boundary import STEER_NOTE as STEER_NOTE
from tidings.channels._boundary import boundary_note as boundary_note
from tidings.channels._boundary import compose_first_prompt as compose_first_prompt
from tidings.channels._command_agent import CommandAgent as CommandAgent
from tidings.channels._commands import COMMAND_NAMES as COMMAND_NAMES
from tidings.channels._commands import Command as Command
from tidings.channels._commands import CommandName as CommandName
from tidings.channels._commands import InvalidCommand as InvalidCommand
from tidings.channels._commands import help_text as help_text
from tidings.channels._commands import parse_command as parse_command
from tidings.channels._commands import status_text as status_text
from tidings.channels._commands import who_text as who_text
from tidings.channels._commands import workspace_name as workspace_name
from tidings.channels._config import DISPATCH_MODES as DISPATCH_MODES
from tidings.channels._config import MEMORY_MODE as MEMORY_MODE
from tidings.channels._config import SESSION_SCOPES as SESSION_SCOPES
from tidings.channels._config import AccessPolicy as AccessPolicy
from tidings.channels._config import ChannelConfig as ChannelConfig
from tidings.channels._config import ChannelIdentity as ChannelIdentity
from tidings.channels._config import DispatchMode as DispatchMode
from tidings.channels._config import MemoryScope as MemoryScope
from tidings.channels._config import RuntimeIdentity as RuntimeIdentity
from tidings.channels._config import RuntimeMemoryScope as RuntimeMemoryScope
from tidings.channels._config import SessionScope as SessionScope
from tidings.channels._directory import Conversation as Conversation
from tidings.channels._dispatch import COLLECT_SEPARATOR as COLLECT_SEPARATOR
from tidings.channels._gateway import GatewayChannel as GatewayChannel
from tidings.channels._gateway_client import GatewayClient as GatewayClient
from tidings.channels._gateway_client import GatewayClosed as GatewayClosed
from tidings.channels._gateway_client import GatewayTimeout as GatewayTimeout
from tidings.channels._gateway_config import GatewayConfig as GatewayConfig
from tidings.channels._gateway_frames import PROTOCOL_VERSION as PROTOCOL_VERSION
from tidings.channels._inbound import Inbound as Inbound
from tidings.channels._inbound import inbound_conversation_key as inbound_conversation_key
from tidings.channels._keys import ConversationKey as ConversationKey
from tidings.channels._keys import conversation_key as conversation_key
from tidings.channels._keys import parse_conversation_key as parse_conversation_key
from tidings.channels._lifecycle import CANCEL_REASONS as CANCEL_REASONS
from tidings.channels._lifecycle import CancelReason as CancelReason
from tidings.channels._lifecycle import LifecycleEmitter as LifecycleEmitter
from tidings.channels._lifecycle import LifecycleHook as LifecycleHook
from tidings.channels._lifecycle import TaskCancelled as TaskCancelled
from tidings.channels._lifecycle import TaskCompleted as TaskCompleted
from tidings.channels._lifecycle import TaskFailed as TaskFailed
from tidings.channels._lifecycle import TaskLifecycleEvent as TaskLifecycleEvent
from tidings.channels._lifecycle import TaskStarted as TaskStarted
from tidings.channels._lifecycle import TaskTextChunk as TaskTextChunk
from tidings.channels._lifecycle import TaskToolCall as TaskToolCall
from tidings.channels._lifecycle import ToolCall as ToolCall
from tidings.channels._loader import load_agent as load_agent
from tidings.channels._stop_button import CancelOutcome as CancelOutcome
from tidings.channels._terminal import TerminalChannel as TerminalChannel

__all__ = [
    "BLOCK_SEPARATOR",
    "CANCEL_REASONS",
    "COLLECT_SEPARATOR",
    "COMMAND_NAMES",
    "DISPATCH_MODES",
    "MEMORY_MODE",
    "PROTOCOL_VERSION",
    "REFUSAL",
    "SESSION_SCOPES",
    "STEER_NOTE",
    "AccessPolicy",
    "Agent",
    "AgentTurn",
    "CancelOutcome",
    "CancelReason",
    "ChannelBase",
    "ChannelConfig",
    "ChannelIdentity",
    "Command",
    "CommandAgent",
    "CommandName",
    "Conversation",
    "ConversationKey",
    "DispatchMode",
    "EchoAgent",
    "GatewayChannel",
    "GatewayClient",
    "GatewayClosed",
    "GatewayConfig",
    "GatewayTimeout",
    "Inbound",
    "InboundOutcome",
    "InvalidCommand",
    "LifecycleEmitter",
    "LifecycleHook",
    "MemoryScope",
    "RuntimeIdentity",
    "RuntimeMemoryScope",
    "SessionScope",
    "TaskCancelled",
    "TaskCompleted",
    "TaskFailed",
    "TaskLifecycleEvent",
    "TaskStarted",
    "TaskTextChunk",
    "TaskToolCall",
    "TerminalChannel",
    "ToolCall",
    "boundary_note",
    "compose_first_prompt",
    "conversation_key",
    "help_text",
    "inbound_conversation_key",
    "load_agent",
    "parse_command",
    "parse_conversation_key",
    "status_text",
    "who_text",
    "workspace_name",
]
