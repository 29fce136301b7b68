"""The operator's status view as runtime methods (the store functions, on the live store)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

from tidings.errors import DeliveryNotFoundError, ValidationError
from tidings.store import (
    MAX_INTEGER,
    DeliveryReport,
    DeliveryStatus,
    RuntimeEvent,
    StatusReport,
    Store,
    delivery_report,
    recent_deliveries,
    status_counts,
    status_report,
)
from tidings.store._ids import MAX_ID_CHARS, check_id
from tidings.store._status import shown
from tidings.supervisor._seconds import past_float_as_inf

__all__ = ["MAX_IDS_PER_CALL", "MAX_ID_CHARS", "StatusViews", "check_count", "check_id",
           "check_id_list", "check_seconds", "check_seq", "check_session_id", "finite",
           "seconds_bound"]

MAX_IDS_PER_CALL = 10_000
"""The most distinct held messages a send, notice or turn may release (``settles=``,
``open_turn(inbound_ids=...)``): they are released in that write's one commit, which holds the
store's only writer (every session's sends) while it runs: 10,000 take some 20 ms, a million
took seconds. ``release_inbound`` takes any number, released this many per commit."""


def check_session_id(field: str, value: object) -> str:
    """*value* as the id of a session that must exist already (:func:`check_id`, with no
    length cap): :data:`MAX_ID_CHARS` caps ids as they are made (a chosen ``session_id``), but
    earlier versions stored sessions with longer ids, which must stay reachable. A lookup of
    a long id that no session has finds nothing (:class:`SessionNotFoundError`, or an empty
    view); nothing is written under an id no session has."""
    return check_id(field, value, max_chars=None)


def check_id_list(field: str, values: Iterable[str], what: str = "ids", *,
                  max_ids: int | None = None,
                  max_chars: int | None = MAX_ID_CHARS) -> list[str]:
    """*values* as a list of ids (*what* they are, for the message), repeats dropped, or an
    error naming *field*: a lone string (it would be read as its characters), an id
    :func:`check_id` refuses (over *max_chars*: None for ids that are only looked up, which
    earlier versions stored at any length), or more than *max_ids* distinct ids (None: no
    cap; the callers that write them in one commit give :data:`MAX_IDS_PER_CALL`) is a
    :class:`ValidationError`, something not iterable a ``TypeError``. Checked before anything
    is written."""
    if isinstance(values, str | bytes):
        raise ValidationError(field, f"must be a list of {what}, not the string {values!r:.80}")
    try:
        given = list(values)
    except TypeError:
        raise TypeError(f"{field} must be a list of {what}, got "
                        f"{type(values).__name__}") from None
    ids = list(dict.fromkeys(check_id(field, value, max_chars=max_chars) for value in given))
    if max_ids is not None and len(ids) > max_ids:
        raise ValidationError(field, f"lists {len(ids)} distinct {what}, over the limit of "
                                     f"{max_ids} (MAX_IDS_PER_CALL) in one call")
    return ids


def check_seq(field: str, value: object) -> int:
    """*value* as a ``seq`` (or a count) SQLite can bind: an int from 0 to
    :data:`~tidings.store.MAX_INTEGER`, or :class:`ValidationError` naming *field*."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(field, f"must be an int >= 0, got {shown(value)}")
    if value > MAX_INTEGER:  # (its repr may be too long to build)
        raise ValidationError(field, f"must be at most {MAX_INTEGER}")
    return value


def check_count(field: str, value: object, *, least: int = 0) -> None:
    """Refuse *value* by *field* unless it is an int >= *least* (a bool is no count): how many
    of something an option asks for (sessions, messages, deliveries to wait for)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValidationError(field, f"must be an int >= {least}, got {value!r:.80}")


def check_seconds(field: str, value: object, *, positive: bool = False) -> None:
    """Refuse *value* by *field* unless it is a number of seconds >= 0 (> 0 if *positive*);
    NaN is refused too (no comparison holds for it)."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0
            or (positive and value == 0)):
        bound = "> 0" if positive else ">= 0"
        raise ValidationError(field, f"must be seconds {bound}, got {shown(value)}")


def finite(value: float) -> bool:
    """Whether the number *value* is finite: an integer past a float's range (TOML and JSON
    carry any) is not, as ``inf`` is not (``math.isfinite`` raises ``OverflowError`` on it)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def seconds_bound(value: float) -> float:
    """A number of seconds :func:`check_seconds` took, as a float: an integer past a float's
    range is no bound, as ``inf`` is (``float()`` of it, or a deadline from it, raised an
    ``OverflowError`` naming nothing): the kernel's rule for its own fields."""
    return float(past_float_as_inf(value))  # type: ignore[arg-type]


def _session_filter(session_id: object) -> str | None:
    """A ``session_id`` filter: None (every session) or an id (:func:`check_id`): a filter
    that is no id would match nothing, silently, or fail in SQLite naming nothing."""
    return None if session_id is None else check_session_id("session_id", session_id)


class StatusViews:
    """Mixed into :class:`~tidings.actors.Runtime`: read-only views over the lifecycle view.

    Statuses are effective statuses (``OUTBOX_STATUSES``); ``since`` is unix seconds compared
    with ``updated_at``. Bad filters raise :class:`~tidings.errors.ValidationError` naming them.
    """

    store: Store

    async def status_counts(self, *, session_id: str | None = None,
                            since: float | None = None) -> dict[str, int]:
        """Effective status -> number of deliveries, every status listed (zeros included)."""
        return await self.store.read(functools.partial(
            status_counts, session_id=_session_filter(session_id), since=since))

    async def recent_deliveries(self, *, session_id: str | None = None,
                                status: str | None = None, since: float | None = None,
                                limit: int | None = 20) -> list[DeliveryStatus]:
        """The most recently updated deliveries matching the filters, newest first."""
        return await self.store.read(functools.partial(
            recent_deliveries, session_id=_session_filter(session_id), status=status,
            since=since, limit=limit))

    async def status_report(self, *, session_id: str | None = None, status: str | None = None,
                            since: float | None = None, limit: int | None = 20) -> StatusReport:
        """Counts and recent rows in one snapshot (what ``tidings status`` prints)."""
        return await self.store.read(functools.partial(
            status_report, session_id=_session_filter(session_id), status=status, since=since,
            limit=limit))

    async def delivery_report(self, delivery_id: str) -> DeliveryReport:
        """One delivery and its events. Raises :class:`DeliveryNotFoundError`."""
        report = await self.store.read(delivery_report, check_id("delivery_id", delivery_id))
        if report is None:
            raise DeliveryNotFoundError(f"no delivery {delivery_id!r}")
        return report

    async def delivery_events(self, delivery_id: str) -> list[RuntimeEvent]:
        """Every event one delivery recorded, oldest first. Raises
        :class:`DeliveryNotFoundError` for an unknown id."""
        return list((await self.delivery_report(delivery_id)).events)
