"""``tidings serve``: run the supervision tree, the websocket gateway and an agent.

``tidings serve [--config FILE] [--db PATH] [--host H] [--port N] [--token T | --token-file F]
[--agent pkg.mod:Name] [--workspace DIR] [--core-id ID] [--grace S] [--writer W]
[--log-level L] [--log-json]``. Flags override the TOML file; with neither it serves
``./tidings.db`` with the built-in ``EchoAgent`` on 127.0.0.1:8765 and a token generated beside
the database.

Exit codes: 0 after a clean stop (SIGTERM / SIGINT / SIGHUP); 1 it could not open its database or
listen, or the gateway (or the runtime's own supervision tree) kept crashing beyond its restart
intensity; 2 bad usage or configuration; 3 (``EXIT_IN_USE``, as ``chat --local`` and
``prune``) the database is held by another process (another server, a ``tidings prune``).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import stat
import sys
from collections.abc import Mapping
from typing import Any

import trio

from tidings.errors import ConfigError, DatabaseInUseError
from tidings.store import EXECUTORS
from tidings.supervisor._cli_paths import path_argument
from tidings.supervisor._collector import tune_for_serving
from tidings.supervisor._config import DEFAULT_DB, ServeConfig, file_path, load_config, read_toml
from tidings.supervisor._exit_codes import EXIT_IN_USE
from tidings.supervisor._log import field
from tidings.supervisor._logging import (
    LEVELS,
    configure_logging,
    holding_records,
    logging_configured,
    replay,
)
from tidings.supervisor._serve import ServeFailed, serve
from tidings.supervisor._signals import StopControl, watch_signals
from tidings.supervisor._stderr import one_line, say

__all__ = ["register", "run"]

log = logging.getLogger("tidings.serve")


def register(commands: Any) -> None:
    """Add ``serve`` to the subparsers *commands*."""
    parser = commands.add_parser(
        "serve", help="run the runtime, the websocket gateway and an agent",
        description="Run the supervision tree with the websocket gateway and an agent until "
                    "SIGTERM / SIGINT / SIGHUP (a second one stops at once). Flags override "
                    "--config.")
    parser.add_argument("--config", type=path_argument, metavar="FILE",
                        help="a TOML file (see docs/tidings.example.toml)")
    parser.add_argument("--db", metavar="PATH", help=f"the database (default: ./{DEFAULT_DB})")
    parser.add_argument("--host", metavar="HOST", help="listen address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, metavar="N",
                        help="listen port (default: 8765; 0: any free port)")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token", metavar="TOKEN",
                       help="the clients' token (default: generated, kept in <db>.token)")
    token.add_argument("--token-file", type=path_argument, metavar="FILE",
                       help="read (or create) the token in FILE instead of <db>.token")
    parser.add_argument("--agent", metavar="pkg.mod:Name",
                        help="the agent, by import path, over the --config file's (default: "
                             "its serve.agent, else its channels.gateway.agent, else the "
                             "built-in EchoAgent)")
    parser.add_argument("--workspace", metavar="DIR", help="the agent's workspace (default: .)")
    parser.add_argument("--core-id", metavar="ID", help="this host's core id (default: default)")
    parser.add_argument("--grace", type=float, metavar="SECONDS",
                        help="how long a stop waits for running turns (default: 10)")
    parser.add_argument("--writer", choices=EXECUTORS,
                        help="where commits run: a writer process beside the event loop "
                             "(default: more deliveries/s, a lower latency tail) or a worker "
                             "thread (one process)")
    parser.add_argument("--log-level", choices=LEVELS, help="default: info")
    parser.add_argument("--log-json", action="store_true", default=None,
                        help="log JSON lines instead of key=value lines")
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    """Run ``tidings serve`` for parsed *args*; returns the exit code."""
    # What reading the config logs (a key taken with a warning) is held until the log has
    # the form the config gives, then said in it.
    try:
        with holding_records() as held:
            config = load_config(args.config, db=args.db, host=args.host, port=args.port,
                                 token=args.token, token_file=args.token_file, agent=args.agent,
                                 workspace=args.workspace, core_id=args.core_id,
                                 grace=args.grace, writer=args.writer,
                                 log_level=args.log_level, log_json=args.log_json)
    except ConfigError as exc:
        # Said in the log's form, at its level, as far as the flags and the file (when that
        # much of it reads) tell them: the JSON lines, which a log shipper reads alone; the
        # warnings held from reading as log lines too, or not at all under `--log-level error`.
        level, as_json = _log_form(args)
        with logging_configured(level, json_lines=as_json):
            replay(held)
            _refused(exc, as_json=as_json)
        return 2
    configure_logging(config.log_level, json_lines=config.log_json)
    replay(held)
    # This process lives as long as the server: the collector is set for that (see
    # _collector), and set back when serving ends (main() may run in a host's process: tests).
    before = tune_for_serving()
    try:
        trio.run(_main, config)
    except ConfigError as exc:  # (a workspace, agent or token file checked as serve starts)
        _refused(exc, as_json=config.log_json)
        return 2
    except ServeFailed as exc:
        log.error("event=serve_failed reason=%s", field(str(exc)))  # noqa: TRY400 - said
        say(sys.stderr, one_line(f"tidings serve: {exc}"))  # closed (2>&-): lost, not stdout
        # Another process holds the database: the code chat --local and prune end with too.
        return EXIT_IN_USE if isinstance(exc.__cause__, DatabaseInUseError) else 1
    finally:
        gc.set_threshold(*before)
    return 0


def _refused(exc: ConfigError, *, as_json: bool) -> None:
    """Say the configuration refused: with the JSON lines also as an event before the line (a
    shipper reads the JSON lines alone); else the one line says it."""
    if as_json:
        log.error("event=invalid_configuration key=%s reason=%s",
                  field(exc.field), field(exc.reason))
    say(sys.stderr, one_line(f"tidings serve: invalid configuration: {exc}"))


def _log_form(args: argparse.Namespace) -> tuple[str, bool]:
    """The log's level and whether it is JSON lines, for a configuration refused whole: the
    flags (``--log-level``, ``--log-json``), else what ``[logging]`` says in a ``--config``
    file that is a regular file and reads as TOML (read again: a pipe is not, nor a named
    pipe, which would wait for a writer) where it is a value the key takes; else ``info``
    and ``key=value`` lines."""
    table: Any = None
    if args.config is not None and (args.log_level is None or not args.log_json):
        try:
            path = file_path("config", args.config)  # ~ the home, as load_config reads it
            if stat.S_ISREG(os.stat(path).st_mode):
                table = read_toml(path).get("logging")
        except (OSError, ConfigError):
            pass
    if not isinstance(table, Mapping):
        table = {}
    level = args.log_level or next((name for name in LEVELS if table.get("level") == name),
                                   "info")
    return level, bool(args.log_json) or table.get("json") is True


async def _main(config: ServeConfig) -> None:
    control = StopControl()
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:
        await nursery.start(watch_signals, control)
        try:
            await serve(config, control)
        except (ServeFailed, ConfigError) as exc:  # raised below, not wrapped in a group
            failure = exc
        nursery.cancel_scope.cancel(reason="served")
    if failure is not None:
        raise failure
