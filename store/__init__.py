"""SQLite persistence for tidings: stdlib ``sqlite3`` made safe and fast for trio.

Reads run on read-only connections in worker threads; one writer owns the only write connection
and group-commits everything waiting in its mailbox in a single transaction. This package is the
bottom layer: it knows nothing of channels, routes or actors.
"""

from tidings.store._batch import BatchOutcome as BatchOutcome
from tidings.store._batch import plan_segments as plan_segments
from tidings.store._connect import Synchronous as Synchronous
from tidings.store._ops import Call as Call
from tidings.store._ops import Execute as Execute
from tidings.store._ops import InsertRows as InsertRows
from tidings.store._ops import Op as Op
from tidings.store._ops import UpdateRows as UpdateRows
from tidings.store._reader import ReadPool as ReadPool
from tidings.store._schema import SCHEMA_VERSION as SCHEMA_VERSION
from tidings.store._store import Store as Store
from tidings.store._store import open_store as open_store
from tidings.store._store import prepare_store as prepare_store
from tidings.store._writer import StoreWriter as StoreWriter
from tidings.store._writer import WriteRequest as WriteRequest
from tidings.store._writer import WriterStatistics as WriterStatistics

__all__ = [
    "SCHEMA_VERSION",
    "BatchOutcome",
    "Call",
    "Execute",
    "InsertRows",
    "Op",
    "ReadPool",
    "Store",
    "StoreWriter",
    "Synchronous",
    "UpdateRows",
    "WriteRequest",
    "WriterStatistics",
    "open_store",
    "plan_segments",
    "prepare_store",
]
