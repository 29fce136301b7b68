"""What ``bind`` checks of a route before it takes it (:func:`check_route`), and the route's
``capabilities`` and ``ack_window`` as a binding reads them.

Each check refuses, naming the attribute, a route every call of which would fail at run time
(a delivery ``failed``, a question ``route_failed``) with an error nothing named when the
route was bound.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from tidings.actors._blocks import BLOCK_TYPES
from tidings.actors._handle import describe_error
from tidings.errors import ValidationError
from tidings.supervisor._callables import certainly_sync, wrong_signature

__all__ = ["OPTIONAL_METHODS", "check_ack_window", "check_capabilities", "check_route",
           "route_attribute"]

_QUESTIONS = {"prompt_user": "prompt", "request_approval": "request"}
"""A route's optional question methods (without one, its questions fail closed), each with
the name of its argument (for the refusal of a sync one)."""

OPTIONAL_METHODS = {**_QUESTIONS, "reconcile": "delivery_ids"}
"""Every optional async method of a route: the questions, and ``reconcile`` (asked by the
recovery scanner about ``unknown`` rows; a sync one failed every ask, and one that raised
when read escaped the scanner's bind listener)."""


def check_route(route: Any) -> None:
    """Refuse *route* unless it has an async ``deliver(outbound)``, and each optional method
    it has (``prompt_user``, ``request_approval``, ``reconcile``) is async and takes its one
    argument: :class:`ValidationError` naming ``route`` or the attribute (one that raises when
    read, or is there but not callable; a route class given for a route object), ``TypeError``
    naming the method (certainly sync, or the wrong arguments). Never blocks."""
    deliver = route_attribute(route, "deliver")
    if not callable(deliver):
        raise ValidationError("route", "a route needs an async deliver(outbound) method")
    _check_not_a_class(route)
    _check_method("deliver", deliver, "outbound")
    for name, argument in OPTIONAL_METHODS.items():  # optional, but one there must be awaitable
        ask = route_attribute(route, name)
        if ask is None:
            continue
        if not callable(ask):
            raise ValidationError(name, f"must be an async method, got {ask!r:.80}")
        _check_method(name, ask, argument)


_CHECKED: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()
"""Functions whose bound methods passed :func:`_check_method`: what it checks of a bound
method depends on its function alone, so each further route of a class costs a lookup, not
``inspect.signature`` calls (they made up most of a bind: 20,000 routes of one class bound in
about 0.9 s). A function replaced on its class (a new function) is checked again."""


def _check_method(name: str, fn: Any, argument: str) -> None:
    """:func:`_check_not_sync` and :func:`_check_signature`, once per function for bound
    methods (see :data:`_CHECKED`)."""
    func = fn.__func__ if inspect.ismethod(fn) else None
    if func is not None and func in _CHECKED:
        return
    _check_not_sync(name, fn, argument)
    _check_signature(name, fn, argument)
    if isinstance(func, types.FunctionType):
        _CHECKED.add(func)


def _check_not_sync(name: str, fn: Any, argument: str) -> None:
    """Refuse a route method *name* that is :func:`certainly_sync`: every call of it would
    fail at run time (a question closed ``route_failed``, a delivery ``failed``)."""
    if certainly_sync(fn):
        raise TypeError(f"{name}: a route's {name} must be a coroutine function "
                        f"(async def {name}({argument})), got the plain function "
                        f"{getattr(fn, '__qualname__', fn)!r:.80}")


def _check_signature(name: str, fn: Any, argument: str) -> None:
    """Refuse a route method *name* that cannot be called with its one *argument*, as the
    runtime calls it (``deliver(outbound)``): every call of it would fail at run time with a
    ``TypeError`` about its arguments (a delivery ``failed``, a question ``route_failed``). One
    with defaults or ``*args`` is taken; one whose signature cannot be read (a builtin) is
    given the benefit of the doubt, as a channel's agent ``run(turn)`` is
    (:func:`~tidings.supervisor._callables.wrong_signature`)."""
    if (wrong := wrong_signature(fn)) is not None:
        raise TypeError(f"{name}: a route's {name} must take the {argument} as its one "
                        f"argument (async def {name}({argument})), got "
                        f"{name}{wrong!s:.80}")


def _check_not_a_class(route: Any) -> None:
    """Refuse a route class given for a route (``MemoryRoute`` for ``MemoryRoute()``): its
    ``deliver`` is the function its instances bind, so every delivery would call it with the
    outbound as ``self`` and fail (``failed``, "missing 1 required positional argument"). A
    class whose ``deliver`` is a static or class method is called as it is: a route."""
    if isinstance(route, type) and inspect.isfunction(
            inspect.getattr_static(route, "deliver", None)):
        raise ValidationError("route", f"got the class {route.__qualname__!r:.80}, not a "
                                       f"route object: make one ({route.__name__:.80}())")


def route_attribute(route: Any, name: str) -> object:
    """``route.<name>``, None when it has none. Read once, at bind: a property that raises
    refuses the route by the attribute's name instead of escaping ``bind`` as it is."""
    try:
        return getattr(route, name, None)
    except Exception as exc:  # any failure to read it refuses the route, by its name
        raise ValidationError(name, f"reading a route's {name} raised "
                                    f"{describe_error(exc, 120)}") from exc


def check_capabilities(caps: object) -> frozenset[str]:
    """A route's block types (text only when it declares none). A string is refused: it would
    read as its letters; so is an iterable that fails while it is read, and a name that is no
    block type (a misspelt ``"images"`` would silently degrade every image). So is a one-shot
    iterator (a generator): read at each bind, it would be empty at the route's next one, and
    every block but text degraded from then on; and a mapping, which reads as its keys: flags
    such as ``{"file": False}`` would hand the route every file it said it cannot render."""
    if caps is None:
        return frozenset({"text"})
    if isinstance(caps, Iterator | Mapping):
        what = "a mapping (its keys, whatever their values)" if isinstance(caps, Mapping) \
            else "a one-shot iterator"
        raise ValidationError("capabilities", f"a route's capabilities must be a collection "
                                              f"of block type names (read at every bind), not "
                                              f"{what}: got {caps!r:.80}")
    try:
        names = frozenset(caps) if not isinstance(caps, str | bytes) else None
    except Exception:  # noqa: BLE001 - not iterable, or its iteration failed: refused below
        names = None
    if names is None or not all(isinstance(t, str) and t for t in names):
        raise ValidationError("capabilities", f"a route's capabilities must be block type "
                                              f"names, got {caps!r:.80}")
    unknown = names.difference(BLOCK_TYPES)
    if unknown:
        raise ValidationError("capabilities", f"not block types: {sorted(unknown)!r:.80} "
                                              f"(block types are {', '.join(BLOCK_TYPES)})")
    return names


def check_ack_window(window: object) -> int:
    """A route's ack window (0: it does not ack). Anything but None or an int >= 0 is
    refused: a negative window would hold the session's deliveries forever."""
    if window is None:
        return 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValidationError("ack_window", f"a route's ack_window must be None or an int "
                                            f">= 0, got {window!r:.80}")
    return window
