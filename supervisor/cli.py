"""The ``tidings`` command line: one subcommand per small ``_cli_<name>`` module.

Each command module has ``register(commands)``, which adds its parser to the subparsers and sets
``run(args) -> exit code`` as the parser's default. Adding a command is adding its module and
its one-line help to :data:`_COMMANDS`.

A command's module is imported only when that command runs: the modules import what their
commands use (``serve`` the whole runtime, ``chat`` the websocket client and the channels), most
of a second on a small machine, which ``tidings --help`` or ``tidings status`` must not wait
for. The other commands get a parser with their name and help only, which is all the overview
(``tidings --help``) and argparse's ``invalid choice`` message show.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NoReturn

import tidings
from tidings.supervisor._stderr import say, stdout_lost

__all__ = ["build_parser", "main"]

_COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("tidings.supervisor._cli_serve",
              "run the runtime, the websocket gateway and an agent"),
    "status": ("tidings.supervisor._cli_status",
               "show delivery counts and recent deliveries, or one delivery"),
    "chat": ("tidings.supervisor._cli_chat", "chat with an agent from this terminal"),
    "prune": ("tidings.supervisor._cli_prune",
              "delete deliveries, events and client ids older than an age"),
}
"""Each command's module and its help in ``tidings --help`` (the help the module's ``register``
gives it: tests/supervisor/test_cli_light_imports.py holds them to it), in the order listed."""

_AGENT_COMMANDS = ("serve", "chat")
"""The commands that may load an agent by import path."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that with stderr closed (``2>&-``: ``sys.stderr`` is None) a
    refused line prints nothing: argparse's ``error`` prints the usage with
    ``print_usage(sys.stderr)``, which takes None for stdout, and the usage went into whatever
    reads stdout. The exit code (2) is the same. Its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        if sys.stderr is None:
            self.exit(2)
        super().error(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """argparse's exit; after what ``--help`` and ``--version`` print (status 0), 1 with
        one line on stderr when stdout could not take it (``> /dev/full``, ``>&-``), as
        ``status`` and the chats end: argparse's printing drops the write's error, and they
        exited 0 having printed nothing."""
        if status == 0 and message is None:
            status = _stdout_written()
        super().exit(status, message)


class _WatchedStdout:
    """``sys.stdout`` while the command line is parsed: it keeps the error of a write that
    failed, which argparse's printing of ``--help`` and ``--version`` drops (see
    :meth:`_Parser.exit`). Everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as exc:
            if self.error is None:
                self.error = exc
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def _watching_stdout() -> Iterator[None]:
    """``sys.stdout`` a :class:`_WatchedStdout` of it meanwhile (as it is when None)."""
    stream = sys.stdout
    if stream is None:
        yield
        return
    sys.stdout = _WatchedStdout(stream)
    try:
        yield
    finally:
        sys.stdout = stream


def _stdout_written() -> int:
    """0 when what ``--help`` or ``--version`` printed to stdout is written (flushed now);
    else 1, said on stderr (nothing for a reader that left, ``| head``), stdout then on
    ``/dev/null`` so that the interpreter's exit does not fail at flushing it again."""
    watched = sys.stdout if isinstance(sys.stdout, _WatchedStdout) else None
    if watched is None:
        return 0
    error = watched.error
    try:
        watched.stream.flush()
    except OSError as exc:
        error = error or exc
    if error is None:
        return 0
    # a closed stdout's descriptor holds /dev/null already
    return stdout_lost("tidings", error, stream=watched.stream,
                       drop=not isinstance(watched.stream, _ClosedStdout))


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``tidings`` parser. Only the *commands* named (None: every one) have their whole
    parser, which imports their modules; the others have their name and help only."""
    complete = set(_COMMANDS if commands is None else commands)
    parser = _Parser(
        prog="tidings", description="A durable, supervised delivery runtime for agent hosts.")
    parser.add_argument("--version", action="version", version=f"tidings {tidings.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in _COMMANDS.items():
        if name in complete:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def _needed(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The commands whose parsers parsing *argv* can reach (None: any). argparse hands the
    rest of the line to a command's parser only at a word that is that command's name: when
    the line starts with one, only that one; when no word is one (``--help``, ``--version``, a
    mistyped command), none; else (``--version status``) every one, as before."""
    if argv and argv[0] in _COMMANDS:
        return (argv[0],)
    if not any(word in _COMMANDS for word in argv):
        return ()
    return None


def _importable_here() -> None:
    """Let ``--agent module:Name`` (and a config's ``agent``) name a module in the current
    directory, as ``python -m`` and ``uvicorn main:app`` do: the installed script has its own
    directory first on ``sys.path``, not this one. Appended, so it never shadows the standard
    library or an installed package."""
    try:
        here = os.getcwd()
    except OSError:  # the directory was removed under us: nothing to add
        return
    if "" not in sys.path and here not in sys.path:
        sys.path.append(here)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (argparse exits 2 on bad usage). Ctrl-C
    that no command took as its own (one landing while the command's module loads, the
    first second or two of ``chat`` and ``serve``) is exit 130 with nothing said, as the chat's
    own Ctrl-C."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if sys.stdin is None and _closed(0):
        _hold_closed(0, os.O_RDONLY)
    if sys.stdout is None and _closed(1):
        _stand_in_for_closed_stdout()
    if sys.stderr is None and _closed(2):
        _hold_closed(2, os.O_WRONLY)
    _escape_what_stdout_cannot_encode()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` for a stdout that was closed (``tidings ... >&-``): Python starts with
    None there, and ``print`` to None writes nothing while ``flush`` raises AttributeError.
    Writing fails as on a closed descriptor (``EBADF``), so that ``status`` and ``chat`` end as
    they do with a stdout they cannot write (``> /dev/full``: one line on stderr, exit 1);
    flushing, which is all ``serve`` does, succeeds. Descriptor 1 holds ``/dev/null`` meanwhile
    (see :func:`_stand_in_for_closed_stdout`)."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def fileno(self) -> int:
        return 1


def _escape_what_stdout_cannot_encode() -> None:
    """Print a character stdout's encoding has no code for escaped (``\\u65e5``), as
    ``PYTHONIOENCODING`` and legacy locales (ISO-8859-1) or a Windows redirect (its ANSI code
    page) make it: what the commands print comes from agents, users and platforms, and one
    such character in a reply, an error or an id ended ``status`` with a
    ``UnicodeEncodeError`` traceback and failed the delivery ``chat --local`` printed. A
    stdout set to handle them otherwise (not ``strict``) is left so."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", None) == "strict":
        reconfigure(errors="backslashreplace")


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _stand_in_for_closed_stdout() -> None:
    """Put :class:`_ClosedStdout` in ``sys.stdout``, and ``/dev/null`` on descriptor 1: left
    free, the next descriptor opened takes it (trio's epoll, in ``serve`` and the chats; then
    a lock or token file could), and what writes to descriptor 1 would write there.
    Inheritable, as a stdout is: opened on descriptor 1 itself it was not, and a process an
    agent started (a shell, git) began with no stdout, the first file it opened taking its
    place and its output."""
    _hold_closed(1, os.O_WRONLY)
    sys.stdout = _ClosedStdout()


def _hold_closed(fd: int, flags: int) -> None:
    """Put ``/dev/null`` on descriptor *fd* for a stdin, stdout or stderr that was closed
    (``<&-``, ``>&-``, ``2>&-``), inheritable as they are; ``sys.stdin`` / ``sys.stderr`` stay
    None, so the chats read no lines and what would be said is lost, as before (stdout gets
    :class:`_ClosedStdout`). Left free, the next
    descriptor opened took it (trio's epoll, not inherited): ``serve``'s writer process, which
    takes its stderr for its stdout, found none and could not start (``tidings serve --writer
    process 2>&-`` ended at once, exit 1, saying nothing), and a process an agent started (a
    shell, git) began without it, the first file it opened taking its place."""
    devnull = os.open(os.devnull, flags)
    if devnull != fd:
        os.dup2(devnull, fd)  # (inheritable)
        os.close(devnull)
    else:
        os.set_inheritable(fd, True)


def _main(argv: list[str]) -> int:
    parser = build_parser(_needed(argv))
    with _watching_stdout():
        args = parser.parse_args(argv)
    if args.command is None:
        say(sys.stderr, parser.format_help().rstrip("\n"))  # stderr closed: not to stdout
        return 2
    if args.command in _AGENT_COMMANDS:
        _importable_here()
    try:
        code = int(args.run(args))
        sys.stdout.flush()
    except BrokenPipeError as exc:  # `tidings status | head`: the reader left; say nothing
        return stdout_lost("tidings", exc)
    return code


if __name__ == "__main__":
    sys.exit(main())
