"""The output SDK's input rules for text and sources (README "Embedding tidings"): an empty
text, an empty ``history_text``, a text over ``MAX_TEXT_BYTES`` and a source string that is
not really a URL are each decided at the call, by field, before anything is written."""

from __future__ import annotations

import pathlib

import pytest

from tidings import ArtifactRef
from tidings.actors import MAX_TEXT_BYTES, ControlBlock, MediaBlock, TextBlock
from tidings.errors import ValidationError

from .conftest import refused_by_field


async def _refused_by_field(rt, session_id, route, send, field) -> ValidationError:
    """:func:`refused_by_field` with *send* given the turn's ``output``."""
    return await refused_by_field(rt, session_id, route, lambda ctx: send(ctx.output), field)


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_text(""), "text"),
    (lambda output: output.progress(""), "text"),
    (lambda output: output.notice(""), "text"),
    (lambda output: output.send(""), "blocks[0].text"),
    (lambda output: output.send(["a", TextBlock("")]), "blocks[1].text"),
    (lambda output: output.send([{"type": "text", "text": ""}]), "blocks[0].text"),
    (lambda output: output.send("", kind="notice"), "blocks[0].text"),
])
async def test_an_empty_text_is_refused_by_field(rt, bound, send, field) -> None:
    session_id, route = bound
    error = await _refused_by_field(rt, session_id, route, send, field)
    assert "must not be empty" in str(error)


async def test_a_file_name_with_a_colon_is_a_path(rt, bound, workspace) -> None:
    """``notes:v2.txt`` has no ``//`` after its colon and ``notes`` is no URL scheme: it is
    the workspace file of that name, as a ``pathlib.Path`` of it always was."""
    (workspace / "notes:v2.txt").write_text("v2")
    (workspace / "draft:1").write_text("1")
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        first = await ctx.output.send_file("notes:v2.txt", history_text="Sent the notes.")
        second = await ctx.output.send({"type": "file", "source": "draft:1"},
                                       history_policy="transient")
    assert await first.wait() == "delivered"
    assert await second.wait() == "delivered"
    located = [(b.source_kind, b.location, b.name) for o in route.delivered for b in o.blocks]
    assert located == [("path", str(workspace / "notes:v2.txt"), "notes:v2.txt"),
                       ("path", str(workspace / "draft:1"), "draft:1")]


@pytest.mark.parametrize("source", [
    "ftp://example.com/a.png",            # a URL, not http(s)
    "file:///etc/passwd",                 # a URL, not http(s)
    "notes://example.com/a.png",          # scheme://: a URL whatever the scheme
    "data:text/plain;base64,aGk=",        # URL schemes that never have //: still URLs
    "javascript:alert(1)",
    "DATA:hi.txt",
    "https:example.com/a.png",            # http(s) without //: a URL, and one with no host
])
async def test_a_string_that_is_a_url_is_never_read_as_a_path(rt, bound, workspace,
                                                              source) -> None:
    """Even with a workspace file of that very name, a URL-looking string is a URL and is
    refused unless http(s) (a ``pathlib.Path`` or ``./`` names such a file)."""
    if "/" not in source:
        (workspace / source).write_text("a file named like a URL")
    session_id, route = bound
    error = await _refused_by_field(
        rt, session_id, route,
        lambda output: output.send_file(source, history_policy="transient"), "source")
    assert "URL" in str(error)


async def test_a_path_named_like_a_url_is_still_a_path(rt, bound, workspace) -> None:
    (workspace / "javascript:alert(1)").write_text("js")
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(pathlib.Path("javascript:alert(1)"),
                                            history_policy="transient")
        dotted = await ctx.output.send_file("./javascript:alert(1)",
                                            history_policy="transient")
    assert [await handle.wait(), await dotted.wait()] == ["delivered", "delivered"]
    assert {b.location for o in route.delivered for b in o.blocks} == {
        str(workspace / "javascript:alert(1)")}


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_file("chart.png", history_text=""), "history_text"),
    (lambda output: output.send_image("chart.png", history_text="",
                                      history_policy="model_hidden"), "history_text"),
    (lambda output: output.send({"type": "control", "action": "typing"}, history_text=""),
     "history_text"),
    (lambda output: output.send_text("a", history_text=""), "history_text"),
    (lambda output: output.send_text("a", failure_history_text=""), "failure_history_text"),
])
async def test_an_empty_history_text_is_refused_by_field(rt, bound, send, field) -> None:
    """An empty ``history_text`` does not count as given: it would write an empty history
    row (and satisfy the rule that a non-text send must say what it was in words)."""
    session_id, route = bound
    error = await _refused_by_field(rt, session_id, route, send, field)
    assert "must not be empty" in str(error)


_OVER = MAX_TEXT_BYTES + 1
_AT_CAP_WIDE = "é" * (MAX_TEXT_BYTES // 2)  # exactly the cap in UTF-8, half as many chars


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_text("x" * _OVER), "text"),
    (lambda output: output.send_text(_AT_CAP_WIDE + "é"), "text"),  # bytes, not chars
    (lambda output: output.progress("x" * _OVER), "text"),
    (lambda output: output.notice("x" * _OVER), "text"),
    (lambda output: output.send(["a", "x" * _OVER]), "blocks[1].text"),
    (lambda output: output.send_text("a", history_text="x" * _OVER), "history_text"),
    (lambda output: output.send_text("a", failure_history_text="x" * _OVER),
     "failure_history_text"),
    (lambda output: output.send_file("chart.png", caption="x" * _OVER,
                                     history_policy="transient"), "caption"),
    (lambda output: output.send_file("chart.png", summary="x" * _OVER,
                                     history_policy="transient"), "summary"),
    # each block under the cap, the delivery's text (their texts joined) over it
    (lambda output: output.send(["x" * (MAX_TEXT_BYTES // 2)] * 3), "blocks"),
])
async def test_a_text_over_the_cap_is_refused_at_the_call(rt, bound, send, field) -> None:
    """A text no channel could deliver (the gateway's own client takes 4 MiB frames, and a
    frame carries the text twice) fails at the caller, not as a later ``failed`` or a
    delivery that breaks every reconnect."""
    session_id, route = bound
    error = await _refused_by_field(rt, session_id, route, send, field)
    assert "MAX_TEXT_BYTES" in str(error)


async def test_a_text_at_the_cap_is_delivered(rt, bound) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        wide = await ctx.output.send_text(_AT_CAP_WIDE)
        narrow = await ctx.output.send_text("x" * MAX_TEXT_BYTES)
    assert [await wide.wait(), await narrow.wait()] == ["delivered", "delivered"]
    assert [len(o.text.encode()) for o in route.delivered] == [MAX_TEXT_BYTES] * 2


@pytest.mark.parametrize(("source", "field"), [
    (ArtifactRef(path="chart.png", summary="x" * _OVER), "source.summary"),
    (ArtifactRef(path="chart.png", name="x" * _OVER), "source.name"),
    (ArtifactRef(path="chart.png", media_type="x" * _OVER), "source.media_type"),
])
async def test_an_artifact_refs_text_over_the_cap_is_refused_by_its_field(rt, bound, source,
                                                                         field) -> None:
    """A ref's presentation reaches the route in its block as the send's own would: the same
    cap, named by the ref's field (not only by the joined text, nor not at all)."""
    session_id, route = bound
    error = await _refused_by_field(
        rt, session_id, route,
        lambda output: output.send_file(source, caption="c", history_policy="transient"),
        field)
    assert "MAX_TEXT_BYTES" in str(error)


async def test_a_ready_made_blocks_name_over_the_cap_is_refused(rt, bound, workspace) -> None:
    session_id, route = bound
    block = MediaBlock(type="file", location=str(workspace / "chart.png"), source_kind="path",
                       name="x" * _OVER, fallback="f", caption="c")
    await _refused_by_field(
        rt, session_id, route,
        lambda output: output.send(["see:", block], history_policy="transient"),
        "blocks[1].name")


@pytest.mark.parametrize("block", [{"type": "control", "action": ""}, ControlBlock("")])
async def test_a_control_block_without_an_action_is_refused(rt, bound, block) -> None:
    """A control block is nothing but its action: an empty one tells the adapter nothing."""
    session_id, route = bound
    error = await _refused_by_field(
        rt, session_id, route,
        lambda output: output.send(["typing:", block], history_policy="transient"),
        "blocks[1].action")
    assert "must not be empty" in str(error)
