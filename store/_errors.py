"""The one exception taxonomy of tidings, published as ``tidings.errors``.

It lives under ``store/`` because the store is the bottom layer and may import nothing else of
tidings; every other package imports it as ``tidings.errors``. The hierarchy is deliberately flat
(httpcore style): callers catch a few meaningful classes, never library internals. Errors that
stand for bad input also subclass the builtin a caller would expect (``ValueError``, ``TypeError``,
``LookupError``, ``RuntimeError``) and carry the offending ``field``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "AccessDeniedError",
    "AgentError",
    "ArtifactError",
    "ChildNotFoundError",
    "ChildStartError",
    "ConfigError",
    "ConflictError",
    "ConversationKeyError",
    "DatabaseInUseError",
    "DatabaseNotFoundError",
    "DeliveryNotFoundError",
    "EventsPrunedError",
    "GatewayClosed",
    "GatewayTimeout",
    "HistoryPolicyError",
    "InjectedFault",
    "InvariantViolation",
    "MailboxClosedError",
    "NotABoolError",
    "NotFoundError",
    "ProtocolError",
    "RestartIntensityExceeded",
    "RouteMismatchError",
    "RuntimeClosedError",
    "SchemaVersionError",
    "SessionClosedError",
    "SessionNotFoundError",
    "StoreClosedError",
    "StoreError",
    "SupervisorError",
    "TidingsError",
    "ValidationError",
]


class TidingsError(Exception):
    """Base class of every error tidings raises on purpose."""


# --- bad input -------------------------------------------------------------------------------


class ValidationError(TidingsError, ValueError):
    """An argument or configuration value is invalid; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class NotABoolError(ValidationError, TypeError):
    """A flag of the public API got something other than a real bool. It is a ``TypeError``
    (a wrong type) and, like every refused argument, a :class:`ValidationError` naming the
    flag in ``field``, so callers catching either keep working."""


class ConfigError(ValidationError):
    """A configuration file or option is invalid; ``field`` is the dotted key."""


class EventsPrunedError(ValidationError):
    """A feed of runtime events was asked for events a prune has deleted: its ``after_seq``
    is below ``first_kept - 1`` (its next event is below the event horizon), and reading on
    would skip them in silence. ``field`` is ``after_seq``; ``after_seq`` is the cursor,
    ``first_kept`` the horizon (the events below it left are those of deliveries still kept,
    which no feed reads: ``rt.delivery_events`` does): follow again from ``first_kept - 1``
    to accept the gap (and read current state from the status views), or from ``None`` (from
    now on)."""

    def __init__(self, after_seq: int, first_kept: int) -> None:
        super().__init__("after_seq", f"events up to seq {first_kept - 1} were pruned "
                                      f"(retention); {after_seq} is below them. Follow again "
                                      f"from after_seq={first_kept - 1} to accept the gap")
        self.after_seq = after_seq
        self.first_kept = first_kept


class ConversationKeyError(ValidationError):
    """A conversation key part is malformed (empty id, bad channel or scope name)."""


class ArtifactError(ValidationError):
    """An artifact source is not allowed: it escapes its roots or is not http(s)."""


class HistoryPolicyError(TidingsError, RuntimeError):
    """A slot that may not write history asked to (parallel or background paths)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class ProtocolError(TidingsError):
    """A peer broke the wire protocol; ``code`` is the stable error code sent back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.reason = message


# --- lookups ---------------------------------------------------------------------------------


class NotFoundError(TidingsError, LookupError):
    """Something asked for by id does not exist."""


class DeliveryNotFoundError(NotFoundError):
    """No delivery has this id (never made, or pruned by retention): from
    ``rt.delivery_status``, ``rt.delivery_report`` and ``rt.delivery_events``."""


class SessionNotFoundError(NotFoundError):
    """No session has this id: from the calls that name a session (``rt.session``,
    ``rt.history``, ``rt.open_turn``, ``rt.notify``, ``rt.hold_inbound``,
    ``create_session(parent_session_id=)``, ...)."""


class SessionClosedError(SessionNotFoundError):
    """The session was closed (its conversation's ``/clear``): it cannot be resumed."""


# --- routing ---------------------------------------------------------------------------------


class RouteMismatchError(TidingsError):
    """A route was handed an outbound for a session it is not bound to."""


# --- store -----------------------------------------------------------------------------------


class StoreError(TidingsError):
    """The database could not do what was asked."""


class ConflictError(StoreError):
    """A write broke a uniqueness or integrity rule (the driver error is ``__cause__``)."""


class SchemaVersionError(StoreError):
    """The database was written by a newer tidings than this one."""


class StoreClosedError(StoreError):
    """The store (or its writer) is closed; nothing more can be written."""


class DatabaseInUseError(StoreError):
    """The runtime lock is held: ``open_runtime`` (or ``tidings prune``) was pointed at a
    database a runtime (or a prune) has open, in this process or another. Its own class so a
    caller (``tidings prune``: exit 3) tells it from a lock it cannot take; :attr:`holder`
    says which holds it (``"runtime"`` or ``"prune"``), as its lock file says."""

    def __init__(self, message: str, holder: str = "runtime") -> None:
        super().__init__(message)
        self.holder = holder


class DatabaseNotFoundError(StoreError):
    """A reader was pointed at a database file that does not exist (it is never created)."""


# --- supervision -----------------------------------------------------------------------------


class SupervisorError(TidingsError):
    """Base of supervision failures; ``child`` names the actor concerned, when there is one."""

    def __init__(self, message: str, *, child: str | None = None) -> None:
        super().__init__(message)
        self.child = child


class ChildNotFoundError(SupervisorError, NotFoundError):
    """The supervisor has no child of this name (``mailbox``, ``child_task``, ``stop_child``,
    ``inject_cancel``, ``fault_point``): an unknown id, so also a ``LookupError``."""


class ChildStartError(SupervisorError):
    """A child failed, or timed out, before reporting readiness."""


class RestartIntensityExceeded(SupervisorError):
    """Too many restarts in the configured period: the supervisor gave up.

    It is raised after every child has been stopped, chained (``__cause__``) to the last failure.
    """


class MailboxClosedError(SupervisorError):
    """The actor's mailbox is closed (it is shutting down, or gone)."""


# --- the gateway client (tidings.channels.GatewayClient) -------------------------------------


class GatewayClosed(TidingsError):
    """The server closed the connection; ``code`` and ``reason`` say why."""

    def __init__(self, code: int | None, reason: str | None) -> None:
        super().__init__(f"connection closed ({code}): {reason or 'no reason given'}")
        self.code = code
        self.reason = reason


class GatewayTimeout(TidingsError, TimeoutError):
    """The server did not answer the hello with ``welcome`` in time (a wrong port, a server
    that is not a tidings gateway, a hung one). A ``TimeoutError``, so an ``OSError`` as for a
    server that cannot be reached; the message names the URL."""


class AgentError(TidingsError):
    """An agent failed its turn (a command exited non-zero, a plugin raised, ...)."""


class AccessDeniedError(TidingsError, PermissionError):
    """A sender is not allowed on this channel (its access policy is an allowlist)."""


class RuntimeClosedError(TidingsError, RuntimeError):
    """The runtime is stopping or stopped; no new work is accepted."""


class InjectedFault(TidingsError):
    """A fault put there on purpose by a fault plan; ``seam`` and ``child`` say where."""

    def __init__(self, message: str = "injected fault", *, child: str | None = None,
                 seam: str | None = None) -> None:
        super().__init__(message)
        self.child = child
        self.seam = seam


class InvariantViolation(TidingsError, AssertionError):
    """An invariant of ``tidings.testing``'s checker does not hold (raised by
    ``InvariantChecker.assert_ok``); ``violations`` lists them all. Also an
    ``AssertionError``, so pytest shows it as a failed assertion."""

    def __init__(self, violations: Iterable[object]) -> None:
        self.violations = tuple(violations)
        lines = "\n".join(f"  - {violation}" for violation in self.violations[:50])
        more = len(self.violations) - 50
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"{len(self.violations)} invariant violation(s):\n{lines}{tail}")
