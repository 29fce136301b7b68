"""Keep trio's strict exception groups inside: public APIs raise the one error that matters.

A nursery wraps whatever escapes it in an ``ExceptionGroup``, even a single error from the body
of an ``async with``. :func:`collapse` picks the error a caller should see: the only one, or the
only one that is not a ``trio.Cancelled`` riding along with it. A group of several real failures
is returned unchanged (that is news worth a group).
"""

from __future__ import annotations

from collections.abc import Iterator

import trio

__all__ = ["collapse", "leaves"]


def leaves(error: BaseException) -> Iterator[BaseException]:
    """Every non-group exception inside *error*, depth first."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception *group* stands for, or *group* itself when there are several."""
    found = list(leaves(group))
    real = [error for error in found if not isinstance(error, trio.Cancelled)]
    if len(real) == 1:
        return real[0]
    if not real:
        return found[0]
    return group
