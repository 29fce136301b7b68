"""Logging for the long-lived process: one line per event, ``key=value`` or JSON lines.

tidings loggers write messages as ``event=<name> key=value ...`` (values with spaces are
JSON-quoted). :class:`KeyValueFormatter` prefixes the time, level and logger in the same
form; :class:`JsonLinesFormatter` turns the fields into one JSON object per line (a message
that is not ``key=value`` shaped is kept whole as ``message``), strict JSON whatever the text.
"""

from __future__ import annotations

import codecs
import contextlib
import datetime
import json
import logging
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from tidings.store._ids import escape_lone_surrogates

__all__ = ["LEVELS", "JsonLinesFormatter", "KeyValueFormatter", "configure_logging",
           "holding_records", "logging_configured", "parse_fields", "replay"]

LEVELS = ("debug", "info", "warning", "error")

_FIELD = re.compile(r'\s*([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_fields(message: str) -> dict[str, Any] | None:
    """``event=x a=1 b="two words"`` as a dict (quoted values decoded); None if *message* is
    not entirely ``key=value`` pairs."""
    fields: dict[str, Any] = {}
    position = 0
    while position < len(message):
        match = _FIELD.match(message, position)
        if match is None or match.end() == position:
            return None if message[position:].strip() else fields
        key, value = match.groups()
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        fields[key] = value
        position = match.end()
    return fields or None


def _when(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class KeyValueFormatter(logging.Formatter):
    """``ts=... level=info logger=tidings.gateway event=... k=v`` (a plain message becomes
    ``message="..."``); a traceback follows on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        body = message if parse_fields(message) is not None else \
            "message=" + json.dumps(message, ensure_ascii=False)
        line = f"ts={_when(record)} level={record.levelname.lower()} logger={record.name} {body}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, then the message's fields.
    *ascii_only*: every character past ASCII escaped (``\\u00e9``), for a stream that is not
    UTF-8 (see :func:`configure_logging`)."""

    def __init__(self, *, ascii_only: bool = False) -> None:
        super().__init__()
        self.ascii_only = ascii_only

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        entry: dict[str, Any] = {"ts": _when(record), "level": record.levelname.lower(),
                                 "logger": record.name}
        fields = parse_fields(message)
        if fields is None:
            entry["message"] = message
        else:
            entry.update({k: v for k, v in fields.items() if k not in entry})
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps({_unicode(k): _unicode(v) for k, v in entry.items()},
                          ensure_ascii=self.ascii_only, default=str)


def _unicode(value: Any) -> Any:
    """*value* with its lone surrogates (bytes a path did not decode, ``os.fsdecode``) as the
    text ``\\udcff``, as the ``key=value`` form shows them: JSON escaped them as ``"\\udcff"``,
    which strict readers (serde_json, I-JSON) refuse, losing the whole line."""
    return escape_lone_surrogates(value) if isinstance(value, str) else value


def _utf8(stream: Any) -> bool:
    """Whether *stream* writes UTF-8 (or is a text buffer, with no encoding). On any other
    (``PYTHONIOENCODING=ascii``, a legacy locale) a JSON line holding text past ASCII was no
    JSON: backslash-replaced (``\\xe9``, an escape JSON does not have) or written in bytes
    no JSON reader decodes."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def configure_logging(level: str = "info", *, json_lines: bool = False,
                      stream: TextIO | None = None) -> logging.Handler:
    """Send tidings' (and trio-websocket's warnings) logs to *stream* (stderr) in the chosen
    form; returns the handler (remove it, and ``logging.captureWarnings(False)``, to undo).
    Python's warnings (a library's, as an agent imports it) are logged too, on
    ``py.warnings`` (``logging.captureWarnings``): printed as they were, as lines of plain
    text, they broke the one-JSON-object-per-line of ``--log-json`` that a log shipper
    reads. Everything else (those warnings, a library's logs) is shown from ``warning`` up,
    or from *level* when it is higher: ``error`` means errors only, whoever logs them."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLinesFormatter(ascii_only=not _utf8(handler.stream))
                         if json_lines else KeyValueFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    logging.captureWarnings(True)
    root.setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    logging.getLogger("tidings").setLevel(level.upper())
    return handler


@contextlib.contextmanager
def logging_configured(level: str = "info", *, json_lines: bool = False,
                       stream: TextIO | None = None) -> Iterator[logging.Handler]:
    """:func:`configure_logging` for the block only: what it changed (its handler, the two
    levels, Python's warnings captured, unless the host captured them already) is put back
    after. For a command that logs a line or two and ends (a configuration refused), so that
    a host running it in its own process (a test calling ``main()``) keeps its logging as it
    was."""
    root, tidings = logging.getLogger(), logging.getLogger("tidings")
    levels, shown = (root.level, tidings.level), warnings.showwarning
    handler = configure_logging(level, json_lines=json_lines, stream=stream)
    # captureWarnings has no getter: it swaps warnings.showwarning only when capture was off,
    # so an unchanged one means the host captured them already, and keeps them captured.
    captured_here = warnings.showwarning is not shown
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        if captured_here:
            logging.captureWarnings(False)
        root.setLevel(levels[0])
        tidings.setLevel(levels[1])


class _Holder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def holding_records() -> Iterator[list[logging.LogRecord]]:
    """Hold what is logged inside (the records reaching the root logger) instead of letting
    Python print it: what is logged before :func:`configure_logging` (a warning of the config
    file, read to learn the log's form) was printed by logging's last resort as plain text,
    ahead of the JSON lines of ``--log-json``. :func:`replay` them once logging is set up."""
    holder = _Holder()
    root = logging.getLogger()
    root.addHandler(holder)
    try:
        yield holder.records
    finally:
        root.removeHandler(holder)


def replay(records: list[logging.LogRecord]) -> None:
    """Log *records* (held by :func:`holding_records`) again, as their loggers now do (to
    the last resort when logging was not set up, as before)."""
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
