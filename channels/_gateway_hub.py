"""The live connections of one gateway conversation, and the frames only they see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from tidings.actors._blocks import plain_json
from tidings.channels._directory import Conversation
from tidings.channels._lifecycle import TaskLifecycleEvent

if TYPE_CHECKING:
    from tidings.channels._gateway_conn import Connection

__all__ = ["Hub", "lifecycle_frame", "notice_frame"]


class Hub:
    """Every connection that said one conversation NAME (two devices share one hub).

    Deliveries of the conversation's sessions go to all of them; ``arrived`` wakes deliveries
    waiting, with nobody connected, for the connection of a hello on its way in (not for a
    client to come back: such a delivery is ``RecipientAway``), and ``waiting`` holds them
    meanwhile (delivery id -> its session and seq: see :meth:`first_waiting`). ``users``
    counts the deliveries holding the hub (they may wait on it) and the leaves still
    abandoning its rows (they watch it for a client coming back): the gateway drops a hub
    only when it is :attr:`idle`.
    """

    __slots__ = ("_arrived", "connections", "conversation", "users", "waiting")

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.connections: list[Connection] = []
        self.users = 0
        self.waiting: dict[str, tuple[str, int]] = {}
        self._arrived = trio.Event()

    @property
    def idle(self) -> bool:
        """No connection, and nothing holds it: nothing would miss it if it went."""
        return not self.connections and not self.users

    def add(self, conn: Connection) -> None:
        self.connections.append(conn)
        self.wake()

    def remove(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.remove(conn)

    def first_waiting(self, session_id: str) -> int | None:
        """The lowest seq of *session_id* among the deliveries waiting for a hello's
        connection (none connected took them), None if none waits: that connection is sent
        it. Sync."""
        return min((seq for waiting_in, seq in self.waiting.values()
                    if waiting_in == session_id), default=None)

    def wake(self) -> None:
        """Wake everything waiting in :meth:`wait_arrival`."""
        self._arrived.set()
        self._arrived = trio.Event()

    async def wait_arrival(self) -> None:
        """Block until a connection joins (or :meth:`wake`)."""
        await self._arrived.wait()

    def broadcast(self, frame: dict[str, Any], *, delivery_id: str | None = None,
                  text: str | None = None) -> int:
        """Queue *frame* (*text*: already encoded) on every live connection (never blocks);
        how many took it."""
        sent = 0
        for conn in list(self.connections):
            if conn.alive:
                conn.push(frame, delivery_id=delivery_id, text=text)
                sent += 1
        return sent

    def broadcast_chunk(self, frame: dict[str, Any]) -> None:
        """Queue a ``text_chunk`` lifecycle *frame* on every live connection: a connection
        behind may join it to the chunk of the same message waiting last in its queue (see
        ``Connection.push_chunk``)."""
        for conn in list(self.connections):
            if conn.alive:
                conn.push_chunk(frame)


def notice_frame(outbound: Any) -> dict[str, Any]:
    """A ``notice`` frame: a command's answer with no session (*outbound*'s text and
    ``command``), never stored. One that answers a client's message (``/clear``,
    ``/cancel``, a refused ``/resume``) names it, ``message_id``: the client acks it by that
    id (``{"type": "ack", "message_ids": [...]}``), and until then a resend of the id is sent
    it again (see ``channels/_owed_answers.py``)."""
    frame: dict[str, Any] = {"type": "notice", "text": outbound.text,
                             "command": outbound.metadata.get("command")}
    message_id = outbound.metadata.get("message_id")
    if message_id is not None:
        frame["message_id"] = message_id
    return frame


def lifecycle_frame(event: TaskLifecycleEvent) -> dict[str, Any]:
    """A ``lifecycle`` frame: ``event``, ``session_id``, ``message_id`` (the client's message
    id) and, by event, ``chunk``, ``tool_call``, ``reason`` or ``error``. Never stored."""
    frame: dict[str, Any] = {"type": "lifecycle", "event": event.type,
                             "session_id": event.session_id, "message_id": event.message_id}
    chunk = getattr(event, "chunk", None)
    if chunk is not None:
        frame["chunk"] = chunk
    call = getattr(event, "tool_call", None)
    if call is not None:
        frame["tool_call"] = {"name": call.name, "arguments": plain_json(call.arguments),
                              "call_id": call.call_id}
    reason = getattr(event, "reason", None)
    if reason is not None:
        frame["reason"] = reason
    error = getattr(event, "error", None)
    if error is not None:
        frame["error"] = error
    return frame
