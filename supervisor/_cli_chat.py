"""``tidings chat``: talk to an agent from a terminal.

``tidings chat --local [--db PATH] [--agent pkg.mod:Name] [--config FILE] [--channel NAME]
[--conversation NAME] [--workspace DIR] [--chunks]`` runs a runtime, the agent and a terminal
channel in this process (no network): each line read is a message (``/help`` for commands),
and deliveries, progress and lifecycle events are printed as they happen. The agent is the one
``tidings serve`` runs with the same ``--config``: ``--agent``, else ``[serve] agent``, else
``[channels.<channel>] agent``, else ``EchoAgent``. With stdin a pipe,
each line waits for the previous one's turn and deliveries (a deterministic transcript); at the
end of input it waits for running turns and their deliveries, then exits. The conversation is
durable: running it again on the same database continues the same session.

``--url`` (a running ``tidings serve``) is the websocket client's mode. A flag of one mode
given in the other is refused, naming it (exit 2): ``--db``, ``--agent``, ``--config``,
``--channel``, ``--workspace`` and ``--verbose`` need ``--local``; ``--token``,
``--token-file`` and ``--web`` are not for it.

Exit codes: 0 done; 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (each ends the chat at any point and
closes the runtime: a running turn gets its grace, then is cancelled; SIGHUP unless ignored,
``nohup``); 1 a stdout it
cannot write (``> /dev/full``: one line on stderr; none for a reader that left, ``| head``),
which ends the chat at once; 2 bad usage or configuration (such as a ``--conversation`` whose
conversation key would be over ``MAX_CONVERSATION_KEY_CHARS``, 8192 characters: refused before
anything is opened, as every message would be); 3 (``EXIT_IN_USE``, as ``serve`` and
``prune``) the database is held by another process (a running server, a ``tidings prune``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import pathlib
import sqlite3
import sys
from collections.abc import Mapping
from typing import Any

import trio

import tidings
from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS
from tidings.channels import ChannelConfig, Inbound, load_agent
from tidings.channels._agents import AGENT_LOG
from tidings.channels._inbound import inbound_conversation_key
from tidings.channels._lines import message_cap
from tidings.channels._loader import split_import_path
from tidings.channels._terminal import (
    TerminalChannel,
    input_line,
    is_a_terminal,
    stdin_is_a_terminal,
)
from tidings.errors import (
    ConfigError,
    DatabaseInUseError,
    StoreError,
    TidingsError,
    ValidationError,
)
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_input import input_lines
from tidings.supervisor._cli_paths import path_argument
from tidings.supervisor._config import read_file
from tidings.supervisor._exit_codes import EXIT_IN_USE
from tidings.supervisor._signals import ENDING, ending_signals
from tidings.supervisor._stderr import one_line, say, stdout_lost

__all__ = ["DEFAULT_DB", "load_channel_config", "register", "run"]

_SENDER = "you"
"""The terminal channel's sender id (a ``sender`` session scope puts it in the key)."""

DEFAULT_DB = "tidings-local.db"
"""Not ``tidings.db``: a local chat must not recover (and so disturb) a running server's rows."""

_ENDING = ENDING
"""The signals that end the local chat as a cancel, its runtime then closing: the websocket
chat's (Ctrl-C, SIGTERM, and SIGHUP as ``tidings serve`` stops on it; each unless ignored,
``nohup``). Ctrl-C was trio's ``KeyboardInterrupt``, raised wherever it landed: in the
agent's own code (a busy agent) it ended the turn ``failed: KeyboardInterrupt`` instead of
the stop's ``shutdown``. While the chat still loads (before its run), it is that still: exit
130."""

_FLAGS = {"db_path": "--db", "workspace": "--workspace"}
"""``open_runtime``'s parameters that are options of ``tidings chat --local``."""


def register(commands: Any) -> None:
    """Add ``chat`` to the subparsers *commands*."""
    parser = commands.add_parser(
        "chat", help="chat with an agent from this terminal",
        description=f"Chat with an agent from this terminal: by default with the one a running "
                    f"`tidings serve` runs ({_chat_ws.DEFAULT_URL}, its token read from "
                    f"./tidings.db.token); --local runs everything in this process, with no "
                    f"network and a database of its own.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--local", action="store_true",
                      help="run the runtime, the agent and a terminal channel in this process")
    mode.add_argument("--url", metavar="URL", help=f"connect to a running `tidings serve` "
                                                   f"(default: {_chat_ws.DEFAULT_URL})")
    # None: not given (a flag of the local chat is refused without --local, see run)
    parser.add_argument("--db", type=_db_argument, metavar="PATH",
                        help=f"the database, with --local (default: ./{DEFAULT_DB})")
    parser.add_argument("--agent", metavar="pkg.mod:Name",
                        help="the agent, by import path, with --local (default: as tidings "
                             "serve: the --config file's [serve] agent, else its "
                             "[channels.<channel>] agent, else EchoAgent)")
    parser.add_argument("--config", type=path_argument, metavar="FILE",
                        help="a TOML file, with --local (tidings serve's: its [channels.<channel>] "
                             "table configures the channel, and [serve] agent the agent)")
    parser.add_argument("--channel", metavar="NAME",
                        help="the channel name, with --local (default: terminal)")
    parser.add_argument("--conversation", default="default", metavar="NAME",
                        help="the conversation to continue (default: default)")
    parser.add_argument("--workspace", metavar="DIR",
                        help="the agent's workspace, with --local (default: the current directory)")
    parser.add_argument("--chunks", action="store_true",
                        help="also print streamed text chunks as they arrive")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="log the runtime's events, with --local")
    _chat_ws.add_arguments(parser)
    parser.set_defaults(run=run, parser=parser)


def _db_argument(text: str) -> str:
    """``--db`` as given; one ending with a separator (``state/``: a folder's, which pathlib
    took for the file ``state``) is refused as :func:`path_argument` refuses it, an empty one
    left to ``open_runtime`` (``--db: must be a non-empty path``)."""
    if text:
        path_argument(text)
    return text


def load_channel_config(name: str, path: pathlib.Path | None) -> ChannelConfig:
    """The channel's config: ``[channels.<name>]`` of the TOML file at *path*, if any.

    Raises:
      ConfigError: naming ``--channel`` (a name that is no channel name), the file or the
        dotted key (``channels.terminal.dispatch_mode``).
    """
    _check_channel_name(name)
    return _channel_config(name, None if path is None else read_file(path))


def _check_channel_name(name: str) -> None:
    try:
        ChannelConfig(name)  # the name first: it is the --channel given, not a key of the file
    except ConfigError as exc:
        raise ConfigError("--channel", exc.reason) from None


def _channel_config(name: str, data: Mapping[str, Any] | None) -> ChannelConfig:
    """``[channels.<name>]`` of the file's *data* (None: no file)."""
    _check_channel_name(name)
    if data is None:
        return ChannelConfig(name)
    channels = data.get("channels", {})
    if not isinstance(channels, dict):
        raise ConfigError("channels", "must be a table of channel tables")
    table = channels.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"channels.{name}", "must be a table")
    return ChannelConfig.from_mapping(name, table)


def _serve_agent(data: Mapping[str, Any] | None) -> str | None:
    """``[serve] agent`` of the file's *data* (None: no file)."""
    if data is None:
        return None
    serve = data.get("serve", {})
    if not isinstance(serve, dict):
        raise ConfigError("serve", f"must be a table, not {type(serve).__name__}")
    agent = serve.get("agent")
    if agent is not None:
        split_import_path(agent, field="serve.agent")
    return agent


def _chosen_agent(args: argparse.Namespace, config: ChannelConfig,
                  data: Mapping[str, Any] | None) -> Any:
    """The agent ``tidings serve`` would run with the same file (its *data*): ``--agent``,
    else ``[serve] agent``, else the channel's ``agent`` key; None (the channel's
    ``EchoAgent``) without any. Loaded now, so a bad one is refused by the key it came
    from."""
    serve_agent = _serve_agent(data)  # checked even when --agent replaces it
    if args.agent is not None:  # an empty --agent is refused by name, not taken for none
        return load_agent(args.agent, field="--agent")
    if serve_agent is not None:
        return load_agent(serve_agent, field="serve.agent")
    if config.agent is not None:
        return load_agent(config.agent, field=f"channels.{config.name}.agent")
    return None


def run(args: argparse.Namespace) -> int:
    """Run ``tidings chat`` for parsed *args*; returns the exit code."""
    refused = _other_mode(args)
    if refused is not None:
        say(sys.stderr, f"tidings chat: {refused}")
        return 2
    if not args.local:  # the websocket client of a running `tidings serve`
        return _chat_ws.run(args)
    args.db = DEFAULT_DB if args.db is None else args.db
    args.channel = "terminal" if args.channel is None else args.channel
    args.workspace = "." if args.workspace is None else args.workspace
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR,
                        stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    if not args.verbose:  # the agent's own mistakes are what a local chat tries it out for
        AGENT_LOG.setLevel(logging.WARNING)
    try:
        _check_channel_name(args.channel)
        # Read once: a second read of a pipe (`--config <(...)`) is empty, and lost the
        # [serve] agent.
        data = None if args.config is None else read_file(args.config)
        config = _channel_config(args.channel, data)
        agent = _chosen_agent(args, config, data)  # before the database is made
    except ConfigError as exc:  # a path in it (--config): one line, as serve's
        say(sys.stderr, one_line(f"tidings chat: {exc}"))
        return 2
    refused = _conversation_refused(config, args.conversation)
    if refused is not None:
        say(sys.stderr, one_line(f"tidings chat: --conversation: {refused}"))
        return 2
    try:
        # Which signals to listen for is read before the run: in it, SIGINT has trio's
        # handler, no longer Python's default (see _signals.ending_signals).
        lost, signalled = trio.run(_chat_local, args, config, agent,
                                   ending_signals(*_ENDING))
    except DatabaseInUseError as exc:  # a running server's (or prune's): as they exit
        say(sys.stderr, one_line(f"tidings chat: {exc}"))
        return EXIT_IN_USE
    except _DatabaseRefused as exc:
        say(sys.stderr, one_line(f"tidings chat: --db: {exc}"))
        return 2
    except TidingsError as exc:
        say(sys.stderr, one_line(f"tidings chat: {_as_given(exc)}"))
        return 2
    except sqlite3.DatabaseError as exc:  # later than its opening (see _opened)
        say(sys.stderr, one_line(f"tidings chat: the database {args.db} failed: {exc}"))
        return 2
    except KeyboardInterrupt:
        return 130
    if lost is not None:
        return stdout_lost("tidings chat", lost)
    return 0 if signalled is None else signalled


def _other_mode(args: argparse.Namespace) -> str | None:
    """Why a flag given is not one of the mode's (naming it), None when each is: ignored, it
    would do something else than asked (``--agent`` without ``--local`` talks to the agent a
    server runs; ``--web`` with it starts a chat)."""
    if args.local:
        given = [("--token", args.token), ("--token-file", args.token_file),
                 ("--web", args.web or None)]
        why = "not with --local"
    else:
        given = [("--db", args.db), ("--agent", args.agent), ("--config", args.config),
                 ("--channel", args.channel), ("--workspace", args.workspace),
                 ("--verbose", args.verbose or None)]
        why = "only with --local"
    for flag, value in given:
        if value is not None:
            return f"{flag}: {why}"
    return None


class _DatabaseRefused(Exception):
    """The runtime could not open ``--db`` (a directory, a file that is no database, a lock it
    cannot take): said naming the option, as every bad input is; ``str()`` is the reason."""


@contextlib.asynccontextmanager
async def _opened(args: argparse.Namespace, private: tuple[Any, ...]) -> Any:
    """``open_runtime`` on ``--db``; what refuses the database while it opens (not later, in
    the chat) raised as :class:`_DatabaseRefused`. In use by another process stays
    :class:`DatabaseInUseError` (exit 3)."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            rt = await stack.enter_async_context(tidings.open_runtime(
                args.db, workspace=args.workspace, private_files=private))
        except DatabaseInUseError:
            raise
        except StoreError as exc:
            raise _DatabaseRefused(str(exc)) from exc
        except sqlite3.DatabaseError as exc:  # e.g. not a database: SQLite's own error
            raise _DatabaseRefused(f"cannot open the database {args.db}: {exc}") from exc
        yield rt


def _as_given(exc: TidingsError) -> str:
    """*exc* as said to the user: one naming a parameter of ``open_runtime`` that is an option
    here names the option (``--db: ...``, not ``db_path: ...``, a key never typed)."""
    if isinstance(exc, ValidationError) and exc.field in _FLAGS:
        return f"{_FLAGS[exc.field]}: {exc.reason}"
    return str(exc)


def _conversation_refused(config: ChannelConfig, name: str) -> str | None:
    """Why the conversation *name* cannot be chatted in on the channel of *config*, None when
    it can: its conversation key (the channel, the scope and *name* percent-encoded, up to 12
    characters a character) must be within ``MAX_CONVERSATION_KEY_CHARS``, else every message
    would be refused, naming a key the user never typed."""
    try:
        key = inbound_conversation_key(config, Inbound(chat_id=name, sender_id=_SENDER,
                                                       text=""))
    except ValidationError as exc:
        return exc.reason
    if len(key) <= MAX_CONVERSATION_KEY_CHARS:
        return None
    return (f"is {len(name)} characters, and its conversation key {len(key)}, over the limit "
            f"of {MAX_CONVERSATION_KEY_CHARS}")


async def _chat_local(args: argparse.Namespace, config: ChannelConfig, agent: Any,
                      signals: Mapping[int, int]) -> tuple[OSError | None, int | None]:
    """Chat until the end of input; the stdout error that ended it early, if one did, and the
    exit code of a Ctrl-C, SIGTERM or SIGHUP that did (see :data:`_ENDING`: it cancels the
    chat, the runtime then closes: a running turn gets its grace)."""
    # The config file may hold gateway.token: private, as tidings serve makes it.
    private = () if args.config is None else (args.config,)
    async with _opened(args, private) as rt:
        interactive = stdin_is_a_terminal()
        prompt = "you> "
        # A prompt is shown (and put back after each line printed) only on a terminal's
        # stdout: redirected (`> transcript.txt`), the file gets the chat's lines alone.
        shows_prompt = interactive and is_a_terminal(sys.stdout)
        channel = TerminalChannel(rt, config, agent, chat_id=args.conversation,
                                  sender_id=_SENDER,
                                  show_chunks=args.chunks,
                                  redraw=(lambda: input_line(prompt)) if shows_prompt else None)
        # Through say: a stderr it cannot write or closed loses the line, nothing else.
        say(sys.stderr, one_line(f"tidings chat (local): channel {config.name}, conversation "
                                  f"{args.conversation}, database {pathlib.Path(args.db).name}. "
                                  "/help for commands; end of input (Ctrl-D) quits."))
        try:
            # A pipe is read by trio (input_lines), not in a thread that Ctrl-C would leave
            # blocked in stdin's buffered reader: CPython aborts at exit on its lock.
            lines = input_lines(prompt, max_line_bytes=message_cap)
            signalled = await _chat_ws.until_signalled(
                functools.partial(channel.chat, lines, one_at_a_time=not interactive), signals)
        finally:
            channel.close()
    return channel.output_error, signalled
