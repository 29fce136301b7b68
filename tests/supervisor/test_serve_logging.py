"""Logs: one line per event, key=value or JSON lines."""

from __future__ import annotations

import io
import json
import logging

import pytest

from tidings.supervisor._logging import JsonLinesFormatter, KeyValueFormatter, parse_fields


def _record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("tidings.gateway", logging.INFO, __file__, 1, message, args, None)


def test_key_value_messages_parse_into_fields() -> None:
    assert parse_fields('event=x a=1 b="two words" c=') == {"event": "x", "a": "1",
                                                             "b": "two words", "c": ""}
    assert parse_fields("just prose") is None


def test_key_value_lines_lead_with_time_level_and_logger() -> None:
    line = KeyValueFormatter().format(_record("event=serving url=%s", "ws://h:1"))
    assert line.startswith("ts=")
    assert " level=info logger=tidings.gateway event=serving url=ws://h:1" in line
    prose = KeyValueFormatter().format(_record("plain words"))
    assert prose.endswith('message="plain words"')


def test_json_lines_carry_the_fields() -> None:
    entry = json.loads(JsonLinesFormatter().format(_record('event=stopped db="/a b"')))
    assert entry["event"] == "stopped"
    assert entry["db"] == "/a b"
    assert (entry["level"], entry["logger"]) == ("info", "tidings.gateway")
    assert json.loads(JsonLinesFormatter().format(_record("prose")))["message"] == "prose"


def test_configure_logging_writes_to_the_stream() -> None:
    from tidings.supervisor._logging import configure_logging
    stream = io.StringIO()
    handler = configure_logging("info", json_lines=True, stream=stream)
    try:
        logging.getLogger("tidings.test").info("event=hello n=%d", 3)
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)  # configure_logging's, as removing the handler
    assert json.loads(stream.getvalue())["n"] == "3"


def test_a_value_that_does_not_print_is_escaped_and_reads_back_whole() -> None:
    # A chat id or a platform's error with a terminal escape (ESC, DEL, a C1 control such as
    # the 8-bit CSI) went to the operator's terminal raw: only spaces, quotes and '=' were
    # quoted, and JSON escapes nothing from U+007F up.
    from tidings.supervisor._log import field

    for value in ("a\x1b[2Jb", "del\x7f", "csi\x9b31m", "caf\u00e9\x1b", "tab\there"):
        quoted = field(value)
        assert quoted.isprintable(), quoted
        assert quoted.isascii(), quoted
        assert parse_fields(f"event=x v={quoted}") == {"event": "x", "v": value}
    assert field("caf\u00e9") == "caf\u00e9"  # printable: as it was
    assert field("two words") == '"two words"'


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_lines_stay_json_on_a_stderr_that_is_not_utf8(encoding: str) -> None:
    # PYTHONIOENCODING=ascii, or a legacy locale: stderr backslash-replaced what it could not
    # encode ('\xe9' in the middle of a JSON string, an escape JSON does not have) or wrote
    # latin-1 bytes no JSON reader decodes: the line was no JSON at all.
    from tidings.supervisor._log import field
    from tidings.supervisor._logging import configure_logging

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace",
                              write_through=True)
    handler = configure_logging("info", json_lines=True, stream=stream)
    try:
        logging.getLogger("tidings.test").info("event=opened db=%s", field("/srv/café 日本.db"))
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)
    assert json.loads(raw.getvalue().decode("utf-8"))["db"] == "/srv/café 日本.db"


def test_json_lines_on_a_utf8_stderr_keep_text_as_it_is() -> None:
    from tidings.supervisor._log import field
    from tidings.supervisor._logging import configure_logging

    stream = io.StringIO()
    handler = configure_logging("info", json_lines=True, stream=stream)
    try:
        logging.getLogger("tidings.test").info("event=opened db=%s", field("/srv/café.db"))
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)
    assert '"db": "/srv/café.db"' in stream.getvalue()


@pytest.mark.parametrize("level", ["error", "warning"])
def test_the_level_applies_to_python_warnings_and_libraries_too(level: str) -> None:
    # `--log-level error` still printed every Python warning (py.warnings) and a library's
    # warnings: the root logger stayed at WARNING whatever the level asked for.
    import warnings

    from tidings.supervisor._logging import configure_logging
    stream = io.StringIO()
    handler = configure_logging(level, stream=stream)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)
        logging.getLogger("trio-websocket").warning("event=library_warning")
        logging.getLogger("trio-websocket").error("event=library_error")
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)
        logging.getLogger().setLevel(logging.WARNING)
    text = stream.getvalue()
    assert "library_error" in text
    assert ("a library's deprecation" in text) == (level == "warning")
    assert ("library_warning" in text) == (level == "warning")


@pytest.mark.parametrize("json_lines", [True, False], ids=["json", "key-value"])
def test_a_traceback_is_a_field_of_the_json_line_and_follows_a_key_value_line(
        json_lines: bool) -> None:
    """README: with ``--log-json`` a traceback is the ``traceback`` field of the event's one
    JSON object (a shipper reads one object per line); a ``key=value`` line has it after."""
    from tidings.supervisor._logging import configure_logging

    stream = io.StringIO()
    handler = configure_logging("info", json_lines=json_lines, stream=stream)
    try:
        try:
            {}["missing"]
        except KeyError:
            logging.getLogger("tidings.test").exception("event=failed what=%s", "lookup")
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)
    lines = stream.getvalue().splitlines()
    if json_lines:
        [line] = lines
        entry = json.loads(line)
        assert (entry["event"], entry["what"], entry["level"]) == ("failed", "lookup", "error")
        assert entry["traceback"].startswith("Traceback (most recent call last):")
        assert entry["traceback"].endswith("KeyError: 'missing'")
    else:
        assert lines[0].endswith(" level=error logger=tidings.test event=failed what=lookup")
        assert lines[1] == "Traceback (most recent call last):"
        assert lines[-1] == "KeyError: 'missing'"


def test_logging_configured_for_a_block_puts_the_logging_back() -> None:
    """A refused configuration is said through the log, then the command ends: a process
    that runs it (a test calling ``main()``) keeps its handlers and levels as they were."""
    from tidings.supervisor._logging import logging_configured

    root, tidings_logger = logging.getLogger(), logging.getLogger("tidings")
    before = (list(root.handlers), root.level, tidings_logger.level)
    stream = io.StringIO()
    with logging_configured("error", json_lines=True, stream=stream):
        logging.getLogger("tidings.test").warning("event=hidden")
        logging.getLogger("tidings.test").error("event=said")
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["said"]
    assert (list(root.handlers), root.level, tidings_logger.level) == before


@pytest.mark.parametrize("captured", [True, False])
def test_logging_configured_leaves_warnings_captured_as_the_host_had_them(captured: bool) -> None:
    """A host that logs Python's warnings (``logging.captureWarnings(True)``) still does after
    the block, and one that did not still does not: the block put capture off either way."""
    import warnings

    from tidings.supervisor._logging import logging_configured

    class Holder(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    holder, py_warnings = Holder(), logging.getLogger("py.warnings")
    logging.captureWarnings(captured)
    shown = warnings.showwarning
    py_warnings.addHandler(holder)
    try:
        with logging_configured("error", stream=io.StringIO()):
            pass
        assert warnings.showwarning is shown
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            if captured:
                warnings.warn("still logged", UserWarning, stacklevel=1)
        assert any("still logged" in message for message in holder.messages) == captured
    finally:
        py_warnings.removeHandler(holder)
        logging.captureWarnings(False)
