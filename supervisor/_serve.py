"""``tidings serve``: the whole supervision tree in one long-lived process.

The runtime (its own supervisor: store writer, route lanes, recovery scanner, turn tasks) runs
the gateway channel and its agent; the gateway's listener is a permanent child of a ``serve``
supervisor, so a crash of it is restarted and logged, and going over the restart intensity
ends the process with a clear message (exit 1).

Stopping (:class:`StopControl`: SIGTERM / SIGINT / SIGHUP, or a host): the gateway stops accepting
(no new connections, new messages refused), running turns get up to ``grace`` seconds to
finish and the connected clients' deliveries to be acked, then the connections are closed
(``1001``), unacked rows become ``unknown``, the runtime stops its tasks and lanes and the
writer commits what it holds. A second request, whenever it comes (also while the runtime
closes), skips the waiting: turns are cancelled (``shutdown``) and lanes stopped at once;
every durable intent stays in the database.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pathlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import attrs
import trio

import tidings
from tidings.channels import EchoAgent, GatewayChannel, load_agent
from tidings.errors import (
    ChildStartError,
    ConfigError,
    RestartIntensityExceeded,
    TidingsError,
    ValidationError,
)
from tidings.supervisor import (
    ChildContext,
    ChildSpec,
    FaultPlan,
    Intensity,
    Supervisor,
    open_supervisor,
)
from tidings.supervisor._config import ServeConfig
from tidings.supervisor._log import field
from tidings.supervisor._serve_retention import retention_spec
from tidings.supervisor._signals import StopControl
from tidings.supervisor._token import (
    TokenSource,
    create_token,
    existing_token,
    token_key,
    token_path,
)

__all__ = ["ServeFailed", "ServeInfo", "serve"]

log = logging.getLogger("tidings.serve")

_DRAIN_MIN = 1.0
"""Seconds the connected clients get to ack what is still on its way, even after the grace."""


@attrs.frozen
class ServeInfo:
    """What a started server reports: where it listens and what it uses."""

    url: str
    port: int
    db: pathlib.Path
    token_file: pathlib.Path | None
    gateway: GatewayChannel = attrs.field(repr=False, eq=False)
    supervisor: Supervisor = attrs.field(repr=False, eq=False)
    """The ``serve`` supervisor (its ``statistics()``, the gateway child's mailbox)."""


class ServeFailed(Exception):
    """The server could not start or had to stop; ``str()`` is the message for the operator."""


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"ws://{shown}:{port}"


async def _gateway_child(gateway: GatewayChannel, ctx: ChildContext, *,
                         task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """The gateway's listener and connections, until the shutdown ladder closes the mailbox."""
    async with gateway.serving() as port:
        log.info("event=gateway_listening url=%s incarnation=%d",
                 _url(gateway.settings.host, port), ctx.incarnation)
        task_status.started(port)
        async for message in ctx.mailbox:
            log.warning("event=message_dropped child=gateway type=%s", type(message).__name__)


async def serve(config: ServeConfig, control: StopControl, *,
                fault_plan: FaultPlan | None = None,
                task_status: trio.TaskStatus[ServeInfo] = trio.TASK_STATUS_IGNORED) -> None:
    """Run until *control* asks to stop; returns after a clean stop.

    Reports a :class:`ServeInfo` through ``task_status`` once listening. ``fault_plan`` is
    the ``serve`` supervisor's (tests crash the gateway child with it). Raises
    :class:`ServeFailed` (the database could not be opened, the gateway could not listen, or
    kept crashing beyond the restart intensity) and :class:`~tidings.errors.ConfigError` (bad
    agent, token file or workspace).
    """
    agent = _agent(config)
    db = _absolute(config.db, "serve.db")
    # Absolute, as the database's (and the default token file's) path: logged and reported so.
    token_file = _absolute(config.token_file, "gateway.token_file") \
        if config.token_file is not None else None
    # A token file is made only once the database is ours (see _token): checked now, made then.
    found: TokenSource | None = await trio.to_thread.run_sync(
        existing_token, config.token, token_file, config.db)
    with trio.CancelScope() as starting:
        async with contextlib.AsyncExitStack() as stack:
            # Entered before the runtime, so left after its exit: that exit waits for lanes
            # still in a delivery (up to grace), and a second request must cut that wait too.
            opened: list[Any] = []  # the runtime, once open

            def stop_now() -> None:
                for runtime in opened:
                    _stop_now(runtime)

            stack.enter_context(control.on_immediate(stop_now))
            stack.enter_context(_runtime_gave_up())  # left after the runtime: sees its failure
            # A second request while the runtime opens (a long recovery) ends the start (the
            # scope around it all: the runtime's own scopes live on the stack): nothing was
            # served yet, and what recovery had not done is done at the next start. A first
            # one lets the start finish, then stops.
            with control.on_immediate(starting.cancel):
                rt = await _open_runtime(stack, config, db, token_file)
            opened.append(rt)
            source = found or await trio.to_thread.run_sync(functools.partial(
                create_token, token_file or token_path(config.db),
                field=token_key(token_file)))
            if source.created:
                log.info("event=token_created path=%s mode=0600", field(source.path))
            settings = config.gateway_config(source.token)
            gateway = GatewayChannel(rt, settings, config.channel, agent)
            spec = ChildSpec("gateway", functools.partial(_gateway_child, gateway),
                             restart="permanent", shutdown_timeout=config.grace + 5.0,
                             start_timeout=30.0, mailbox_size=1)
            specs = [spec]
            if config.keep is not None:  # [retention]: off unless asked for
                specs.append(retention_spec(rt, config.keep, config.prune_interval))
            try:
                async with open_supervisor(specs, name="serve", fault_plan=fault_plan,
                                           intensity=Intensity(config.max_restarts,
                                                               config.period)) as sup:
                    port = gateway.port
                    assert port is not None
                    info = ServeInfo(_url(settings.host, port), port, db, source.path, gateway, sup)
                    log.info("event=serving url=%s db=%s token_file=%s agent=%s writer=%s pid=%d "
                             "version=%s", info.url, field(db), field(source.path or "(given)"),
                             type(agent).__name__, config.writer, os.getpid(), tidings.__version__)
                    task_status.started(info)
                    await _run_until_stopped(rt, gateway, control, config.grace)
            except ChildStartError as exc:
                raise ServeFailed(f"cannot listen on {_url(settings.host, settings.port)}: "
                                  f"{_cause(exc)}") from exc
            except RestartIntensityExceeded as exc:
                # The gateway's listener, or the retention pruner: both are serve's children.
                who = "the gateway" if exc.child in (None, "gateway") else f"serve's {exc.child}"
                raise ServeFailed(f"{who} kept crashing: more than {config.max_restarts} "
                                  f"restarts in {config.period:g}s (last error: {_cause(exc)}); "
                                  "stopping") from exc
            finally:
                with trio.CancelScope(shield=True):
                    await _close(rt, gateway, immediate=control.immediate.is_set())
    if starting.cancelled_caught:
        log.warning("event=start_abandoned reason=\"a second stop request while starting\"")
    log.info("event=stopped db=%s", field(db))


@contextlib.contextmanager
def _runtime_gave_up() -> Iterator[None]:
    """The runtime's own supervision tree (its writer, lanes, recovery) gave up, past its
    restart intensity (a failing disk, a writer process killed again and again): its exit
    raises that, and serve ends with a message for the operator (exit 1), as it does when the
    gateway keeps crashing."""
    try:
        yield
    except RestartIntensityExceeded as exc:
        raise ServeFailed(f"the runtime failed: {exc} (last error: {_cause(exc)}); "
                          "stopping") from exc


def _absolute(path: pathlib.Path, key: str) -> pathlib.Path:
    """*path* made absolute, or :class:`ConfigError` naming *key*: a relative one cannot be
    once the current directory was removed (a release folder replaced under the shell), and
    ``getcwd``'s ``FileNotFoundError`` ended serve in a traceback."""
    try:
        return path.absolute()
    except OSError as exc:
        raise ConfigError(key, "cannot be made absolute: the current directory is gone "
                               f"({exc.strerror or exc})") from None


def _agent(config: ServeConfig) -> Any:
    """``serve.agent`` (``--agent``), else the gateway channel's own ``agent`` key, else
    :class:`EchoAgent`; loaded before anything is created, so a bad one leaves nothing."""
    if config.agent is not None:
        return load_agent(config.agent, field="serve.agent")
    if config.channel.agent is not None:
        return load_agent(config.channel.agent, field=f"channels.{config.channel.name}.agent")
    return EchoAgent()


_KEYS = {"db_path": "db"}
"""``open_runtime``'s arguments whose ``[serve]`` key has another name."""


async def _open_runtime(stack: contextlib.AsyncExitStack, config: ServeConfig,
                        db: pathlib.Path, token_file: pathlib.Path | None) -> Any:
    """The runtime, entered on *stack*. A database or workspace it cannot open is refused
    by name (not a traceback); no token file was made yet, so a start that did not happen
    leaves nothing behind (and never removes a token file another server uses). The token
    file (*token_file*, or the default beside the database) and the configuration file (it
    may hold ``gateway.token``) are private: no turn sends them, wherever they are (the
    workspace may hold them)."""
    private = () if config.token is not None else (token_file or token_path(config.db),)
    if config.config_path is not None:
        private += (_absolute(config.config_path, "config"),)
    try:
        return await stack.enter_async_context(tidings.open_runtime(
            db, workspace=config.workspace, core_id=config.core_id, grace=config.grace,
            writer=config.writer, private_files=private))
    except (TidingsError, sqlite3.Error, OSError) as exc:
        if isinstance(exc, ValidationError):  # named by the key: db_path is serve.db
            key = _KEYS.get(exc.field, exc.field)
            raise ConfigError(f"serve.{key}", exc.reason) from exc
        raise ServeFailed(f"cannot open the database {db} (serve.db): {_cause(exc)}") from exc


async def _run_until_stopped(rt: Any, gateway: GatewayChannel, control: StopControl,
                             grace: float) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_hurry, rt, control, nursery.cancel_scope)
        await control.graceful.wait()
        gateway.stop_accepting()
        deadline = trio.current_time() + grace
        log.info("event=stopping grace=%g turns_running=%d", grace, len(rt.tasks))
        with trio.move_on_at(deadline) as waited:
            await gateway.wait_idle()
        if waited.cancelled_caught and len(rt.tasks):  # (grace 0 cuts the wait at once)
            log.warning("event=grace_expired grace=%g turns_cancelled=%d", grace,
                        len(rt.tasks))
        # Cancel what still runs now (reason shutdown), while its clients can still hear it.
        rt.tasks.grace = 0.0
        await rt.tasks.stop()
        with trio.move_on_at(max(deadline, trio.current_time() + _DRAIN_MIN)) as drained:
            await gateway.drain()
        if drained.cancelled_caught:
            log.warning("event=drain_incomplete detail=%s",
                        field("unacked rows become unknown, queued rows stay queued"))
        nursery.cancel_scope.cancel(reason="stopping")


async def _hurry(rt: Any, control: StopControl, scope: trio.CancelScope) -> None:
    """On the second stop request: no more waiting for the gateway (see :func:`_stop_now`
    for the runtime)."""
    await control.immediate.wait()
    scope.cancel(reason="immediate stop requested")


def _stop_now(rt: Any) -> None:
    """The second stop request, whenever it comes: turns and lanes get no more grace, and
    if the runtime's exit already waits for lanes still in a delivery, they are cancelled now
    (what stop() does when its grace ends: a row cut short is ``unknown`` at the next start)."""
    rt.tasks.grace = 0.0
    rt.dispatcher.grace = 0.0
    if rt.dispatcher.stopping:
        for lane in list(rt.dispatcher.lanes.values()):
            if lane.scope is not None:
                lane.scope.cancel(reason="shutdown: immediate stop requested")


async def _close(rt: Any, gateway: GatewayChannel, *, immediate: bool) -> None:
    """Close the gateway; turns still running had their grace already: cancel them at once."""
    rt.tasks.grace = 0.0
    if immediate:
        rt.dispatcher.grace = 0.0
    await gateway.aclose()


def _cause(exc: BaseException) -> str:
    """The root error behind *exc*: its causes followed, groups opened (first leaf)."""
    cause = exc
    for _ in range(50):
        if isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]
        elif cause.__cause__ is not None and cause.__cause__ is not cause:
            cause = cause.__cause__
        else:
            break
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__
