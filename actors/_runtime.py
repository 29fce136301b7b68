"""The runtime: the store, the router and the dispatch actors under one supervisor.

``open_runtime`` opens (or creates) the database, starts the supervision tree — the ``writer``
(the store's only write connection, group commit) and ``routes`` (a nested supervisor of one
lane actor per session with traffic) — recovers what an earlier process left, and on exit stops
taking work, lets running deliveries finish up to a grace period, drains the writer and closes.
"""

from __future__ import annotations

import functools
import os
import pathlib
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from typing import Any, Literal

import attrs
import trio

from tidings.actors._acking import AckingSupport
from tidings.actors._artifacts import MAX_NAME_BYTES, check_session_name, names_own_directory
from tidings.actors._blocks import MAX_JSON_BYTES, check_json_object
from tidings.actors._channel_support import ChannelSupport
from tidings.actors._events import EventBus, EventFeed
from tidings.actors._handle import HandleRegistry
from tidings.actors._held import tell_held
from tidings.actors._lanes import Dispatcher, DispatchStatistics
from tidings.actors._pipeline import DeliveryPipeline, new_id
from tidings.actors._policy import check_flag
from tidings.actors._recovery import RecoveryReport, RecoveryScanner
from tidings.actors._retention import RetentionSupport
from tidings.actors._router import SessionInteractionRouter
from tidings.actors._runtime_checks import (
    check_arguments,
    check_core_id_length,
    check_private_files,
    resolve_roots,
)
from tidings.actors._runtime_lock import lock_database, release_database, unlock_database
from tidings.actors._status import (
    MAX_ID_CHARS,
    StatusViews,
    check_id,
    check_session_id,
    seconds_bound,
)
from tidings.actors._tasks import TaskRunner
from tidings.actors._turns import TurnContext, open_turn
from tidings.errors import (
    ConflictError,
    DeliveryNotFoundError,
    RuntimeClosedError,
    SessionNotFoundError,
    ValidationError,
)
from tidings.store import (
    DeliveryStatus,
    Executor,
    HistoryMessage,
    SessionRecord,
    Store,
    Synchronous,
    WriterStatistics,
    create_session,
    prepare_store,
    queries,
)
from tidings.supervisor import (
    ChildContext,
    ChildSpec,
    FaultPlan,
    Intensity,
    Supervisor,
    SupervisorStatistics,
    open_supervisor,
)

__all__ = ["Runtime", "RuntimeStatistics", "open_runtime"]

Recover = Literal["at_open", "manual"]

PATH_CHECK_THREADS = 8
"""Threads a runtime's media path checks may use at once (``Runtime.path_checks``): a send
with a file waits for one; a check hung on a dead mount holds its thread until it answers."""

@attrs.frozen
class RuntimeStatistics:
    """A snapshot of the runtime: supervision tree, dispatch lanes, writer, bound routes."""

    supervisor: SupervisorStatistics
    dispatch: DispatchStatistics
    writer: WriterStatistics
    bound_routes: int


class Runtime(StatusViews, ChannelSupport, AckingSupport, RetentionSupport):
    """A running tidings runtime. Get one from :func:`open_runtime`."""

    def __init__(self, store: Store, *, core_id: str, workspace: pathlib.Path,
                 artifact_root: pathlib.Path | None, grace: float, lease: float,
                 scan_interval: float = 30.0, stranded_after: float = 60.0,
                 database_name: pathlib.Path | None = None,
                 private_files: tuple[pathlib.Path, ...] = ()) -> None:
        self.store = store
        # The database file, and the name it was opened by if that is a symbolic link to it
        # (``tidings serve`` keeps the gateway token beside that name): never artifacts.
        database = pathlib.Path(store.path)
        self.database_paths: tuple[pathlib.Path, ...] = (database,) + (
            (database_name,) if database_name not in (None, database) else ())
        # Files the host keeps secret (``tidings serve``'s gateway token file): never sent.
        self.private_files = private_files
        # Media path checks run in threads a cancel abandons (a hung mount may never answer):
        # on a limiter of their own, so hung checks can use up only these threads, not trio's
        # default limiter, which the rest of the process shares.
        self.path_checks = trio.CapacityLimiter(PATH_CHECK_THREADS)
        self.core_id = core_id
        self.workspace = workspace
        self._artifact_root = artifact_root
        self.router = SessionInteractionRouter(clock=store.clock, check_open=self.check_open)
        self.registry = HandleRegistry()
        self.dispatcher = Dispatcher(store, self.router, self.registry, grace=grace,
                                     lease=lease)
        self.pipeline = DeliveryPipeline(store, self.dispatcher, self.registry, self.router)
        self.scanner = RecoveryScanner(store, self.dispatcher, self.router,
                                       scan_interval=scan_interval,
                                       stranded_after=stranded_after,
                                       tell_held=functools.partial(tell_held, self))
        self.bus = EventBus(store)
        self.tasks = TaskRunner(grace=grace)
        self.closing = False
        self.supervisor: Supervisor | None = None
        self.serial_turns: dict[str, trio.Lock] = {}  # session -> its serial slot (_turns)

    # --- sessions and turns --------------------------------------------------------------------

    async def create_session(self, channel: str | None = None, *,
                             parent_session_id: str | None = None,
                             session_id: str | None = None,
                             metadata: Mapping[str, Any] | None = None) -> str:
        """Create a session and return its id (``session_child_*`` when it has a parent).

        A caller-chosen ``session_id`` must be one plain path component (it names the
        session's artifact directory): ``.``, ``..``, ids with ``/``, ``\\``, NUL or a lone
        surrogate are refused, and so is one of more than 255 bytes of UTF-8 (no file system
        takes a longer directory name), and so is one another session has (a
        :class:`ValidationError` naming it, not a store conflict). ``metadata`` is at most
        :data:`~tidings.actors.MAX_JSON_BYTES` of JSON. Raises :class:`SessionNotFoundError`
        for an unknown parent, :class:`ValidationError` naming the field for bad arguments,
        with nothing written, and :class:`RuntimeClosedError` once the runtime is stopping.
        """
        self.check_open()
        if channel is not None:
            check_id("channel", channel)
        if session_id is not None:
            check_session_name("session_id", check_id("session_id", session_id))
            size = len(session_id.encode())  # valid Unicode: check_session_name says so
            if size > MAX_NAME_BYTES:
                raise ValidationError("session_id", f"is {size} bytes of UTF-8, over the "
                                                    f"{MAX_NAME_BYTES} a directory name (its "
                                                    f"artifact root) may have")
        metadata = check_json_object(metadata, "metadata", max_bytes=MAX_JSON_BYTES)
        if parent_session_id is not None:
            await self.session(check_session_id("parent_session_id", parent_session_id))
            self.check_open()  # again after the read: the runtime may have stopped meanwhile
        chosen = session_id is not None
        if session_id is None:
            session_id = new_id("session_child" if parent_session_id else "session")
        try:
            await self.store.commit(create_session(
                session_id, core_id=self.core_id, channel=channel, now=self.store.clock(),
                parent_session_id=parent_session_id, metadata=metadata))
        except ConflictError:  # the only rule its rows can break: the id is taken
            if not chosen:
                raise
            raise ValidationError("session_id", f"a session with id {session_id!r:.80} "
                                                f"already exists") from None
        return session_id

    async def session(self, session_id: str) -> SessionRecord:
        """The session record as stored now (``state`` and ``last_seq`` change, so it is read
        every time). Raises :class:`SessionNotFoundError` (a ``LookupError``), and
        :class:`ValidationError` for an id that is not a non-empty string."""
        record = await self.store.read(queries.session,
                                      check_session_id("session_id", session_id))
        if record is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return record

    def open_turn(self, session_id: str, *, slot: str = "output", mode: str = "serial",
                  history_policy: str | None = None, message_id: str | None = None,
                  turn_id: str | None = None, inbound_ids: Iterable[str] = ()
                  ) -> AbstractAsyncContextManager[TurnContext]:
        """Run a turn in *session_id*: ``async with rt.open_turn(sid) as ctx: ...``.

        ``slot`` is ``input`` or ``output``; ``mode`` is ``serial``, ``parallel`` or
        ``background``. ``ctx.output`` writes ``persist`` history by default in a serial output
        turn and ``transient`` otherwise; ``ctx.input`` is ``transient``; ``history_policy``
        sets the turn's default (a request overrides it). Serial turns of one session run one
        at a time, in the order they were opened: a second one waits until the first has
        ended (one opened inside another in
        the same task raises :class:`ValidationError` on ``mode``); parallel and background
        turns never wait. A ``turn_id`` another turn already has raises
        :class:`ValidationError` on ``turn_id`` (that turn is left alone). ``message_id``: the
        platform message the turn answers (None or an id), stored with it. ``inbound_ids``:
        held messages (:meth:`hold_inbound`) the turn answers, released in the same commit as
        its end unless the runtime's stop (or a cancel from outside with no reason) cut it
        (a turn that failed while the runtime stopped, its question withdrawn or its send
        refused, included): then recovery tells the user they were not answered; at most
        :data:`~tidings.actors.MAX_IDS_PER_CALL` distinct ids. Ids are non-empty strings of
        at most :data:`~tidings.actors.MAX_ID_CHARS` characters (but for *session_id*, an
        existing session's, which earlier versions may have stored longer).
        """
        return open_turn(self, session_id, slot=slot, mode=mode, history_policy=history_policy,
                         message_id=message_id, turn_id=turn_id, inbound_ids=inbound_ids)

    def artifact_root_for(self, session_id: str) -> pathlib.Path:
        """``<database directory>/artifacts/<session_id>`` unless ``artifact_root`` was given.
        Raises :class:`ValidationError` naming ``session_id`` for an id that is not one plain
        path component (``..``, ``a/b``: a session made so by an older version has no
        artifact root; the path would be outside its own), or one over 255 bytes of UTF-8
        (no directory can have that name; earlier versions stored such ids)."""
        check_session_id("session_id", session_id)
        if not names_own_directory(session_id):
            raise ValidationError("session_id", f"{session_id!r:.80} is not one plain path "
                                                f"component of at most {MAX_NAME_BYTES} bytes: "
                                                f"it has no artifact root")
        return self.artifacts_directory / session_id

    @property
    def artifacts_directory(self) -> pathlib.Path:
        """Where every session's artifact root is: ``artifact_root`` if given, else
        ``<database directory>/artifacts``. What is in it is the sessions' own: a turn may
        send from its own session's root only, even where the workspace holds the rest."""
        return self._artifact_root or pathlib.Path(self.store.path).parent / "artifacts"

    # --- reading -------------------------------------------------------------------------------

    async def delivery_status(self, delivery_id: str) -> DeliveryStatus:
        """The lifecycle view of one delivery. Raises :class:`DeliveryNotFoundError`."""
        found = await self.store.read(queries.delivery, check_id("delivery_id", delivery_id))
        if found is None:
            raise DeliveryNotFoundError(f"no delivery {delivery_id!r}")
        return found

    async def deliveries(self, session_id: str | None = None, status: str | None = None, *,
                         since: float | None = None,
                         limit: int | None = None) -> list[DeliveryStatus]:
        """Deliveries (lifecycle view), in per-session order, filtered as asked (``status`` is
        an effective status of ``OUTBOX_STATUSES``). Bad filters raise
        :class:`ValidationError` naming them."""
        if session_id is not None:  # a filter: any session's id, as stored (see check_session_id)
            check_session_id("session_id", session_id)
        return await self.store.read(functools.partial(
            queries.deliveries, session_id=session_id, status=status, since=since, limit=limit))

    async def history(self, session_id: str, model_context: bool = False, *,
                      limit: int | None = None, before: str | None = None
                      ) -> list[HistoryMessage]:
        """Every history row of the session, oldest first (``model_context=True``: what a
        model may see), or a page of them: ``before`` (a ``message_id`` of the session) keeps
        the rows older than that message, ``limit`` (an int >= 1) the latest ``limit`` of
        those left, still oldest first; ``before=page[0].message_id`` gives the page before.
        A page costs the same in a session of any length (read on the session's index; with
        ``model_context``, plus the model-hidden rows it steps over).

        Raises :class:`SessionNotFoundError` (a ``LookupError``) for an unknown session; a
        :class:`ValidationError` naming ``limit`` (not an int >= 1: ``0``, a bool, a float)
        or ``before`` (not an id, or no message of this session); and a ``TypeError`` (also
        a :class:`ValidationError` naming it) for a ``model_context`` that is not a real bool
        (``"no"`` is truthy, ``1`` is not a bool)."""
        check_flag("model_context", model_context)
        queries.check_page(limit, before)
        found = await self.store.read(functools.partial(
            queries.history, model_context=model_context, limit=limit, before=before),
            check_session_id("session_id", session_id))
        if found is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return found

    def events(self, after_seq: int | None = None) -> EventFeed:
        """Follow runtime events live (``async for event in rt.events(): ...``)."""
        return self.bus.follow(after_seq)

    # --- acking routes -------------------------------------------------------------------------

    async def confirm(self, delivery_ids: Iterable[str]) -> list[str]:
        """Record ``sent`` for deliveries acknowledged by an acking route's client.

        A route that declares ``ack_window = N`` leaves each delivered row ``sending`` until its
        client acks it (at most N such rows per session); this is that ack. Rows already
        ``unknown`` (dropped connection, restart) are accepted too. Returns the ids that moved.
        """
        return await self.dispatcher.confirm(delivery_ids)

    async def abandon_unacked(self, session_id: str, *,
                              keep: Collection[str] = ()) -> list[str]:
        """An acking route lost its client: its unacked rows in *session_id* become
        ``unknown`` (resolved later by the client, e.g. on reconnect), but for those in
        *keep* (delivery ids another client of the route still connected was sent, which it
        may still ack). Returns their ids."""
        return await self.dispatcher.abandon_unacked(session_id, keep=keep)

    def statistics(self) -> RuntimeStatistics:
        """A frozen :class:`RuntimeStatistics` snapshot (supervision tree, dispatch lanes,
        writer, bound routes), to compare over time rather than poke at internals. Never
        blocks."""
        assert self.supervisor is not None
        return RuntimeStatistics(self.supervisor.statistics(), self.dispatcher.statistics(),
                                 self.store.statistics(), len(self.router))

    # --- recovery ------------------------------------------------------------------------------

    async def recover(self) -> RecoveryReport:
        """Recover what earlier processes left: their ``sending`` rows become ``unknown`` (never
        replayed), reconciling routes are asked about ``unknown`` rows, and ``queued`` rows are
        dispatched again in per-session order; then the periodic scan starts. See
        :class:`~tidings.actors.RecoveryScanner`."""
        self.check_open()
        return await self.scanner.recover()

    def check_open(self) -> None:
        """Raise :class:`RuntimeClosedError` if the runtime is stopping or stopped: what every
        call that would start new work checks first. Never blocks."""
        if self.closing:
            raise RuntimeClosedError("the runtime is stopping; no new work is accepted")

    def withdraw_questions(self) -> None:
        """Cancel the waits of the questions still being asked (the runtime is stopping), all
        of which the router asks: the runtime's stop ends the turns it runs, not a host's own,
        whose question would otherwise go on being asked for a turn that can no longer send
        or end; nor a host's own ``rt.router.prompt_user`` / ``request_approval``. Never
        blocks."""
        self.router.withdraw_questions()


def _named(db_path: str | os.PathLike[str]) -> pathlib.Path:
    """*db_path* absolute with its directory's symbolic links followed, but not its own: the
    name a symbolic link to the database gives it (checked already: the lock resolved it)."""
    path = pathlib.Path(db_path).expanduser()
    return pathlib.Path(os.path.realpath(path.parent)) / path.name


@asynccontextmanager
async def open_runtime(db_path: str | os.PathLike[str], workspace: str | os.PathLike[str] = ".",
                       core_id: str = "default", *,
                       artifact_root: str | os.PathLike[str] | None = None,
                       recover: Recover = "at_open", synchronous: Synchronous = "FULL",
                       fault_plan: FaultPlan | None = None,
                       intensity: Intensity | None = None, grace: float = 2.0,
                       lease: float = 300.0, clock: Callable[[], float] = time.time,
                       scan_interval: float = 30.0, stranded_after: float = 60.0,
                       writer: Executor = "thread",
                       private_files: Sequence[str | os.PathLike[str]] = ()
                       ) -> AsyncIterator[Runtime]:
    """Open a runtime on the SQLite database at *db_path*.

    ``recover="at_open"`` recovers while opening; with ``"manual"`` only the claims of dead
    processes become ``unknown`` (and stale progress and their running turns ``failed``) at
    open, and the host binds its
    routes, then calls ``await rt.recover()``. The recovery scanner then runs every
    ``scan_interval`` seconds (trio's clock), re-kicking sessions whose first queued row waited
    ``stranded_after`` wall seconds. ``grace`` bounds how long running deliveries may finish at
    exit. ``writer="process"`` commits in a child writer process instead of a worker thread:
    the SQLite work then runs beside the event loop rather than taking turns with it for the
    GIL (higher throughput under many concurrent senders; one more process per runtime).
    ``private_files``: files no turn may send as an artifact, though the workspace holds them
    (a secret of the host's: ``tidings serve`` gives its gateway token file), refused as the
    database's own files are, by name and by the file itself (a link to one, a hard link); a
    folder among them covers every file under it (by name, through links, and the folder
    under another name).

    Bad arguments raise :class:`ValidationError` naming them before anything is created: the
    paths must be non-empty strings or ``os.PathLike`` (``workspace`` an existing directory),
    ``core_id`` an id of at most :data:`~tidings.actors.MAX_ID_CHARS` characters of valid
    Unicode (a longer one only for a database whose sessions an earlier version stored under
    it), ``clock()`` must return unix seconds up to year 9999 (it is called once to
    see), and
    ``lease`` (stored with each claim) be at most ten years (``grace``, ``scan_interval`` and
    ``stranded_after`` may be ``inf``, or an integer past a float's range: no bound). A
    path that holds something other than a tidings database (a directory, a text file,
    another program's SQLite database) raises :class:`StoreError` and leaves nothing beside
    it. One
    runtime at a time may have a database open: a second one (in any process) raises
    :class:`StoreError` while the first runs (a lock on ``<database>.runtime.lock``).
    """
    check_arguments(db_path=db_path, workspace=workspace, artifact_root=artifact_root,
                     writer=writer, recover=recover, core_id=core_id, synchronous=synchronous,
                     grace=grace, lease=lease, scan_interval=scan_interval,
                     stranded_after=stranded_after, intensity=intensity,
                     fault_plan=fault_plan, clock=clock)
    private = check_private_files(private_files)
    # An integer of seconds past a float's range is no bound, as inf is.
    grace, scan_interval, stranded_after = (seconds_bound(value) for value in (
        grace, scan_interval, stranded_after))
    if len(core_id) > MAX_ID_CHARS:
        await trio.to_thread.run_sync(check_core_id_length, db_path, core_id)
    root, artifacts = await trio.to_thread.run_sync(resolve_roots, workspace, artifact_root)
    lock, created = await trio.to_thread.run_sync(lock_database, db_path)
    try:
        store = await prepare_store(db_path, synchronous=synchronous, writer=writer,
                                    clock=clock)
        runtime = Runtime(store, core_id=core_id, workspace=root, artifact_root=artifacts,
                          grace=grace, lease=lease, scan_interval=scan_interval,
                          stranded_after=stranded_after, database_name=_named(db_path),
                          private_files=private)
    except BaseException:
        unlock_database(lock, created)
        raise

    async def writer(ctx: ChildContext, *,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await store.writer.serve(ctx.mailbox, task_status=task_status)

    async def routes(ctx: ChildContext, *,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_supervisor([], strategy="one_for_one",
                                   intensity=Intensity(max_restarts=100, period=10.0),
                                   name="routes", fault_plan=fault_plan) as lanes:
            runtime.dispatcher.attach(lanes)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(runtime.dispatcher.janitor)
                    task_status.started()
                    async for _ in ctx.mailbox:
                        pass
                    nursery.cancel_scope.cancel(reason="routes stopping")
            finally:
                runtime.dispatcher.detach()

    async def tasks(ctx: ChildContext, *,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with open_supervisor([], strategy="one_for_one", name="tasks",
                                       fault_plan=fault_plan) as turns:
                runtime.tasks.attach(turns)
                task_status.started()
                try:
                    async for _ in ctx.mailbox:
                        pass
                except Exception:
                    # Before the supervisor stops its tasks: a turn it cuts was cut by this
                    # crash, not by a stop (a cancel is not one: the runtime's or a host's).
                    runtime.tasks.note_crash()
                    raise
        finally:
            runtime.tasks.detach()

    children = [
        # No timeouts: starting is opening a local file, stopping is committing what is left,
        # both in a worker thread that a cancel could not interrupt anyway.
        ChildSpec("writer", writer, restart="permanent", shutdown_timeout=None,
                  start_timeout=None, mailbox_size=4096, dead_letter=store.writer.dead_letter),
        # No timeout: a nested supervisor. Its lanes had the grace already (dispatcher.stop(),
        # in the finally below, before the children stop) and each has a ladder of its own;
        # the grace here cancelled it at once with grace 0, a warning at every stop.
        ChildSpec("routes", routes, restart="permanent", shutdown_timeout=None,
                  mailbox_size=1),
        runtime.scanner.child_spec(),
        # Last, so it stops first: turns end (grace, then ``shutdown``) before what they use.
        ChildSpec("tasks", tasks, restart="permanent", shutdown_timeout=None, mailbox_size=1),
    ]
    try:
        async with open_supervisor(children, strategy="one_for_one",
                                   intensity=intensity or Intensity(max_restarts=10, period=60.0),
                                   name="tidings", fault_plan=fault_plan) as sup:
            runtime.supervisor = sup
            mailbox = sup.mailbox("writer")
            store.attach(mailbox.send, mailbox.send_nowait)
            await runtime.scanner.open(recover)
            try:
                yield runtime
            finally:
                with trio.CancelScope(shield=True):
                    await runtime.tasks.stop()  # turns may still send while they finish
                runtime.closing = True
                runtime.withdraw_questions()  # (none asks from now on: _may_ask refuses)
                with trio.CancelScope(shield=True):
                    await runtime.dispatcher.stop()
    finally:
        runtime.closing = True
        runtime.withdraw_questions()
        # Each close runs whatever an earlier one raised; the lock's release last of all: the
        # database is then free for another runtime (of this process too).
        with ExitStack() as cleanup:
            cleanup.callback(release_database, lock)
            cleanup.callback(store.close)
            cleanup.callback(runtime.bus.close)
            runtime.registry.close_all()
