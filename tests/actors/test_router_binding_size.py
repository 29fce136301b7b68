"""A binding is what a long-running server keeps per bound session: routes that render the
same block types share one set of them, not a copy per binding (a frozenset of a few names
is about 200 bytes, most of a binding's size)."""

from __future__ import annotations

from tidings.testing import MemoryRoute


async def test_bindings_share_equal_capabilities(rt) -> None:
    first, second, third = [await rt.create_session(channel="web") for _ in range(3)]
    a = rt.router.bind(first, MemoryRoute(capabilities=["text", "image"]))
    rt.router.bind(second, MemoryRoute(capabilities=("image", "text")))
    rt.router.bind(third, MemoryRoute())
    caps = [rt.router.binding(sid).capabilities for sid in (first, second, third)]
    assert caps[0] == frozenset({"text", "image"})
    assert caps[0] is caps[1]
    assert caps[2] == frozenset({"text"})
    rt.router.unbind(a)
    rt.router.bind(first, MemoryRoute())
    assert rt.router.binding(first).capabilities is caps[2]
