"""Audit of issue 3's output-SDK rules in combination: defaults per slot and mode, history
asked of a parallel or background turn, ``visible=False`` with each kind, and the validation
order (source type, then policy and visibility, then paths) across block lists."""

from __future__ import annotations

import pytest
import trio

from tidings import ArtifactRef
from tidings.actors import ControlBlock, TextBlock
from tidings.errors import ArtifactError, HistoryPolicyError, ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


async def _bound(rt, workspace=None):
    if workspace is not None:
        (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file", "control"})
    rt.router.bind(session_id, route)
    return session_id, route


def _nothing_written(db_path) -> None:
    for table in ("outbox", "work_items", "messages", "artifacts"):
        assert rows(db_path, f"SELECT count(*) FROM {table}") == [(0,)], table


@pytest.mark.parametrize("mode", ["parallel", "background"])
@pytest.mark.parametrize("slot", ["output", "input"])
async def test_an_explicit_transient_in_a_parallel_turn_is_taken_and_history_is_refused(
        rt, db_path, workspace, autojump_clock, mode, slot) -> None:
    session_id, route = await _bound(rt, workspace)
    asks = [
        lambda sdk: sdk.send_text("x", history_policy="persist"),
        lambda sdk: sdk.send_text("x", history_policy="model_hidden"),
        lambda sdk: sdk.send_text("x", write_history=True),
        lambda sdk: sdk.send_text("x", history_policy="model_hidden", visible=False),
        lambda sdk: sdk.send(["x", ControlBlock("go")], history_policy="persist"),
        # before its paths: the file is missing, and history_text is missing too
        lambda sdk: sdk.send_image("missing.png", history_policy="persist",
                                   history_text="an image"),
    ]
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id, slot=slot, mode=mode) as ctx:
            sdk = getattr(ctx, slot)
            assert sdk.default_policy == "transient"
            for ask in asks:
                with pytest.raises(HistoryPolicyError) as caught:
                    await ask(sdk)
                assert isinstance(caught.value, RuntimeError)
                assert caught.value.field == "history_policy"
            _nothing_written(db_path)
            handles = [await sdk.send_text("explicit", history_policy="transient"),
                       await sdk.send_text("by flag", write_history=False),
                       await sdk.send_text("default"),
                       await sdk.send_image("chart.png", history_policy="transient")]
        assert [await h.wait() for h in handles] == ["delivered"] * 4
    assert await rt.history(session_id) == []
    assert route.texts() == ["explicit", "by flag", "default", "chart.png"]


@pytest.mark.parametrize("mode", ["parallel", "background"])
async def test_a_parallel_turn_refuses_a_history_default_at_open(rt, db_path, mode) -> None:
    session_id, _ = await _bound(rt)
    for policy in ("persist", "model_hidden"):
        with pytest.raises(HistoryPolicyError):
            async with rt.open_turn(session_id, mode=mode, history_policy=policy):
                pass  # pragma: no cover - the open is refused
    async with rt.open_turn(session_id, mode=mode, history_policy="transient") as ctx:
        assert (ctx.output.default_policy, ctx.input.default_policy) == ("transient",) * 2
    assert rows(db_path, "SELECT count(*) FROM turns") == [(1,)]


async def test_slot_defaults_of_a_serial_turn(rt, autojump_clock) -> None:
    """Serial output turn: ``ctx.output`` persists and ``ctx.input`` is transient; an input
    turn's ``ctx.output`` is transient too; ``open_turn(history_policy=)`` sets both."""
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        assert (ctx.output.default_policy, ctx.input.default_policy) == ("persist", "transient")
        await ctx.output.send_text("out")
        await ctx.input.send_text("in")
    async with rt.open_turn(session_id, slot="input") as ctx:
        assert (ctx.output.default_policy, ctx.input.default_policy) == ("transient",) * 2
        await ctx.output.send_text("input turn out")
    async with rt.open_turn(session_id, history_policy="model_hidden") as ctx:
        assert (ctx.output.default_policy, ctx.input.default_policy) == ("model_hidden",) * 2
        await ctx.input.send_text("hidden in")
        await ctx.input.send_text("in, persisted by request", history_policy="persist")
    assert [(m.text, m.policy) for m in await rt.history(session_id)] == [
        ("out", "persist"), ("hidden in", "model_hidden"),
        ("in, persisted by request", "persist")]


@pytest.mark.parametrize("send", [
    lambda out: out.progress("x", visible=False),
    lambda out: out.notice("x", visible=False),
    lambda out: out.send("x", kind="progress", visible=False),
    lambda out: out.send("x", kind="notice", visible=False),
    lambda out: out.send_text("x", history_policy="transient", visible=False),
    lambda out: out.send_image("chart.png", history_policy="transient", visible=False),
    lambda out: out.send([ControlBlock("go")], history_policy="transient", visible=False),
    lambda out: out.send_text("x", write_history=False, visible=False),
], ids=["progress", "notice", "send-progress", "send-notice", "text-transient",
        "image-transient", "control-transient", "write_history-false"])
async def test_visible_false_where_nothing_would_be_kept_is_refused_by_name(
        rt, db_path, workspace, autojump_clock, send) -> None:
    session_id, route = await _bound(rt, workspace)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await send(ctx.output)
    assert caught.value.field == "visible"
    _nothing_written(db_path)
    assert route.attempted == []


@pytest.mark.parametrize("policy", ["persist", "model_hidden"])
@pytest.mark.parametrize("send", [
    lambda out, policy: out.send_image("chart.png", history_policy=policy, visible=False,
                                       history_text="an image"),
    lambda out, policy: out.send_file(ArtifactRef(path="chart.png"), history_policy=policy,
                                      visible=False, history_text="a file"),
    lambda out, policy: out.send([ControlBlock("go")], history_policy=policy, visible=False,
                                 history_text="pressed go"),
    lambda out, policy: out.send(["a", {"type": "text", "text": "b"}], history_policy=policy,
                                 visible=False),
], ids=["image", "file-ref", "control", "text-list"])
async def test_visible_false_with_each_block_kind_is_kept_and_sent_to_nobody(
        rt, db_path, workspace, autojump_clock, send, policy) -> None:
    session_id, route = await _bound(rt, workspace)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await send(ctx.output, policy)
            after = await ctx.output.send_text("after")  # the lane is not held by it
        assert await handle.wait() == "delivered"
        assert await after.wait() == "delivered"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.outbox_status, status.attempts) == ("sent", "sent", 0)
    assert route.texts() == ["after"]
    [message, _] = await rt.history(session_id)
    assert (message.visible, message.model_visible, message.delivery_id) == (
        False, policy == "persist", handle.delivery_id)
    assert [m.text for m in await rt.history(session_id, model_context=True)] == (
        [message.text, "after"] if policy == "persist" else ["after"])


async def test_a_list_mixing_blocks_strings_and_mappings_is_one_delivery(
        rt, db_path, autojump_clock) -> None:
    session_id, route = await _bound(rt)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send([TextBlock("a"), {"type": "text", "text": "b"}, "c",
                                            {"type": "control", "action": "go"}])
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert [b.as_dict() for b in outbound.blocks] == [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
        {"type": "text", "text": "c"}, {"type": "control", "action": "go", "data": {}}]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]
    [message] = await rt.history(session_id)
    assert message.kind == "text"


@pytest.mark.parametrize("kwargs", [
    {},  # persist, a media block, no history_text: the history rule would refuse it
    {"history_policy": "bogus"},
    {"kind": "bogus"},
    {"visible": False, "history_policy": "transient"},
    {"failure_history_text": "x", "history_policy": "transient"},
])
async def test_a_raw_dict_source_in_a_mixed_list_is_a_type_error_first(
        rt, db_path, workspace, kwargs) -> None:
    """A raw artifact dict as a block's source, after a valid block and a media block whose
    path is missing: the ``TypeError`` comes before the kind, policy, visibility and history
    rules and before any path, and names the block's field."""
    session_id, _ = await _bound(rt, workspace)
    blocks = [TextBlock("a"), {"type": "image", "source": "missing.png"},
              {"type": "image", "source": {"path": "chart.png"}}]
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError) as caught:
            await ctx.output.send(blocks, **kwargs)
        assert not isinstance(caught.value, ValidationError)
        assert "blocks[2].source" in str(caught.value)
        with pytest.raises(TypeError) as caught:
            await ctx.output.send([TextBlock("a"), ArtifactRef(path="chart.png")], **kwargs)
        assert "blocks[1]" in str(caught.value)
    _nothing_written(db_path)


async def test_a_raw_dict_block_without_a_type_is_refused_by_its_field(rt, db_path) -> None:
    session_id, _ = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send([TextBlock("a"), {"path": "chart.png"}])
    assert caught.value.field == "blocks[1].type"
    _nothing_written(db_path)


async def test_policy_and_visibility_come_before_paths_in_a_block_list(
        rt, db_path, workspace) -> None:
    """A list whose first media path escapes the workspace: each policy or visibility error
    of the send is the one raised, not the path's ArtifactError."""
    session_id, _ = await _bound(rt, workspace)
    blocks = [{"type": "image", "source": "../escape.png"}, "text"]
    async with rt.open_turn(session_id) as ctx:
        for kwargs, field in [({"history_policy": "forever"}, "history_policy"),
                              ({"visible": False, "history_policy": "transient"}, "visible"),
                              ({}, "history_text"),
                              ({"write_history": True, "history_policy": "transient"},
                               "write_history")]:
            with pytest.raises(ValidationError) as caught:
                await ctx.output.send(blocks, **kwargs)
            assert not isinstance(caught.value, ArtifactError), kwargs
            assert caught.value.field == field, kwargs
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send(blocks, history_text="an image")
        assert caught.value.field == "blocks[0].source"
    _nothing_written(db_path)


async def test_progress_and_notices_share_the_outbox_order_and_write_no_history(
        rt, workspace, autojump_clock) -> None:
    """Messages, progress notes, notices, media and an invisible message of one turn: one
    contiguous seq, delivered in that order (the invisible one to nobody), and only the
    messages in history."""
    session_id, route = await _bound(rt, workspace)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.progress("p1"),
                       await ctx.output.send_text("m1"),
                       await ctx.output.notice("n1"),
                       await ctx.output.send_text("quiet", visible=False),
                       await ctx.output.send(["p2"], kind="progress"),
                       await ctx.output.send_image("chart.png", caption="c",
                                                   history_text="an image"),
                       await ctx.input.send_text("i1"),
                       await ctx.output.send({"type": "text", "text": "n2"}, kind="notice")]
        assert [await h.wait() for h in handles] == ["delivered"] * len(handles)
    assert [h.seq for h in handles] == list(range(1, len(handles) + 1))
    assert [h.kind for h in handles] == ["progress", "message", "notice", "message",
                                         "progress", "message", "message", "notice"]
    assert [(o.kind, o.text) for o in route.delivered] == [
        ("progress", "p1"), ("message", "m1"), ("notice", "n1"), ("progress", "p2"),
        ("message", "c"), ("message", "i1"), ("notice", "n2")]
    assert [o.seq for o in route.delivered] == [1, 2, 3, 5, 6, 7, 8]
    assert [(m.text, m.kind) for m in await rt.history(session_id)] == [
        ("m1", "text"), ("quiet", "text"), ("an image", "image")]
