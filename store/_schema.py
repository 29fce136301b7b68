"""Schema and ordered migrations, versioned with ``PRAGMA user_version``.

Each migration is applied in its own ``BEGIN IMMEDIATE`` transaction together with the
``user_version`` bump, so a crash mid-migration leaves the previous version intact. A database
whose version is newer than :data:`SCHEMA_VERSION` is refused with :class:`SchemaVersionError`
rather than misread, and one with tables but no version (another program's) with
:class:`StoreError`; both before the writer writes anything (:func:`check_database`).

Timestamps are unix seconds stored as REAL everywhere. ``events.event_seq`` and
``messages.history_id`` are plain integer keys: history rows are never deleted, and events only
below the recorded horizon (v5, by a prune, which always keeps the newest), so each new key is
the largest so far and the sequence is monotonic without the cost of ``AUTOINCREMENT``.
Indexes serve the recovery scan (open outbox rows by status), the status view (status + time),
per-session order, history by session (append cost independent of the session's size) and the
event history of one delivery.
"""

from __future__ import annotations

import sqlite3

from tidings.store._errors import SchemaVersionError, StoreError

__all__ = ["MAX_INTEGER", "MIGRATIONS", "SCHEMA_VERSION", "check_database",
           "has_tidings_tables", "migrate", "schema_version"]

MAX_INTEGER = 2 ** 63 - 1
"""The largest integer SQLite stores: a seq (or count) beyond it names no row, and SQLite
refuses it as a parameter (``OverflowError``)."""

_V1 = """
CREATE TABLE process_epochs (
    epoch       INTEGER PRIMARY KEY AUTOINCREMENT,
    pid         INTEGER NOT NULL,
    hostname    TEXT NOT NULL,
    started_at  REAL NOT NULL
);

CREATE TABLE sessions (
    session_id        TEXT PRIMARY KEY,
    core_id           TEXT NOT NULL,
    channel           TEXT,
    conversation_key  TEXT,
    parent_session_id TEXT,
    state             TEXT NOT NULL DEFAULT 'active',
    last_seq          INTEGER NOT NULL DEFAULT 0,
    metadata          TEXT NOT NULL DEFAULT '{}',
    created_at        REAL NOT NULL,
    updated_at        REAL NOT NULL
);
CREATE INDEX sessions_parent ON sessions(parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX sessions_conversation ON sessions(core_id, channel, conversation_key)
    WHERE conversation_key IS NOT NULL;

CREATE TABLE turns (
    turn_id     TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    slot        TEXT NOT NULL,
    mode        TEXT NOT NULL,
    status      TEXT NOT NULL,
    reason      TEXT,
    error       TEXT,
    message_id  TEXT,
    started_at  REAL NOT NULL,
    ended_at    REAL
);
CREATE INDEX turns_session ON turns(session_id, started_at);

CREATE TABLE messages (
    history_id        INTEGER PRIMARY KEY,
    message_id        TEXT NOT NULL UNIQUE,
    session_id        TEXT NOT NULL,
    turn_id           TEXT,
    delivery_id       TEXT,
    role              TEXT NOT NULL,
    kind              TEXT NOT NULL,
    text              TEXT NOT NULL,
    policy            TEXT NOT NULL,
    visible           INTEGER NOT NULL,
    model_visible     INTEGER NOT NULL,
    failure_rewritten INTEGER NOT NULL DEFAULT 0,
    created_at        REAL NOT NULL,
    updated_at        REAL NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, history_id);

CREATE TABLE outbox (
    delivery_id          TEXT PRIMARY KEY,
    session_id           TEXT NOT NULL,
    seq                  INTEGER NOT NULL,
    owner_turn_id        TEXT,
    work_id              TEXT NOT NULL,
    kind                 TEXT NOT NULL,
    channel              TEXT,
    text                 TEXT NOT NULL,
    blocks               TEXT NOT NULL,
    metadata             TEXT NOT NULL,
    visible              INTEGER NOT NULL,
    history_message_id   TEXT,
    failure_history_text TEXT,
    idempotency_key      TEXT,
    status               TEXT NOT NULL,
    attempts             INTEGER NOT NULL DEFAULT 0,
    last_error           TEXT,
    claimant             TEXT,
    lease_expires_at     REAL,
    created_at           REAL NOT NULL,
    updated_at           REAL NOT NULL
);
CREATE UNIQUE INDEX outbox_session_seq ON outbox(session_id, seq);
CREATE UNIQUE INDEX outbox_idempotency ON outbox(session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX outbox_status_updated ON outbox(status, updated_at);
CREATE INDEX outbox_queued ON outbox(session_id, seq) WHERE status = 'queued';
CREATE INDEX outbox_unknown ON outbox(session_id, seq) WHERE status = 'unknown';
CREATE INDEX outbox_stale_progress ON outbox(created_at)
    WHERE status = 'queued' AND kind = 'progress';

CREATE TABLE work_items (
    work_id          TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    subject_id       TEXT NOT NULL,
    parent_work_id   TEXT,
    status           TEXT NOT NULL,
    claimant         TEXT,
    lease_expires_at REAL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL
);
CREATE INDEX work_items_subject ON work_items(subject_id);

CREATE TABLE artifacts (
    artifact_id   TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    owner_turn_id TEXT,
    delivery_id   TEXT,
    block_type    TEXT NOT NULL,
    source_kind   TEXT NOT NULL,
    location      TEXT NOT NULL,
    name          TEXT,
    media_type    TEXT,
    summary       TEXT,
    metadata      TEXT NOT NULL,
    created_at    REAL NOT NULL
);
CREATE INDEX artifacts_session ON artifacts(session_id);

CREATE TABLE conversation_bindings (
    core_id          TEXT NOT NULL,
    channel          TEXT NOT NULL,
    conversation_key TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    PRIMARY KEY (core_id, channel, conversation_key)
) WITHOUT ROWID;
CREATE INDEX conversation_bindings_session ON conversation_bindings(session_id);

CREATE TABLE events (
    event_seq   INTEGER PRIMARY KEY,
    type        TEXT NOT NULL,
    session_id  TEXT,
    delivery_id TEXT,
    data        TEXT NOT NULL DEFAULT '{}',
    created_at  REAL NOT NULL
);
CREATE INDEX events_delivery ON events(delivery_id) WHERE delivery_id IS NOT NULL;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE VIEW delivery_lifecycle AS
SELECT
    o.delivery_id,
    o.session_id,
    o.seq,
    o.kind,
    o.channel,
    o.visible,
    o.text,
    o.owner_turn_id,
    CASE
        WHEN o.status = 'sending'
         AND o.claimant IS NOT (SELECT 'epoch:' || MAX(epoch) FROM process_epochs)
        THEN 'unknown'
        ELSE o.status
    END                 AS status,
    o.status            AS outbox_status,
    w.work_id,
    w.status            AS work_status,
    COALESCE(o.claimant, w.claimant) AS claimant,
    o.lease_expires_at,
    o.attempts,
    o.last_error,
    o.created_at,
    o.updated_at
FROM outbox AS o
LEFT JOIN work_items AS w ON w.work_id = o.work_id;
"""

_V2 = """
CREATE TABLE client_messages (
    core_id          TEXT NOT NULL,
    channel          TEXT NOT NULL,
    conversation_key TEXT NOT NULL,
    client_id        TEXT NOT NULL,
    session_id       TEXT,
    outcome          TEXT NOT NULL,
    received_at      REAL NOT NULL,
    PRIMARY KEY (core_id, channel, conversation_key, client_id)
) WITHOUT ROWID;
"""
"""v2: the client message ids a channel has accepted, per conversation, so a client that
repeats a message (a retry after a reconnect) is not processed twice, across restarts too."""

_V3 = """
CREATE INDEX turns_running ON turns(started_at) WHERE status = 'running';
"""
"""v3: the turns still ``running``, for the recovery of turns a stopped process left open."""

_V4 = """
CREATE TABLE inbound_messages (
    inbound_id  TEXT NOT NULL UNIQUE,
    session_id  TEXT NOT NULL,
    channel     TEXT,
    message_id  TEXT,
    notice      TEXT NOT NULL,
    claimant    TEXT NOT NULL,
    received_at REAL NOT NULL
);
CREATE INDEX outbox_unrouted ON outbox(session_id, seq) WHERE status = 'unrouted';
"""
"""v4: messages a channel accepted and has not yet dealt with (answered, told it was not, or
cleared), with the notice to send if the process that holds one stops first: a crash can cut a
waiting or running turn, and the next start tells the user instead of losing the message.
Rows are deleted once dealt with (rowid order is arrival order), so the table stays small.
And the ``unrouted`` rows by session: a gateway hello looks for the sessions of its
conversation that have some (without it, SQLite scanned every ``unrouted`` row of the
database for each)."""

_V5 = """
CREATE TABLE event_horizon (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    lowest_kept INTEGER NOT NULL
);
INSERT INTO event_horizon (singleton, lowest_kept) VALUES (1, 1);
CREATE TRIGGER event_horizon_never_lowered BEFORE UPDATE ON event_horizon
    WHEN NEW.lowest_kept < OLD.lowest_kept OR NEW.singleton IS NOT OLD.singleton
    BEGIN SELECT RAISE(ABORT, 'the event horizon only rises'); END;
CREATE TRIGGER event_horizon_no_delete BEFORE DELETE ON event_horizon
    BEGIN SELECT RAISE(ABORT, 'the event horizon only rises'); END;
DROP TRIGGER events_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    WHEN OLD.event_seq >= (SELECT lowest_kept FROM event_horizon WHERE singleton = 1)
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE INDEX client_messages_received ON client_messages(received_at);
"""
"""v5: retention (``rt.prune``). ``event_horizon`` holds the lowest ``event_seq`` a reader of
the feed may still ask for: events below it may have been deleted, at or above it none can be
(the delete trigger refuses it), and it never goes down. A prune raises it in the same
transaction as it deletes the events under it. The prune never deletes the newest event, so
``event_seq`` (no ``AUTOINCREMENT``: the next key is the largest + 1) never gives a seq out
twice. And ``client_messages`` by age, for the prune of the dedupe window."""

_V6 = """
CREATE TRIGGER turn_started AFTER INSERT ON turns
    BEGIN
        INSERT INTO events (type, session_id, data, created_at)
        VALUES ('turn.started', NEW.session_id,
                json_object('turn_id', NEW.turn_id, 'slot', NEW.slot, 'mode', NEW.mode,
                            'message_id', NEW.message_id),
                NEW.started_at);
    END;
CREATE TRIGGER turn_ended AFTER UPDATE OF status ON turns
    WHEN OLD.status = 'running' AND NEW.status IS NOT 'running'
    BEGIN
        INSERT INTO events (type, session_id, data, created_at)
        VALUES ('turn.' || NEW.status, NEW.session_id,
                json_object('turn_id', NEW.turn_id, 'reason', NEW.reason, 'error', NEW.error),
                COALESCE(NEW.ended_at, NEW.started_at));
    END;
"""
"""v6: a turn's lifecycle in the event feed. ``turn.started`` when its row is written, and
exactly one terminal event when it ends (``turn.completed``, ``turn.cancelled`` with its
reason, or ``turn.failed`` with its error, the recovery of an earlier process's turns
included), in the transaction that records it. Triggers, so every writer of ``turns`` (each
backend, recovery) appends them, and a second end (which changes nothing) appends nothing."""

_V7 = """
ALTER TABLE inbound_messages ADD COLUMN command TEXT;
"""
"""v7: a held row may be a session command's answer rather than a message (``command``: the
command's name; NULL for a message, as every row written before). A channel holds the answer
of ``/new``, ``/resume``, ``/cancel`` or ``/clear`` with the command's effect until the answer
is written, so a crash between the two loses neither: recovery sends the held answer, as the
command's answer (metadata ``command``), even into the session ``/clear`` closed."""

_V8 = """
ALTER TABLE client_messages ADD COLUMN answer TEXT;
ALTER TABLE client_messages ADD COLUMN answer_command TEXT;
ALTER TABLE client_messages ADD COLUMN answer_claimant TEXT;
"""
"""v8: a message id's record may carry the answer its command still owes with no session (a
*direct* answer: ``/clear`` or ``/cancel`` when the conversation has none, a refused
``/resume`` then): ``answer``, its text; ``answer_command``, the command's name;
``answer_claimant``, the process that is to send it. Written with the id's record, in its
transaction, and cleared once the answer went out: a crash in between leaves it there, and
the platform's retry of the id (a ``duplicate``, which runs nothing) is sent it after the
restart. NULL in every row written before (nothing owed)."""

_V9 = """
UPDATE work_items SET status = 'unrouted'
WHERE work_id IN (SELECT work_id FROM outbox INDEXED BY outbox_unrouted
                  WHERE status = 'unrouted')
  AND status = 'completed';
"""
"""v9: an ``unrouted`` delivery's ``delivery.send`` work item is ``unrouted`` (see
:data:`~tidings.store._outbox.TRANSITIONS`), no longer ``completed``, the word of a sent
one: nobody received it, and a requeue gives it back. The work items written ``completed``
for such deliveries before are corrected; only through the ``unrouted`` rows (the v4 partial
index) and each work item's key, so the cost follows how many are ``unrouted``, not the size
of the database. No schema change: the status view's readers read a database older than
v9 (read-only, not migrated) as v9 would have written it."""

_V10 = """
CREATE INDEX outbox_unrouted_progress ON outbox(session_id, seq)
    WHERE status = 'unrouted' AND kind = 'progress';
"""
"""v10: the ``unrouted`` progress notes by session. Each open ends an earlier process's
(:func:`~tidings.store._recovery.unrouted_progress`); through ``outbox_unrouted`` it read
every ``unrouted`` row to find them, the messages and notices too, which no prune deletes:
a cost at every start that grew with the database for ever. Through this index it reads the
progress notes alone, and ends each, so the index stays near empty. Building it reads the
outbox once, at this migration."""

MIGRATIONS: tuple[tuple[int, str], ...] = ((1, _V1), (2, _V2), (3, _V3), (4, _V4), (5, _V5),
                                           (6, _V6), (7, _V7), (8, _V8), (9, _V9),
                                           (10, _V10))
"""Ordered ``(version, script)`` pairs; append, never edit a released one."""

SCHEMA_VERSION = MIGRATIONS[-1][0]


def schema_version(conn: sqlite3.Connection) -> int:
    """The ``user_version`` stored in the database."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


_V1_TABLES = ("process_epochs", "sessions", "turns", "messages", "outbox", "work_items",
               "artifacts", "conversation_bindings", "events")
"""The tables of v1, which every later version keeps."""


def has_tidings_tables(conn: sqlite3.Connection) -> bool:
    """Whether *conn*'s database has every table of v1: a schema version alone does not say
    the database is tidings', as other programs number their schemas with ``user_version``
    too (1, 2, ...)."""
    marks = ",".join("?" * len(_V1_TABLES))
    found = conn.execute(f"SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                         f"AND name IN ({marks})", _V1_TABLES).fetchone()[0]
    return int(found) == len(_V1_TABLES)


def check_database(conn: sqlite3.Connection, path: str = "database") -> int:
    """The schema version of *conn*'s database, refusing one this code must not write to.

    Raises :class:`SchemaVersionError` when it is newer than :data:`SCHEMA_VERSION`, and
    :class:`StoreError` when it has no schema version but has tables: another program's
    database (a mistyped path), which migrating would fill with tidings tables; so too a
    negative version (``user_version`` is signed), which tidings never writes, and a version
    of ours without the tidings tables (:func:`has_tidings_tables`): another program that
    numbers its schema with ``user_version``, which migrating would write tidings tables into.
    Read-only, so the writer asks before it switches the file to WAL.
    """
    found = schema_version(conn)
    if found < 0:
        raise StoreError(f"{path} is not a tidings database: its schema version is {found}; "
                         "give another path")
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {found}, newer than this tidings understands "
            f"({SCHEMA_VERSION}); upgrade tidings or use another database"
        )
    if found == 0 and conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
        raise StoreError(f"{path} is not a tidings database: it has tables but no tidings "
                         "schema version; give another path")
    if found > 0 and not has_tidings_tables(conn):
        raise StoreError(f"{path} is not a tidings database: it has schema version {found} "
                         "but not the tidings tables (another program's?); give another path")
    return found


def migrate(conn: sqlite3.Connection, path: str = "database") -> int:
    """Bring *conn*'s database up to :data:`SCHEMA_VERSION`; return the version found.

    Blocking (call from a worker thread). Raises :class:`SchemaVersionError` when the database is
    newer than this code.
    """
    found = check_database(conn, path)
    for version, script in MIGRATIONS:
        if version <= found:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= version:  # another opener got here first
                conn.execute("ROLLBACK")
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back itself (an interrupt, a full
                conn.execute("ROLLBACK")  # disk): a second ROLLBACK would hide why
            raise
    return found


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (triggers contain inner semicolons)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        raise ValueError(f"incomplete statement in migration: {current.strip()[:60]}")
    return statements
