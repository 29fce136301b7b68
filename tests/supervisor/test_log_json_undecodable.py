"""``--log-json`` with text that is no valid Unicode: a path given on the command line that
holds bytes the locale does not decode (``os.fsdecode``: lone surrogates). The line carried a
``"\\udcff"`` escape, a lone surrogate that strict JSON readers (serde_json, I-JSON) refuse:
the whole line was lost to them. Every line is now strict JSON (valid UTF-8, no lone
surrogate), the undecodable byte shown as the ``key=value`` form shows it: ``\\udcff``."""

from __future__ import annotations

import io
import json
import logging
import os
import sys

import pytest

from tidings.supervisor._log import field
from tidings.supervisor._logging import JsonLinesFormatter, KeyValueFormatter, configure_logging

PATH = os.fsdecode(b"/srv/caf\xc3\xa9 \xff.db") if sys.getfilesystemencoding() == "utf-8" \
    else "/srv/caf\u00e9 \udcff.db"


def _strict(value: object) -> None:
    """*value* (a parsed JSON line) holds only strings a strict reader takes."""
    if isinstance(value, str):
        value.encode("utf-8", errors="strict")
    elif isinstance(value, dict):
        for key, item in value.items():
            _strict(key)
            _strict(item)


def _record(message: str, *args: object, exc_info: object = None) -> logging.LogRecord:
    return logging.LogRecord("tidings.serve", logging.INFO, __file__, 1, message, args,
                             exc_info)  # type: ignore[arg-type]


def _failure() -> object:
    try:
        raise OSError(2, "No such file", PATH)
    except OSError:
        return sys.exc_info()


@pytest.mark.parametrize("ascii_only", [False, True])
def test_every_json_line_is_strict_json(ascii_only: bool) -> None:
    formatter = JsonLinesFormatter(ascii_only=ascii_only)
    for record in (_record("event=serving db=%s", field(PATH)),
                   _record("plain words about %s", PATH),
                   _record("event=crashed", exc_info=_failure())):
        line = formatter.format(record)
        line.encode("utf-8", errors="strict")
        entry = json.loads(line)
        _strict(entry)
    assert "\\udcff" in entry["traceback"]


def test_the_byte_is_shown_as_the_key_value_form_shows_it() -> None:
    entry = json.loads(JsonLinesFormatter().format(_record("event=serving db=%s", field(PATH))))
    text = KeyValueFormatter().format(_record("event=serving db=%s", field(PATH)))
    assert entry["db"] == "/srv/caf\u00e9 \\udcff.db"  # the rest kept as it is
    assert '\\udcff.db"' in text


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_the_bytes_written_decode_strictly(encoding: str) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace",
                              write_through=True)  # as the CLI's stderr
    handler = configure_logging("info", json_lines=True, stream=stream)
    try:
        logging.getLogger("tidings.test").info("event=opened db=%s", field(PATH))
    finally:
        logging.getLogger().removeHandler(handler)
        logging.captureWarnings(False)
    entry = json.loads(raw.getvalue().decode("utf-8", errors="strict"))
    _strict(entry)
    assert entry["db"] == "/srv/caf\u00e9 \\udcff.db"
