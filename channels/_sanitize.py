"""Neutralize text that comes from configuration or from a child process before it is shown.

A configured display name, a memory namespace or a command's stderr may end up inside a prompt
or a chat message. Control characters (newlines included, for one-line fields), Unicode line
separators, bidi embeddings / overrides / isolates, other invisible format characters and
private-use / unassigned code points are removed so such text cannot forge prompt structure or
reorder what a reader sees; length is capped with an ellipsis.
"""

from __future__ import annotations

import re
import unicodedata

from tidings.errors import ValidationError

__all__ = ["ELLIPSIS", "sanitize_line", "sanitize_text"]

ELLIPSIS = "\u2026"

# Whitespace-like controls and separators become a space in one-line fields (so "a\nb" reads
# "a b", not "ab"); every other control / format character is dropped.
_BREAKS = frozenset("\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029")
_KEEP_FORMAT = frozenset("\u200d")  # zero width joiner: holds emoji sequences together
_DROPPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_SPACES = re.compile(r" {2,}")
_NEWLINES = re.compile("\r\n|[\r\x85\u2028\u2029]")


def _dropped(char: str) -> bool:
    if char in _KEEP_FORMAT:
        return False
    # Cc: C0/C1 controls and DEL; Cf: format (bidi marks, embeddings, overrides, isolates, zero
    # width space, BOM, tag characters); Zl/Zp: line and paragraph separators; Cs: lone
    # surrogates; Co / Cn: private use and unassigned code points (no meaning anyone can rely
    # on, and a later Unicode version may give unassigned ones one).
    return unicodedata.category(char) in _DROPPED


def _cap(text: str, limit: int, *, keep_end: bool = False) -> str:
    if limit < 1:
        raise ValidationError("limit", "must be at least 1")
    if len(text) <= limit:
        return text
    if keep_end:
        return ELLIPSIS + text[len(text) - limit + 1:]
    return text[: limit - 1] + ELLIPSIS


def sanitize_line(value: str, *, limit: int = 200) -> str:
    """``value`` as one safe line of at most ``limit`` characters.

    Line breaks, tabs and other spaces (no-break, ideographic, ...) become single ASCII
    spaces; other control, format, private-use and unassigned characters are removed; runs of
    spaces collapse, the ends are stripped, and a longer result is cut with an ellipsis
    (which counts towards ``limit``). Never raises for any ``str``.
    """
    out: list[str] = []
    for char in value:
        if char in _BREAKS or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif not _dropped(char):
            out.append(char)
    return _cap(_SPACES.sub(" ", "".join(out)).strip(), limit)


def sanitize_text(value: str, *, limit: int = 1000, keep_end: bool = False) -> str:
    """``value`` with its line structure kept but nothing else invisible or reordering.

    ``\\n`` survives (``\\r\\n``, lone ``\\r`` and Unicode line / paragraph separators become
    ``\\n``, tabs become spaces); every other control or format character is removed and the
    ends are stripped. A longer result is capped to ``limit`` characters with an ellipsis; with
    ``keep_end`` the end is kept (a stderr *tail*) instead of the start.
    """
    value = _NEWLINES.sub("\n", value).replace("\t", " ")
    kept = "".join(char for char in value if char == "\n" or not _dropped(char))
    return _cap(kept.strip(), limit, keep_end=keep_end)
