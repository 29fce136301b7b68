"""A lane's memory is bounded by the size of what it holds (texts, control data, metadata),
not only by their count.

Each session's lane holds deliveries in its mailbox (``mailbox_size`` of them) and reads a
backlog back from the outbox (``refill_batch`` rows at a time), and a text may be up to
``MAX_TEXT_BYTES``: by count alone one session could hold ~96 MiB. ``Dispatcher.lane_bytes``
bounds the texts a lane holds in memory; the rest waits in the outbox, nothing is dropped,
and a single text larger than the budget still goes.
"""

from __future__ import annotations

import json

import trio

SIZE = 300_000
"""Characters of each large text (ASCII: as many bytes)."""


class _Recorder:
    """A route that keeps no texts (they would count against the memory measured): the seq,
    first character and length of each delivery, and what the lane held as each one began."""

    def __init__(self, rt, count: int) -> None:
        self.rt, self.count = rt, count
        self.ids: list[str] = []  # the test's sends, as they return
        self.done_ids: set[str] = set()
        self.gate = trio.Event()
        self.got: list[tuple[int, str, int]] = []
        self.peaks: list[int] = []
        self.started = trio.Event()
        self.done = trio.Event()

    def held(self, current: str | None = None, *, settled: int | None = None) -> int:
        """The length of the texts of the sends still alive in memory, neither delivered nor
        in deliver() (*current*): what the lane holds (its mailbox, its backlog). The test
        keeps no handle and the registry holds items weakly, so an item alive is one the
        runtime holds. Only the first *settled* sends are looked at: the last one's item is
        still held by the write that carried it (the writer's batch, until its next one)."""
        return sum(self.size(item) for delivery_id in self.ids[:settled]
                   if delivery_id not in self.done_ids and delivery_id != current
                   and (item := self.rt.registry.get(delivery_id)) is not None)

    def size(self, item) -> int:
        """What :meth:`held` counts of a send alive in memory: its text."""
        return len(item.text)

    async def deliver(self, outbound) -> None:
        self.peaks.append(self.held(outbound.delivery_id))
        self.started.set()
        await self.gate.wait()
        self.done_ids.add(outbound.delivery_id)
        self.got.append((outbound.seq, outbound.text[:1], len(outbound.text)))
        if len(self.got) == self.count:
            self.done.set()


async def _last(rt, session_id: str) -> list[str]:
    """The stored status of every send before one more, delivered: a lane records a row's
    ``sent`` before (or with) its next claim."""
    async with rt.open_turn(session_id) as ctx:
        last = await ctx.output.send_text("last", history_policy="transient")
    with trio.fail_after(30):
        assert await last.wait() == "delivered"
    stored = await rt.deliveries(session_id=session_id)
    return [d.status for d in sorted(stored, key=lambda d: d.seq)][:-1]


def _text(i: int) -> str:
    return chr(ord("a") + i % 26) * SIZE


async def test_large_texts_wait_in_the_outbox_and_all_go_out_in_order(rt) -> None:
    budget = rt.dispatcher.lane_bytes
    assert SIZE < budget < 10 * SIZE  # a few texts fit, not the ~60 the mailbox would take
    session_id = await rt.create_session(channel="web")
    count = 40
    route = _Recorder(rt, count)
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        first = await ctx.output.send_text(_text(0), history_policy="transient")
        route.ids.append(first.delivery_id)
        await route.started.wait()  # the first one is in deliver(): the rest queue behind it
        for i in range(1, count):
            route.ids.append((await ctx.output.send_text(
                _text(i), history_policy="transient")).delivery_id)
            held = route.held(first.delivery_id, settled=-1)
            assert held <= budget
            assert rt.statistics().dispatch.queued_bytes in (held, held + SIZE)
    lane = rt.dispatcher.lane(session_id)
    assert lane is not None
    assert lane.overflow  # the rest is in the outbox only
    route.gate.set()
    with trio.fail_after(30):
        await route.done.wait()
        assert await first.wait() == "delivered"
    assert [seq for seq, _, _ in route.got] == list(range(1, count + 1))
    assert [(c, n) for _, c, n in route.got] == [(_text(i)[0], SIZE) for i in range(count)]
    assert max(route.peaks) <= budget  # also while refills read the backlog back
    assert max(route.peaks) > SIZE  # refills did read more than one row at a time
    assert await _last(rt, session_id) == ["sent"] * count
    assert rt.statistics().dispatch.queued_bytes == 0


async def test_a_text_larger_than_the_budget_still_goes(rt) -> None:
    rt.dispatcher.lane_bytes = SIZE // 2  # every text is over it
    session_id = await rt.create_session(channel="web")
    count = 5
    route = _Recorder(rt, count)
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        for i in range(count):
            route.ids.append((await ctx.output.send_text(
                _text(i), history_policy="transient")).delivery_id)
        await route.started.wait()
        assert route.held(route.ids[0], settled=-1) <= SIZE  # one at a time, never two
        route.gate.set()
        with trio.fail_after(30):
            await route.done.wait()
    assert [seq for seq, _, _ in route.got] == list(range(1, count + 1))
    assert max(route.peaks) <= SIZE
    assert await _last(rt, session_id) == ["sent"] * count


class _Sizes(_Recorder):
    """:class:`_Recorder` whose ``held`` is the size of the JSON of the blocks and metadata of
    the sends still alive in memory (control-only sends have no text to measure)."""

    def held(self, current: str | None = None, *, settled: int | None = -1) -> int:
        """As :class:`_Recorder`'s, the last send never looked at (its write holds it)."""
        return super().held(current, settled=settled)

    def size(self, item) -> int:
        return (len(json.dumps([block.as_dict() for block in item.blocks]))
                + len(json.dumps(dict(item.metadata))))


async def test_control_data_and_metadata_count_against_the_budget(rt) -> None:
    # A control block's data and a send's metadata (up to MAX_JSON_BYTES each, and a send may
    # carry many control blocks) ride with the item as its text does; a control-only send has
    # no text at all. Counted as len(text) alone, a lane took every one of them.
    rt.dispatcher.lane_bytes = budget = 200_000
    payload = "x" * 60_000
    session_id = await rt.create_session(channel="web")
    count = 20
    route = _Sizes(rt, count)
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id, history_policy="transient") as ctx:
        for i in range(count):
            if i % 2:
                handle = await ctx.output.send_text("hi", delivery_metadata={"p": payload})
            else:
                handle = await ctx.output.send(
                    [{"type": "control", "action": "a", "data": {"p": payload}}])
            route.ids.append(handle.delivery_id)
            if i == 0:
                await route.started.wait()  # the first is in deliver(): the rest queue
                continue
            assert route.held(route.ids[0]) <= budget, i
    route.gate.set()
    with trio.fail_after(30):
        await route.done.wait()
    assert [seq for seq, _, _ in route.got] == list(range(1, count + 1))
    assert max(route.peaks) <= budget  # also while refills read the backlog back
    assert await _last(rt, session_id) == ["sent"] * count
    assert rt.statistics().dispatch.queued_bytes == 0
