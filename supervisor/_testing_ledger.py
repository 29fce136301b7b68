"""The fault ledger: every fault a plan (or an instrument) injected must show up somewhere.

It listens to the kernel's log (logger ``tidings.supervisor``, ``key=value`` lines) while
:meth:`FaultLedger.recording`. A ``fault_injected`` line opens an entry for its child; a
restart record of that child (``child_restarted`` / ``child_failed``, i.e. a restart, an
escalation, a forgotten temporary child or an error while stopping) whose error is an
``InjectedFault`` closes every entry open for it (two faults that land together make one
crash). A fault at the ``send`` seam raises in the *sender*: it is closed by the crash of
whichever child sent (its error names the target), by a line another ``tidings`` logger wrote
about it (a sender that handled it: the dispatcher falling back to the outbox, a turn writing
its end again), or by :meth:`surfaced` when the sender is the test's own code. What is left
open at the end was masked — by a ``Cancelled``, or by code that swallowed it silently.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from tidings.errors import InjectedFault

__all__ = ["FaultLedger", "LedgerEntry", "parse_log_line"]

_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
_INJECTED = re.compile(r"injected (fault|cancel)(?: at (\w+))? of ([^\s'\"()]+)")
_RECORDS = ("child_restarted", "child_failed")


def parse_log_line(line: str) -> dict[str, str]:
    """The fields of one kernel log line (``event=... key=value key="quoted value"``)."""
    fields = {}
    for key, value in _FIELD.findall(line):
        fields[key] = json.loads(value) if value.startswith('"') else value
    return fields


@attrs.define
class LedgerEntry:
    """One injected fault: where, how, and what accounted for it (``None``: nothing yet)."""

    child: str
    seam: str | None
    action: str
    accounted_by: str | None = None

    def __str__(self) -> str:
        where = f" at {self.seam}" if self.seam else ""
        return f"{self.action}{where} of {self.child}"


class FaultLedger(logging.Handler):
    """See the module docstring. ``entries`` lists every fault seen, in order; ``restarts``,
    ``escalations`` and ``crashes`` count the kernel's records while recording."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.entries: list[LedgerEntry] = []
        self.restarts = 0
        self.escalations = 0
        self.crashes = 0
        self._open: dict[str, list[LedgerEntry]] = {}
        self._sends: dict[str, list[LedgerEntry]] = {}

    @contextmanager
    def recording(self) -> Iterator[FaultLedger]:
        """Listen to the ``tidings`` loggers (at INFO) while inside.

        A ``tidings`` logger a host set above INFO (``tidings.supervisor`` at WARNING, to keep
        the kernel's lines out of its test logs) is lowered to INFO meanwhile, and set back on
        leaving: else its records die before they reach the ledger, which then sees no fault,
        and a masked one passes."""
        logger = logging.getLogger("tidings")
        quiet = [logger] if not logger.isEnabledFor(logging.INFO) else []
        quiet += [child for name, child in list(logging.root.manager.loggerDict.items())
                  if name.startswith("tidings.") and isinstance(child, logging.Logger)
                  and child.level > logging.INFO]
        levels = [(each, each.level) for each in quiet]
        for each in quiet:
            each.setLevel(logging.INFO)
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            for each, level in levels:
                each.setLevel(level)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name == "tidings.supervisor":
                self.note(record.getMessage())
            else:
                self.handled(record)
        except Exception:  # noqa: BLE001 - a log handler never raises into the logged code
            self.handleError(record)

    def handled(self, record: logging.LogRecord) -> None:
        """A line of another ``tidings`` logger: does it report a send fault it handled?"""
        error = record.exc_info[1] if record.exc_info else None
        texts = [str(fault) for fault in _faults_in(error)] or [record.getMessage()]
        for text in texts:
            match = _INJECTED.search(text)
            if match is not None and match.group(1) == "fault" and match.group(2) == "send":
                pending = self._sends.get(match.group(3))
                if pending:
                    pending.pop(0).accounted_by = (f"handled ({record.name}: "
                                                   f"{record.getMessage()})")

    def note(self, line: str) -> None:
        """Account for one kernel log line."""
        fields = parse_log_line(line)
        event = fields.get("event")
        if event == "fault_injected":
            self.injected(fields["child"], fields.get("seam"), fields.get("action", "raise"))
        elif event == "fault_missed":  # a cancel with no incarnation to land in: no fault
            pending = self._open.get(fields["child"])
            if pending:
                pending.pop().accounted_by = "missed: no incarnation was running"
        elif event == "fault_superseded":  # the child crashed otherwise while it was coming
            for entry in self._open.pop(fields["child"], []):
                entry.accounted_by = f"overtaken by {fields.get('error_type')}"
        elif event in _RECORDS:
            action = fields.get("action", "restart")
            if action == "restart":
                self.restarts += 1
            elif action == "escalate":
                self.escalations += 1
            if fields.get("error_type"):
                self.crashes += 1
            if fields.get("error_type") == "InjectedFault":
                self._account(fields["child"], fields.get("error", ""),
                              f"{event} {action} of {fields['child']}")

    def injected(self, child: str, seam: str | None, action: str) -> LedgerEntry:
        """Open an entry (the plan's log line does it; an instrument calls this itself)."""
        entry = LedgerEntry(child, seam, action)
        self.entries.append(entry)
        if seam == "send" and action == "raise":
            self._sends.setdefault(child, []).append(entry)
        else:
            self._open.setdefault(child, []).append(entry)
        return entry

    def surfaced(self, error: BaseException) -> None:
        """An InjectedFault was caught outside the kernel (by a send's caller): *error* itself,
        or each one inside it (a nursery's group, the cause of an error raised from it)."""
        for fault in _faults_in(error):
            self._account(fault.child or "", str(fault), f"surfaced as {type(fault).__name__}")

    def reported(self, text: str, by: str) -> None:
        """A send fault was reported in words (a turn's ``failed`` lifecycle event, say)."""
        self._account("", text, by)

    def _account(self, crashed: str, error: str, by: str) -> None:
        match = _INJECTED.search(error)
        if match is not None and match.group(1) == "fault" and match.group(2) == "send":
            pending = self._sends.get(match.group(3))
            if pending:
                pending.pop(0).accounted_by = by
                return
        for entry in self._open.pop(crashed, []):
            entry.accounted_by = by

    def unaccounted(self) -> list[str]:
        """Faults nothing accounted for (masked)."""
        return [f"injected {entry} was never reported" for entry in self.entries
                if entry.accounted_by is None]

    def statistics(self) -> dict[str, int]:
        """The ledger's counts: ``injected``, ``restarts``, ``escalations``, ``crashes`` and
        ``masked`` (faults nothing accounted for)."""
        return {"injected": len(self.entries), "restarts": self.restarts,
                "escalations": self.escalations, "crashes": self.crashes,
                "masked": len(self.unaccounted())}


def _faults_in(error: BaseException | None, depth: int = 0) -> list[InjectedFault]:
    """The InjectedFaults in *error*: itself, the leaves of a group, its cause or context."""
    if error is None or depth > 20:
        return []
    if isinstance(error, InjectedFault):
        return [error]
    found: list[InjectedFault] = []
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found += _faults_in(inner, depth + 1)
    return found or _faults_in(error.__cause__ or error.__context__, depth + 1)
