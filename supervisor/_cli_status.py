"""``tidings status``: what the outbox holds, read-only, with or without a running runtime.

``tidings status [--db PATH] [--session ID] [--status S] [--since T] [--limit N] [--json]``
prints the counts per effective status and the most recently updated deliveries;
``tidings status DELIVERY_ID`` prints one delivery with its event history. The database is
opened read-only: nothing is created or written, no process epoch is registered.

``--json`` output is stable for scripts: ``{"counts": {status: n, ...}, "recent": [{"delivery_id",
"session_id", "status", "attempts", "last_error", "updated_at"}, ...]}`` (every status is listed
in ``counts``, zeros included; ``updated_at`` is unix seconds; ``"sending_claimant"``: the process
the ``sending`` rows wait on, or ``null``), and for one delivery its lifecycle fields plus
``"events": [...]`` and ``"claimed_by"`` (the process its claim names, or ``null``). A process is
``{"epoch", "pid", "hostname", "started_at", "running"}``, ``running`` true or false as this
host can tell (:mod:`tidings.supervisor._claimant`), else ``null`` (another host). It is
strict JSON: a time that is no number (an infinite lease end an old database may hold) is
``null``.

The text views print what comes from agents, users and platforms (a reply, a route's error, a
chosen session id) through :func:`~tidings.supervisor._stderr.one_line`: a terminal acts on an
escape sequence (clears the screen, sets its title, writes the clipboard) instead of showing
it, and a path's undecodable byte reads ``\\udcff``, as on stderr.

Exit codes: 0 done; 1 no such delivery, or no such session (``--session``: zero counts would
read as an idle session); 2 bad usage, or no (readable) database.
"""

from __future__ import annotations

import argparse
import codecs
import datetime
import json
import math
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from tidings.errors import DatabaseNotFoundError, StoreError, ValidationError
from tidings.store import (
    MAX_INTEGER,
    OUTBOX_STATUSES,
    DeliveryReport,
    ProcessEpoch,
    StatusReport,
    delivery_report,
    read_database,
    session_exists,
    status_report,
)
from tidings.store._ids import check_id
from tidings.supervisor._age import parse_age
from tidings.supervisor._claimant import ELSEWHERE, GONE, REUSED, RUNNING, process_state
from tidings.supervisor._cli_paths import path_argument
from tidings.supervisor._stderr import one_line, say

__all__ = ["parse_since", "register", "run"]

DEFAULT_DB = "tidings.db"
DEFAULT_LIMIT = 20


def register(commands: Any) -> None:
    """Add ``status`` to the subparsers *commands*."""
    parser = commands.add_parser(
        "status", help="show delivery counts and recent deliveries, or one delivery",
        description="Show what the outbox holds (read-only; works with or without a running "
                    "runtime).")
    parser.add_argument("delivery_id", nargs="?", metavar="DELIVERY_ID", type=_id,
                        help="show this delivery and its events instead of the overview")
    parser.add_argument("--db", default=DEFAULT_DB, metavar="PATH", type=path_argument,
                        help=f"the database (default: ./{DEFAULT_DB})")
    parser.add_argument("--session", metavar="ID", type=_id, help="only this session")
    parser.add_argument("--status", choices=OUTBOX_STATUSES,
                        help="only recent rows with this effective status")
    parser.add_argument("--since", type=parse_since, metavar="T",
                        help="only rows updated since T: unix seconds, an ISO 8601 time "
                             "(local unless it has an offset) or an age like 90s, 15m, 2h, 1d")
    parser.add_argument("--limit", type=_limit, metavar="N",
                        help=f"how many recent rows to print (default: {DEFAULT_LIMIT})")
    parser.add_argument("--json", action="store_true", help="print stable JSON")
    parser.set_defaults(run=run, parser=parser)


def parse_since(text: str, *, now: Callable[[], float] = time.time) -> float:
    """``--since`` as unix seconds. Raises ``argparse.ArgumentTypeError`` naming the forms
    (also for a time that is not finite or out of range: ``nan``, ``1e400``, year 1)."""
    value = text.strip()
    try:
        since = _since(value, now)
        # The row times are shown as local times: the bound must be one too.
        datetime.datetime.fromtimestamp(since)
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(
            f"expected unix seconds, an ISO 8601 time or an age like 15m, "
            f"got {text!r}") from None
    return since


def _since(value: str, now: Callable[[], float]) -> float:
    """An age before *now*, else unix seconds, else an ISO 8601 time; ``ValueError`` if none."""
    try:
        return now() - parse_age(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return datetime.datetime.fromisoformat(value).timestamp()


def _id(text: str) -> str:
    """A delivery or session id: not empty, and valid UTF-8 on the command line (Python
    hands undecodable bytes over as lone surrogates, which no id stored can hold). Not
    length-capped: it is only looked up, and earlier versions stored longer session ids.
    The runtime's own rule, from the store (importing ``tidings.actors`` would load trio and
    the whole runtime, which a read of the database has no use for)."""
    try:
        return check_id("id", text, max_chars=None)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"not an id: {exc.reason}") from None


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_INTEGER:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to {MAX_INTEGER}, "
                                         f"got {text!r}")
    return value


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr  # None when closed (2>&-): say() loses the line, not to stdout
    if args.delivery_id is not None:
        extra = [flag for flag, value in (("--session", args.session), ("--status", args.status),
                                          ("--since", args.since), ("--limit", args.limit))
                 if value is not None]
        if extra:
            args.parser.error(f"DELIVERY_ID cannot be combined with {', '.join(extra)}")
    try:
        if args.delivery_id is not None:
            report = read_database(args.db, delivery_report, args.delivery_id)
        else:
            report = read_database(args.db, _overview, session_id=args.session,
                                   status=args.status, since=args.since,
                                   limit=DEFAULT_LIMIT if args.limit is None else args.limit)
    except DatabaseNotFoundError as exc:
        say(err, f"tidings status: {exc}; give the database with --db PATH")
        return 2
    except (StoreError, ValidationError) as exc:
        say(err, one_line(f"tidings status: {exc}"))  # a path in it: one line
        return 2
    if report is None:
        what = (f"delivery {args.delivery_id!r}" if args.delivery_id is not None
                else f"session {args.session!r}")
        say(err, one_line(f"tidings status: no {what} in {args.db}"))
        return 1
    try:
        if args.json:
            # \u escapes where stdout's encoding cannot hold every character: valid JSON
            json.dump(_json_safe(_as_json(report)), out, indent=2,
                      ensure_ascii=not _holds_any(out), allow_nan=False)
            out.write("\n")
        elif isinstance(report, DeliveryReport):
            _print_delivery(report, out)
        else:
            _print_overview(report, args, out)
        out.flush()  # a full disk shows at the flush: here, not past the command
    except BrokenPipeError:  # `| head`: the reader left on purpose; the caller says nothing
        raise
    except OSError as exc:  # `> /dev/full`: one line, not a traceback
        say(err, f"tidings status: cannot write the report: {exc.strerror or exc}")
        return 1
    return 0


def _overview(conn: Any, *, session_id: str | None, **filters: Any) -> StatusReport | None:
    """The overview, or None when *session_id* names no session (its zero counts read as an
    idle session: a mistyped id looked like one), in one read."""
    if session_id is not None and not session_exists(conn, session_id):
        return None
    return status_report(conn, session_id=session_id, **filters)


def _as_json(report: StatusReport | DeliveryReport) -> dict[str, Any]:
    """The report's JSON with the process its ``sending`` rows wait on (the overview) or its
    claim names (one delivery), and whether that runs: the state of this host now, not of
    the database, so not the store's."""
    if isinstance(report, DeliveryReport):
        return {**report.as_json(), "claimed_by": _process_json(report.claimed_by)}
    return {**report.as_json(), "sending_claimant": _process_json(report.sending_claimant)}


def _process_json(process: ProcessEpoch | None) -> dict[str, Any] | None:
    if process is None:
        return None
    return {"epoch": process.epoch, "pid": process.pid, "hostname": process.hostname,
            "started_at": process.started_at, "running": process_state(process).running}


def _json_safe(value: Any) -> Any:
    """*value* with each float that is no number (``inf``: a lease end stored by versions
    that took ``lease=inf``) as ``None``: ``json`` writes it ``Infinity``, which is not JSON,
    and the scripts ``--json`` is for refuse the whole report."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def _holds_any(out: TextIO) -> bool:
    """Whether *out*'s encoding holds every character (a UTF): else the commands print what
    it cannot escaped (see ``cli._escape_what_stdout_cannot_encode``), which in JSON must be
    its own ``\\u`` escapes."""
    try:
        return codecs.lookup(getattr(out, "encoding", None) or "utf-8").name.startswith("utf")
    except LookupError:
        return False


def _when(timestamp: float | None) -> str:
    """*timestamp* as a local ISO time; one no date can be made of (``inf``, ``1e300``: a
    database written before ``open_runtime`` checked ``lease`` and ``clock``) as it is."""
    if timestamp is None:
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(timestamp).astimezone()
    except (OverflowError, OSError, ValueError):
        return repr(timestamp)
    return moment.isoformat(timespec="seconds")


def _clip(text: str | None, width: int) -> str:
    if not text:
        return ""
    text = one_line(" ".join(text.split()))
    return text if len(text) <= width else text[:width - 1] + "…"


def _print_overview(report: StatusReport, args: argparse.Namespace, out: TextIO) -> None:
    scope = [f"database {pathlib.Path(args.db)}"]
    if args.session is not None:
        scope.append(f"session {args.session}")
    if args.since is not None:
        scope.append(f"updated since {_when(args.since)}")
    print(one_line(", ".join(scope)), file=out)  # the session asked for is an id as stored
    total = sum(report.counts.values())
    counts = "  ".join(f"{status} {n}" for status, n in report.counts.items())
    print(f"counts: {counts}  (total {total})", file=out)
    if report.sending_claimant is not None:  # after a crash: is it still running?
        who = report.sending_claimant
        print(one_line(f"sending: claimed by {_process(who)} (started {_when(who.started_at)})"
                     f"{_runs(who)}"), file=out)
    if report.held:  # a count of now: held messages have no update time for --since
        when = "held now (--since does not apply)" if args.since is not None else "held"
        print(f"{when}: {report.held} accepted message(s) not yet answered (those of a stopped "
              f"server are told \"not answered\" at its next start)", file=out)
    if report.owed_answers:  # a count of now, of no session (see StatusReport)
        when = "owed now (--since does not apply)" if args.since is not None else "owed"
        print(f"{when}: {report.owed_answers} command answer(s) not yet given (each goes to the "
              f"retry of its message id; a prune gives it up a day past the retention)",
              file=out)
    if args.limit == 0:  # the counts alone were asked for: "none to show" would be false
        return
    which = f" {args.status}" if args.status else ""
    if not report.recent:
        print(f"no{which} deliveries to show", file=out)
        return
    print(f"\nmost recent{which} deliveries, newest first:", file=out)
    rows = [("UPDATED", "STATUS", "ATTEMPTS", "DELIVERY", "SESSION", "LAST ERROR")]
    rows += [(_when(row.updated_at), row.status, str(row.attempts), one_line(row.delivery_id),
              one_line(row.session_id), _clip(row.last_error, 60)) for row in report.recent]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.rjust(w) if i == 2 else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=False))]
        print("  ".join([*cells, row[5]]).rstrip(), file=out)


def _process(process: ProcessEpoch) -> str:
    return f"pid {process.pid} on {process.hostname}"


_NEXT_START = "they become unknown at the next start"


def _runs(process: ProcessEpoch) -> str:
    """Whether the process the ``sending`` rows wait on still runs, as this host can tell
    (after a crash they read ``sending`` until the next start), for the overview."""
    state = process_state(process)
    if state.kind == RUNNING:
        return ", which is running"
    if state.kind == GONE:
        return f", which no longer runs: {_NEXT_START}"
    if state.kind == REUSED:
        return (f", which no longer runs (pid {process.pid} is a process started "
                f"{_when(state.started)}): {_NEXT_START}")
    if state.kind == ELSEWHERE:
        return (", on another host: whether it runs cannot be told from here; if it no "
                f"longer does, {_NEXT_START}")
    return f", which cannot be told running or not; if it no longer runs, {_NEXT_START}"


def _claimant(claimant: str | None, process: ProcessEpoch | None, status: str) -> str:
    """The claim, with the process it names (pid, host, start) and whether it runs, as this
    host can tell: after a crash its ``sending`` rows read ``sending`` until the next start."""
    if process is None:
        return claimant or "-"
    text = f"{claimant}: {_process(process)}, started {_when(process.started_at)}"
    state = process_state(process)
    gone = ": unknown at the next start" if status == "sending" else ""
    if state.kind == RUNNING:
        return f"{text}, running"
    if state.kind == GONE:
        return f"{text}, no longer running{gone}"
    if state.kind == REUSED:
        return (f"{text}, no longer running (pid {process.pid} is a process started "
                f"{_when(state.started)}){gone}")
    if state.kind == ELSEWHERE:
        return f"{text}, on another host: cannot tell whether it runs"
    return f"{text}, cannot tell whether it runs"


def _print_delivery(report: DeliveryReport, out: TextIO) -> None:
    d = report.delivery
    status = d.status
    if d.status != d.outbox_status:
        status += f" (outbox row: {d.outbox_status}, its claimant is not the latest process)"
    lines = [
        ("delivery", d.delivery_id),
        ("session", f"{d.session_id} (seq {d.seq})"),
        ("kind", f"{d.kind}, channel {d.channel or '-'}, "
                 f"{'visible' if d.visible else 'invisible'}"),
        ("status", status),
        ("work item", f"{d.work_id or '-'} ({d.work_status or '-'})"),
        ("claimant", _claimant(d.claimant, report.claimed_by, d.status)),
        ("attempts", str(d.attempts)),
        ("last error", d.last_error or "-"),
        ("lease until", _when(d.lease_expires_at)),
        ("created", _when(d.created_at)),
        ("updated", _when(d.updated_at)),
        ("turn", d.owner_turn_id or "-"),
        ("text", _clip(d.text, 200)),
    ]
    for label, value in lines:
        print(f"{label:<12} {one_line(value)}", file=out)
    print(f"\nevents ({len(report.events)}):", file=out)
    width = max((len(event.type) for event in report.events), default=0)
    for event in report.events:
        data = json.dumps(event.as_dict()["data"], ensure_ascii=False, sort_keys=True)
        print(one_line(f"  {event.seq:>8}  {_when(event.created_at)}  {event.type:<{width}}  "
                     f"{data}"), file=out)  # (JSON escapes C0 controls, not DEL or C1)
