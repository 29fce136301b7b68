"""tidings.channels: channel configuration, conversation keys, the boundary note, task
lifecycle events, commands and the agent bridge (``EchoAgent``, ``CommandAgent``).

The channel base that wires these to the delivery runtime builds on this package.
"""

from tidings.channels._keys import ConversationKey as ConversationKey
from tidings.channels._keys import conversation_key as conversation_key
from tidings.channels._keys import parse_conversation_key as parse_conversation_key

__all__ = [
    "ConversationKey",
    "conversation_key",
    "parse_conversation_key",
]
