"""Property: however a serial output turn mixes texts, images, progress and notices (history
policies, ``visible=False``, ``failure_history_text``, captions and summaries) and its route
accepts or refuses each one, with or without the capability to render images (README
"Routing", "History policies", "Claims"; issue 3's pinned semantics):

- ``handle.wait()`` says ``delivered`` for an accepted or invisible send and ``failed`` for a
  refused one, and ``delivery_status`` agrees: attempts 1 (0 for an invisible send, which no
  route is called for), the route's error kept;
- the route is called for each visible send once, in the order they were sent, and for none
  of the invisible ones;
- a media outbound's ``text`` is its caption, else its summary, else its ``history_text``;
  a route without the ``image`` capability gets the text fallback and the delivery records a
  ``delivery.degraded`` event;
- history holds one row per send whose policy writes it (none for progress, notices and
  transient sends), its text the ``history_text`` or text, replaced by the
  ``failure_history_text`` when the send failed (every other field kept), ``model_visible``
  False for ``model_hidden``, ``visible`` as sent; ``model_context=True`` returns the rows
  that are model visible, in order.

Each example runs its own ``trio.run`` on a fresh database.
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidings
from tidings.testing import MemoryRoute

from ..database_template import fresh_database
from ..io_clock import io_clock
from ..real_time import fail_after_real

_FAIL = st.booleans()
_POLICY = st.sampled_from((None, "persist", "model_hidden", "transient"))

SENDS = st.lists(st.one_of(
    st.tuples(st.just("text"), _FAIL, _POLICY, st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("image"), _FAIL, _POLICY, st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.sampled_from(("progress", "notice")), _FAIL)), min_size=1, max_size=8)


class Refused(Exception):
    """What the route raises for a send it refuses."""


def _refuse_marked(outbound: Any) -> Exception | None:
    return Refused(f"refused {outbound.metadata['n']}") if outbound.metadata.get("fail") else None


def _valid(send: tuple[Any, ...]) -> bool:
    """Whether the SDK takes *send* (the refusals are other tests'): no ``visible=False`` with
    a transient send, no ``failure_history_text`` with one or with ``visible=False`` (it would
    never be used)."""
    if send[0] in ("progress", "notice"):
        return True
    _, _, policy, visible, failure_text, _ = send
    if failure_text and (policy == "transient" or not visible):
        return False
    return policy != "transient" or visible


async def _send(ctx: Any, n: int, send: tuple[Any, ...]) -> Any:
    metadata = {"n": n, "fail": send[1]}
    if send[0] in ("progress", "notice"):
        return await getattr(ctx.output, send[0])(f"{send[0]} {n}", delivery_metadata=metadata)
    kind, _, policy, visible, failure_text, extra = send
    controls: dict[str, Any] = {"history_policy": policy, "visible": visible,
                                "delivery_metadata": metadata}
    if failure_text:
        controls["failure_history_text"] = f"failed {n}"
    if kind == "text":
        if extra and policy != "transient":  # (a transient send's would never be used)
            controls["history_text"] = f"said {n}"
        return await ctx.output.send_text(f"text {n}", **controls)
    if extra:
        controls["caption"] = f"caption {n}"
    if policy != "transient":
        controls["history_text"] = f"chart {n}"
    return await ctx.output.send_image("pic.png", summary=f"summary {n}", **controls)


async def _run(sends: list[tuple[Any, ...]], images: bool, directory: pathlib.Path
               ) -> tuple[list[Any], list[Any], list[Any], list[Any], MemoryRoute]:
    db = fresh_database(directory / "state" / "tidings.db")
    workspace = directory / "ws"
    workspace.mkdir()
    (workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    route = MemoryRoute(capabilities=("text", "image") if images else ("text",),
                        fail=_refuse_marked)
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                handles = [await _send(ctx, n, send) for n, send in enumerate(sends)]
            outcomes = [await handle.wait() for handle in handles]
            statuses = [await rt.delivery_status(handle.delivery_id) for handle in handles]
            history = await rt.history(session_id, model_context=False)
            model = await rt.history(session_id, model_context=True)
            feed = rt.events(after_seq=0)
        degraded = [event.delivery_id async for event in feed
                    if event.type == "delivery.degraded"]
    return list(zip(handles, outcomes, statuses, strict=True)), history, model, degraded, route


def _check(sends: list[tuple[Any, ...]], images: bool, results: list[Any], history: list[Any],
           model: list[Any], degraded: list[Any], route: MemoryRoute) -> None:
    called = [outbound.delivery_id for outbound in route.attempted]
    visible_ids = []
    expected_history = []
    by_id = {outbound.delivery_id: outbound for outbound in route.attempted}
    for n, (send, (handle, outcome, status)) in enumerate(zip(sends, results, strict=True)):
        kind, fail = send[0], send[1]
        policy = None if kind in ("progress", "notice") else send[2]
        visible = True if kind in ("progress", "notice") else send[3]
        failure_text = kind in ("text", "image") and send[4]
        if not visible:
            assert outcome == "delivered", (n, send, outcome)
            assert status.outbox_status == "sent", (n, status)
            assert status.attempts == 0, (n, status)
        else:
            visible_ids.append(handle.delivery_id)
            assert outcome == ("failed" if fail else "delivered"), (n, send, outcome)
            assert status.outbox_status == ("failed" if fail else "sent"), (n, status)
            assert status.attempts == 1, (n, status)
            if fail:
                assert f"refused {n}" in (status.last_error or ""), (n, status)
            outbound = by_id[handle.delivery_id]
            if kind == "image":
                caption = send[5]
                want = f"caption {n}" if caption else f"summary {n}"
                assert outbound.text == want, (n, outbound)
                assert (handle.delivery_id in degraded) == (not images), (n, degraded)
                block_types = [block.type for block in outbound.blocks]
                assert block_types == (["image"] if images else ["text"]), (n, outbound.blocks)
            else:
                assert handle.delivery_id not in degraded, (n, degraded)
        if kind in ("progress", "notice") or policy == "transient":
            continue
        written = {"text": f"said {n}" if send[5] else f"text {n}",
                   "image": f"chart {n}"}[kind]
        if failure_text and fail and visible:
            written = f"failed {n}"
        expected_history.append((handle.delivery_id, written, visible,
                                 policy != "model_hidden", policy or "persist"))
    assert called == visible_ids, "the route was called out of order, twice, or for an " \
                                  "invisible send"
    got = [(row.delivery_id, row.text, row.visible, row.model_visible, row.policy)
           for row in history]
    assert got == expected_history, (got, expected_history)
    assert [row.message_id for row in model] == [row.message_id for row in history
                                                 if row.model_visible]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SENDS.filter(lambda sends: all(_valid(send) for send in sends)), st.booleans())
def test_each_send_ends_as_its_route_and_policy_say(sends, images) -> None:
    with tempfile.TemporaryDirectory() as directory:
        outcome = trio.run(_run, sends, images, pathlib.Path(directory),
                           clock=io_clock(threshold=0.005))
    _check(sends, images, *outcome)
