"""SQLite persistence for tidings: stdlib ``sqlite3`` made safe and fast for trio.

Reads run on read-only connections in worker threads; one writer owns the only write connection
and group-commits everything waiting in its mailbox in a single transaction. This package is the
bottom layer: it knows nothing of channels, routes or actors.

Every public name is imported on first use (:func:`~tidings.store._lazy.lazy_exports`), so
importing a module of the store, as the writer child does, loads only what that module needs.
"""

from typing import TYPE_CHECKING

from tidings.store._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from tidings.store import _acking as acking
    from tidings.store import _queries as queries
    from tidings.store import _recovery as recovery
    from tidings.store._batch import BatchOutcome as BatchOutcome
    from tidings.store._batch import plan_segments as plan_segments
    from tidings.store._connect import Synchronous as Synchronous
    from tidings.store._connect import check_synchronous as check_synchronous
    from tidings.store._inbound import HeldInbound as HeldInbound
    from tidings.store._inbound import ResumeOutcome as ResumeOutcome
    from tidings.store._inbound import append_user_message as append_user_message
    from tidings.store._inbound import held_inbound as held_inbound
    from tidings.store._inbound import hold_inbound as hold_inbound
    from tidings.store._inbound import release_inbound as release_inbound
    from tidings.store._inbound import resume_conversation as resume_conversation
    from tidings.store._inbound import session_has_turn as session_has_turn
    from tidings.store._inbound import session_has_turns as session_has_turns
    from tidings.store._ops import Call as Call
    from tidings.store._ops import Execute as Execute
    from tidings.store._ops import InsertRows as InsertRows
    from tidings.store._ops import Op as Op
    from tidings.store._ops import UpdateRows as UpdateRows
    from tidings.store._outbox import OUTBOX_STATUSES as OUTBOX_STATUSES
    from tidings.store._outbox import TERMINAL_STATUSES as TERMINAL_STATUSES
    from tidings.store._outbox import TRANSITIONS as TRANSITIONS
    from tidings.store._outbox import AppliedTransition as AppliedTransition
    from tidings.store._outbox import EnqueuedDelivery as EnqueuedDelivery
    from tidings.store._outbox import OutboxInsert as OutboxInsert
    from tidings.store._outbox import Transition as Transition
    from tidings.store._outbox import end_stale_progress as end_stale_progress
    from tidings.store._outbox import transition as transition
    from tidings.store._prune import PruneReport as PruneReport
    from tidings.store._prune import prune_call as prune_call
    from tidings.store._prune import prune_file as prune_file
    from tidings.store._reader import ReadPool as ReadPool
    from tidings.store._records import DeliveryStatus as DeliveryStatus
    from tidings.store._records import HistoryMessage as HistoryMessage
    from tidings.store._records import OutboxRow as OutboxRow
    from tidings.store._records import RuntimeEvent as RuntimeEvent
    from tidings.store._records import SessionRecord as SessionRecord
    from tidings.store._recovery import SessionHead as SessionHead
    from tidings.store._schema import MAX_INTEGER as MAX_INTEGER
    from tidings.store._schema import SCHEMA_VERSION as SCHEMA_VERSION
    from tidings.store._sessions import begin_turn as begin_turn
    from tidings.store._sessions import bind_conversation as bind_conversation
    from tidings.store._sessions import create_session as create_session
    from tidings.store._sessions import end_turn as end_turn
    from tidings.store._sessions import forget_conversation as forget_conversation
    from tidings.store._sessions import resolve_conversation as resolve_conversation
    from tidings.store._status import RECENT_FIELDS as RECENT_FIELDS
    from tidings.store._status import DeliveryReport as DeliveryReport
    from tidings.store._status import ProcessEpoch as ProcessEpoch
    from tidings.store._status import StatusReport as StatusReport
    from tidings.store._status import delivery_report as delivery_report
    from tidings.store._status import held_count as held_count
    from tidings.store._status import read_database as read_database
    from tidings.store._status import recent_deliveries as recent_deliveries
    from tidings.store._status import session_exists as session_exists
    from tidings.store._status import status_counts as status_counts
    from tidings.store._status import status_report as status_report
    from tidings.store._store import Store as Store
    from tidings.store._store import open_store as open_store
    from tidings.store._store import prepare_store as prepare_store
    from tidings.store._writer import EXECUTORS as EXECUTORS
    from tidings.store._writer import Executor as Executor
    from tidings.store._writer import StoreWriter as StoreWriter
    from tidings.store._writer import WriteRequest as WriteRequest
    from tidings.store._writer import WriterStatistics as WriterStatistics
    from tidings.store._writer import check_executor as check_executor

__getattr__, __dir__ = _lazy_exports(globals(), {
    "acking": "._acking:",
    "queries": "._queries:",
    "recovery": "._recovery:",
    "BatchOutcome": "._batch",
    "plan_segments": "._batch",
    "Synchronous": "._connect",
    "HeldInbound": "._inbound",
    "ResumeOutcome": "._inbound",
    "append_user_message": "._inbound",
    "held_inbound": "._inbound",
    "hold_inbound": "._inbound",
    "release_inbound": "._inbound",
    "resume_conversation": "._inbound",
    "session_has_turn": "._inbound",
    "session_has_turns": "._inbound",
    "Call": "._ops",
    "Execute": "._ops",
    "InsertRows": "._ops",
    "Op": "._ops",
    "UpdateRows": "._ops",
    "OUTBOX_STATUSES": "._outbox",
    "TERMINAL_STATUSES": "._outbox",
    "TRANSITIONS": "._outbox",
    "AppliedTransition": "._outbox",
    "EnqueuedDelivery": "._outbox",
    "OutboxInsert": "._outbox",
    "Transition": "._outbox",
    "end_stale_progress": "._outbox",
    "transition": "._outbox",
    "PruneReport": "._prune",
    "prune_call": "._prune",
    "prune_file": "._prune",
    "ReadPool": "._reader",
    "DeliveryStatus": "._records",
    "HistoryMessage": "._records",
    "OutboxRow": "._records",
    "RuntimeEvent": "._records",
    "SessionRecord": "._records",
    "SessionHead": "._recovery",
    "MAX_INTEGER": "._schema",
    "SCHEMA_VERSION": "._schema",
    "begin_turn": "._sessions",
    "bind_conversation": "._sessions",
    "create_session": "._sessions",
    "end_turn": "._sessions",
    "forget_conversation": "._sessions",
    "resolve_conversation": "._sessions",
    "RECENT_FIELDS": "._status",
    "DeliveryReport": "._status",
    "ProcessEpoch": "._status",
    "StatusReport": "._status",
    "delivery_report": "._status",
    "held_count": "._status",
    "read_database": "._status",
    "recent_deliveries": "._status",
    "session_exists": "._status",
    "status_counts": "._status",
    "status_report": "._status",
    "Store": "._store",
    "open_store": "._store",
    "prepare_store": "._store",
    "EXECUTORS": "._writer",
    "Executor": "._writer",
    "StoreWriter": "._writer",
    "WriteRequest": "._writer",
    "WriterStatistics": "._writer",
    "check_executor": "._writer",
    "check_synchronous": "._connect",
})

__all__ = [
    "EXECUTORS",
    "MAX_INTEGER",
    "OUTBOX_STATUSES",
    "RECENT_FIELDS",
    "SCHEMA_VERSION",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "AppliedTransition",
    "BatchOutcome",
    "Call",
    "DeliveryReport",
    "DeliveryStatus",
    "EnqueuedDelivery",
    "Execute",
    "Executor",
    "HeldInbound",
    "HistoryMessage",
    "InsertRows",
    "Op",
    "OutboxInsert",
    "OutboxRow",
    "ProcessEpoch",
    "PruneReport",
    "ReadPool",
    "ResumeOutcome",
    "RuntimeEvent",
    "SessionHead",
    "SessionRecord",
    "StatusReport",
    "Store",
    "StoreWriter",
    "Synchronous",
    "Transition",
    "UpdateRows",
    "WriteRequest",
    "WriterStatistics",
    "acking",
    "append_user_message",
    "begin_turn",
    "bind_conversation",
    "check_executor",
    "check_synchronous",
    "create_session",
    "delivery_report",
    "end_stale_progress",
    "end_turn",
    "forget_conversation",
    "held_count",
    "held_inbound",
    "hold_inbound",
    "open_store",
    "plan_segments",
    "prepare_store",
    "prune_call",
    "prune_file",
    "queries",
    "read_database",
    "recent_deliveries",
    "recovery",
    "release_inbound",
    "resolve_conversation",
    "resume_conversation",
    "session_exists",
    "session_has_turn",
    "session_has_turns",
    "status_counts",
    "status_report",
    "transition",
]
