"""A configuration value as its TOML file spells it, for the errors that refuse it.

``tidings serve`` and ``tidings chat --local`` read TOML, and said a refused value as Python's
repr: ``got True`` where the file says ``true``, ``got datetime.date(1979, 5, 27)`` for
``1979-05-27``, ``{'a': 1}`` for ``{ a = 1 }``. The user reads their file, not Python, so the
value is spelled as TOML writes it: ``true`` / ``false``, a string as a literal string
(``'state/'``) or, when it holds a ``'`` or a character that is not printable, as a basic
string with TOML's escapes (``"a\\nb"``), arrays, inline tables, dates and times.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

__all__ = ["spelled"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def spelled(value: Any, limit: int | None = None) -> str:
    """*value* as TOML spells it (up to *limit* characters: a value as long as a file is
    not said whole). A value TOML has no spelling for (a flag's ``None``, an object a host
    passed) is its repr."""
    text = _spelled(value)
    return text if limit is None else text[:limit]


def _spelled(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value)  # inf, -inf, 1e+300 and 0.5 are TOML's spellings too
    if isinstance(value, datetime.date | datetime.time):  # (datetime is a date)
        return value.isoformat()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_spelled(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = (f"{_key(key)} = {_spelled(item)}" for key, item in value.items())
        return "{ " + ", ".join(items) + " }"
    return repr(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) and _BARE_KEY.fullmatch(key) else _spelled(key)


def _string(text: str) -> str:
    if "'" not in text and text.isprintable():
        return f"'{text}'"
    return '"' + "".join(_escaped(ch) for ch in text) + '"'


def _escaped(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
