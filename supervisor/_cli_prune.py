"""``tidings prune DB --older-than AGE [--dry-run] [--json]``: retention on a stopped database.

Deletes what ``rt.prune(older_than=...)`` deletes (see README, Retention): final deliveries
with their work items and events, events and client message ids older than AGE. A chunk per
transaction, as the runtime does; no process epoch is registered. ``--dry-run`` counts
exactly what would go (everything runs in one transaction that is rolled back).

It takes the runtime lock (``<database>.runtime.lock``) for its run: while a runtime (``tidings
serve``, a host's ``open_runtime``) holds the database it refuses, so prune while serve runs
through its ``[retention]`` config instead.

Exit codes: 0 done; 1 a stdout it cannot write; 2 bad usage, or no (tidings) database, or a
path or lock file the system refuses (one line naming it, not a traceback); 3
(:data:`~tidings.supervisor._exit_codes.EXIT_IN_USE`, as ``serve`` and ``chat --local``) a
runtime, or another prune, holds the database; 130 Ctrl-C cut it, 143 SIGTERM (``timeout 60
tidings prune ...``), 129 SIGHUP (a closed ssh session; unless ignored, ``nohup``): the chunk
in progress is rolled back, those committed before stay deleted: their counts are printed, as
a whole prune's are, and the cut said on stderr.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from tidings.errors import StoreError
from tidings.supervisor._age import parse_age
from tidings.supervisor._cli_paths import path_argument
from tidings.supervisor._exit_codes import EXIT_IN_USE
from tidings.supervisor._stderr import one_line, say

if TYPE_CHECKING:
    from tidings.store import PruneReport
    from tidings.supervisor._signals import Signalled

__all__ = ["EXIT_IN_USE", "register", "run"]


def register(commands: Any) -> None:
    """Add ``prune`` to the subparsers *commands*."""
    parser = commands.add_parser(
        "prune", help="delete deliveries, events and client ids older than an age",
        description="Delete the sent and failed deliveries (with their work items and "
                    "events), the events and the client message ids older than AGE from a "
                    "database no runtime has open. History, sessions and undelivered rows "
                    "are kept.")
    parser.add_argument("db", metavar="DB", type=path_argument, help="the database")
    parser.add_argument("--older-than", required=True, type=_age, metavar="AGE",
                        help="what to delete: older than AGE, like 30d, 12h, 90m, 3600s")
    parser.add_argument("--dry-run", action="store_true",
                        help="count what would be deleted; delete nothing")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(run=run, parser=parser)


def _age(text: str) -> float:
    try:
        return parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from tidings.actors._runtime_lock import DatabaseInUseError, lock_database, unlock_database
    from tidings.store import PruneReport, prune_file  # (the type: TYPE_CHECKING below)
    from tidings.supervisor._signals import ENDING, Signalled, ending_signals, raising_signals

    try:  # '~/x.db' quoted: as status --db and serve.db
        db: pathlib.Path = args.db.expanduser()
    except RuntimeError:  # ~nosuchuser, or no HOME and no password entry
        say(err, one_line(f"tidings prune: {str(args.db)!r} starts with ~, but there is no "
                          "home directory to expand it to (HOME is not set, or no such user): "
                          "give the whole path"))
        return 2
    try:
        db.stat()  # (exists() answers False for a path the system will not look up: a loop)
        if db.is_dir():
            say(err, one_line(f"tidings prune: {db} is a directory, not a database"))
            return 2
    except (FileNotFoundError, NotADirectoryError):
        say(err, one_line(f"tidings prune: no database at {db}"))
        return 2
    except OSError as exc:  # a name over the file system's limit, a folder it may not search,
        # a link loop
        say(err, one_line(f"tidings prune: cannot look at {db}: {exc.strerror or exc}"))
        return 2
    cutoff = time.time() - args.older_than
    try:
        fd, created = lock_database(db, holder="prune")
    except DatabaseInUseError as exc:
        say(err, one_line(f"tidings prune: {exc}") + (
            ": stop it first (or set [retention] in its serve config)"
            if exc.holder == "runtime" else ""))
        return EXIT_IN_USE
    except StoreError as exc:  # a lock file it cannot take: another user's, a read-only folder
        say(err, one_line(f"tidings prune: {exc}"))
        return 2
    went: list[PruneReport] = []
    cut: Signalled | None = None
    # SIGTERM and SIGHUP (those with their default action, which killed it silently) cut it
    # as Ctrl-C does: a chunk's transaction rolled back, the chunks committed before counted.
    cutting = ending_signals(*(signum for signum in ENDING if signum != signal.SIGINT))
    try:
        with raising_signals(cutting):
            report = prune_file(db, cutoff, dry_run=args.dry_run, on_chunk=went.append)
    except KeyboardInterrupt:  # Ctrl-C: the chunks committed before it stay deleted
        cut, report = Signalled(signal.SIGINT, 130), sum(went, PruneReport())
    except Signalled as exc:  # SIGTERM, SIGHUP: as Ctrl-C
        cut, report = exc, sum(went, PruneReport())
    except StoreError as exc:  # each names the file ("cannot prune ...", "not a tidings ...")
        went_before = sum(went, PruneReport())  # a full disk midway: those chunks stay deleted
        say(err, one_line(f"tidings prune: {exc}" + (
            f"; deleted before it: {_counts(went_before)}" if went_before.total else "")))
        return 2
    finally:
        unlock_database(fd, created)
    if cut is not None:
        return _interrupted(out, err, report, cutoff, cut, dry_run=args.dry_run, json_=args.json)
    return _print(out, err, report, cutoff, dry_run=args.dry_run, json_=args.json)


def _interrupted(out: TextIO, err: TextIO, report: PruneReport, cutoff: float, cut: Signalled,
                 *, dry_run: bool, json_: bool) -> int:
    """A signal cut the prune (Ctrl-C, SIGTERM, SIGHUP): what its committed chunks deleted is
    printed as a whole prune's counts are, and said on stderr (naming the signal but Ctrl-C's);
    exit 130, 143, 129 (a dry run changed nothing: no counts)."""
    by = "" if cut.signum == signal.SIGINT else f" by {signal.Signals(cut.signum).name}"
    if dry_run:
        say(err, f"tidings prune: interrupted{by} (a dry run: nothing changed)")
        return cut.exit_code
    _print(out, err, report, cutoff, dry_run=False, json_=json_)
    say(err, f"tidings prune: interrupted{by}: the counts printed went; run it again for the "
             "rest")
    return cut.exit_code


def _print(out: TextIO, err: TextIO, report: PruneReport, cutoff: float, *, dry_run: bool,
           json_: bool) -> int:
    """Print the counts (``--json``: as an object); 0, or 1 for a stdout it cannot write."""
    try:
        if json_:
            json.dump({"dry_run": dry_run, "cutoff": cutoff, **report.as_json()}, out)
            out.write("\n")
        else:
            print(f"{'would delete' if dry_run else 'deleted'}: {_counts(report)}", file=out)
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        say(err, f"tidings prune: cannot write the counts: {exc.strerror or exc}")
        return 1
    return 0


def _counts(report: PruneReport) -> str:
    """``deliveries N  work_items N  events N  client_messages N  owed_answers N``."""
    return "  ".join(f"{kind} {n}" for kind, n in report.as_json().items())
