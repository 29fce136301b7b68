"""History policies and the visibility rules (DESIGN.md "History").

| policy         | history row | later model context |
| ``persist``      | yes         | visible             |
| ``model_hidden`` | yes         | hidden              |
| ``transient``    | no          | --                  |
"""

from __future__ import annotations

from typing import Literal

from tidings.errors import HistoryPolicyError, NotABoolError, ValidationError

__all__ = ["KINDS", "MODES", "POLICIES", "SLOTS", "HistoryPolicy",
           "check_flag", "check_mode_allows", "resolve_policy"]

HistoryPolicy = Literal["persist", "model_hidden", "transient"]
POLICIES: tuple[HistoryPolicy, ...] = ("persist", "model_hidden", "transient")
KINDS = ("message", "progress", "notice")
SLOTS = ("input", "output")
MODES = ("serial", "parallel", "background")


def check_flag(field: str, value: object, *, optional: bool = False) -> bool | None:
    """*value* if it is a real bool (or None when *optional*), else :class:`NotABoolError`
    naming *field*.

    A truthy stand-in (``"no"``, ``1``) would silently mean the opposite of what was meant, or
    more than was meant, so the flags of the public API take ``True`` and ``False`` only (as
    they always refused ints: ``bool`` is an ``int``, not the reverse).
    """
    if isinstance(value, bool) or (optional and value is None):
        return value  # type: ignore[return-value]
    expected = "a bool or None" if optional else "a bool"
    raise NotABoolError(field, f"must be {expected}, got {type(value).__name__} {value!r:.40}")


def check_policy(value: object, field: str = "history_policy") -> HistoryPolicy:
    if value not in POLICIES:
        raise ValidationError(field, f"must be one of {', '.join(POLICIES)}, got {value!r}")
    return value  # type: ignore[return-value]


def resolve_policy(*, write_history: bool | None, history_policy: str | None,
                   default: HistoryPolicy, visible: bool) -> HistoryPolicy:
    """The effective policy of one request, after the visibility rule.

    ``history_policy`` wins (``write_history=True`` with ``transient`` contradicts it and is
    rejected); else ``write_history=True`` is ``persist`` and ``False`` is ``transient``; else
    the slot's *default*. ``visible=False`` with ``transient`` has no effect
    at all and is rejected. A flag that is not a real bool raises :class:`NotABoolError` naming it.
    """
    check_flag("write_history", write_history, optional=True)
    check_flag("visible", visible)
    if history_policy is not None:
        policy = check_policy(history_policy)
        if write_history is True and policy == "transient":  # one asks for a row, one for none
            raise ValidationError("write_history", "write_history=True asks for history and "
                                                   "history_policy='transient' for none")
    elif write_history is not None:
        policy = "persist" if write_history else "transient"
    else:
        policy = default
    if not visible and policy == "transient":
        raise ValidationError("visible", "visible=False with a transient history policy has no "
                                         "effect: nothing would be shown or remembered")
    return policy


def check_mode_allows(policy: HistoryPolicy, mode: str) -> None:
    """Parallel output slots and background paths may not write history."""
    if policy != "transient" and mode != "serial":
        raise HistoryPolicyError(
            "history_policy", f"a {mode} turn may not write session history (asked for "
                              f"{policy!r}); use history_policy='transient'")
