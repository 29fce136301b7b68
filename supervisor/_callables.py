"""What can be told about a callable before it is called: whether it is certainly sync, and
whether it can take the one argument tidings calls it with."""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = ["certainly_async", "certainly_sync", "wrong_signature"]


def certainly_sync(fn: Any) -> bool:
    """Whether *fn* is certainly a plain (sync) function or method, partials unwrapped.

    For what tidings awaits (a child's function, a route's ``deliver``, an agent's ``run``):
    awaiting what a plain one returns fails every call at run time, naming nothing. Anything
    else (a callable object, a mock) may be async. A plain function that returns an awaitable
    (a ``lambda`` around a coroutine) counts as sync: write it ``async def``.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    return ((inspect.isfunction(fn) or inspect.ismethod(fn))
            and not inspect.iscoroutinefunction(fn))


def certainly_async(fn: Any) -> bool:
    """Whether *fn* is certainly an ``async def`` function or method, partials unwrapped, or
    an object whose ``__call__`` is one (``inspect`` looks at functions only, so such an
    object passed for sync).

    For the hooks tidings calls and does not await (a child's ``on_exit`` and
    ``dead_letter``, ``rt.prune``'s ``on_chunk``): calling one only makes a coroutine nobody
    awaits (a RuntimeWarning), so the hook never runs.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if isinstance(fn, type) or inspect.isroutine(fn):  # a class builds, a function is read
        return False
    return callable(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def wrong_signature(fn: Any, *keywords: str) -> inspect.Signature | None:
    """*fn*'s signature if it cannot be called as tidings calls an agent's ``run`` or a route's
    methods, with one argument alone (and, given *keywords*, those keyword arguments too: a
    child's ``fn(ctx, task_status=...)``); None if it can, or if it has no signature to read
    (a builtin, a partial whose own arguments do not fit: the benefit of the doubt). A
    ``functools.wraps`` wrapper is refused only when its own signature does not fit either:
    ``inspect`` reads the wrapped function's, which a decorator may change (one that passes
    a dependency), though the wrapper is what is called."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if _fits(signature, keywords):
        return None
    try:
        own = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return None
    return None if _fits(own, keywords) else signature


def _fits(signature: inspect.Signature, keywords: tuple[str, ...]) -> bool:
    """Whether *signature* takes one argument and *keywords* (as tidings calls it)."""
    try:
        signature.bind(None, **dict.fromkeys(keywords))
    except TypeError:
        return False
    return True
