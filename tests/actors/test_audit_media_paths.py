"""Audit of issue 3's media rules in combination: a symbolic link inside the workspace leading
outside, through every way a send names a path; URL sources http(s) only, through every way a
send names a URL; the default artifact root; and ``outbound.text``'s fallbacks for each source
form."""

from __future__ import annotations

import pathlib

import pytest
import trio

import tidings
from tidings import ArtifactRef
from tidings.actors import MediaBlock
from tidings.errors import ArtifactError
from tidings.testing import MemoryRoute

from .conftest import rows


def _nothing_written(db_path) -> None:
    for table in ("outbox", "work_items", "messages", "artifacts"):
        assert rows(db_path, f"SELECT count(*) FROM {table}") == [(0,)], table


def _block(location: str) -> MediaBlock:
    return MediaBlock(type="image", location=location, source_kind="path", name="x.png",
                      fallback="x")


_FORMS = {
    "send_image": (lambda out, s: out.send_image(s, history_text="an image"), "source"),
    "path object": (lambda out, s: out.send_image(pathlib.Path(s), history_text="an image"),
                    "source"),
    "ref": (lambda out, s: out.send_file(ArtifactRef(path=s), history_text="a file"),
            "source.path"),
    "mapping": (lambda out, s: out.send(["look", {"type": "image", "source": s}],
                                        history_text="an image"), "blocks[1].source"),
    "ready-made": (lambda out, s: out.send(["look", _block(s)], history_text="an image"),
                   "blocks[1].location"),
    "transient": (lambda out, s: out.send_file(s, history_policy="transient"), "source"),
}


@pytest.mark.parametrize("form", list(_FORMS))
@pytest.mark.parametrize("link", ["file", "directory", "chain", "absolute"])
async def test_a_link_in_the_workspace_leading_outside_is_refused_in_every_form(
        rt, db_path, workspace, tmp_path, form, link) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(b"\x89PNG")
    if link == "file":
        (workspace / "innocent.png").symlink_to(outside / "secret.png")
        source = "innocent.png"
    elif link == "directory":
        (workspace / "pics").symlink_to(outside)
        source = "pics/secret.png"
    elif link == "chain":  # a link to a link in the workspace, the last leading out
        (workspace / "second.png").symlink_to(outside / "secret.png")
        (workspace / "first.png").symlink_to("second.png")
        source = "first.png"
    else:
        (workspace / "innocent.png").symlink_to(outside / "secret.png")
        source = str(workspace / "innocent.png")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file"})
    rt.router.bind(session_id, route)
    send, field = _FORMS[form]
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await send(ctx.output, source)
    assert caught.value.field == field
    _nothing_written(db_path)
    assert route.attempted == []


@pytest.mark.parametrize("form", list(_FORMS))
async def test_a_link_in_the_workspace_to_another_sessions_root_is_refused(
        rt, db_path, workspace, form) -> None:
    session_id = await rt.create_session(channel="web")
    other = await rt.create_session(channel="web")
    theirs = rt.artifact_root_for(other)
    await trio.Path(theirs).mkdir(parents=True)
    (theirs / "private.png").write_bytes(b"\x89PNG")
    (workspace / "innocent.png").symlink_to(theirs / "private.png")
    send, field = _FORMS[form]
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await send(ctx.output, "innocent.png")
    assert caught.value.field == field
    _nothing_written(db_path)


@pytest.mark.parametrize("form", list(_FORMS))
async def test_a_link_that_stays_in_the_workspace_is_sent(
        rt, db_path, workspace, autojump_clock, form) -> None:
    (workspace / "real").mkdir()
    (workspace / "real" / "chart.png").write_bytes(b"\x89PNG")
    (workspace / "alias.png").symlink_to(workspace / "real" / "chart.png")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file"})
    rt.router.bind(session_id, route)
    send, _ = _FORMS[form]
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await send(ctx.output, "alias.png")
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    [media] = [b for b in outbound.blocks if b.type in ("image", "file")]
    assert media.location == str(await trio.Path(workspace / "real" / "chart.png").resolve())


@pytest.mark.parametrize("url", ["ftp://example.com/a.png", "file:///etc/passwd",
                                 "ws://example.com/a.png", "data:image/png;base64,AAAA",
                                 "javascript:alert(1)", "HTTPX://example.com/a.png",
                                 "gopher://example.com/a.png"])
@pytest.mark.parametrize("form", ["send_image", "ref", "mapping", "ready-made"])
async def test_a_url_that_is_not_http_is_refused_in_every_form(rt, db_path, form,
                                                               url) -> None:
    session_id = await rt.create_session(channel="web")
    fields = {"send_image": "source", "ref": "source.url", "mapping": "blocks[1].source",
              "ready-made": "blocks[1].location"}
    sends = {
        "send_image": lambda out: out.send_image(url, history_text="an image"),
        "ref": lambda out: out.send_file(ArtifactRef(url=url), history_text="a file"),
        "mapping": lambda out: out.send(["look", {"type": "image", "source": url}],
                                        history_text="an image"),
        "ready-made": lambda out: out.send(["look", _block(url)], history_text="an image"),
    }
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await sends[form](ctx.output)
    assert caught.value.field == fields[form]
    _nothing_written(db_path)


@pytest.mark.parametrize("url", ["https://example.com/a.png", "http://example.com/a.png",
                                 "HTTPS://EXAMPLE.COM/a.png"])
async def test_an_http_url_is_sent_as_it_is(rt, db_path, autojump_clock, url) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image"})
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_image(url, history_text="an image")
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    [block] = outbound.blocks
    assert (block.location, block.source_kind) == (url, "url")
    assert outbound.text == "an image"


async def test_the_default_artifact_root_is_beside_the_database(
        db_path, workspace, autojump_clock) -> None:
    """No ``artifact_root=``: a session sends a file of ``<database directory>/artifacts/<id>``
    given by its full path."""
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            root = db_path.parent / "artifacts" / session_id
            assert rt.artifact_root_for(session_id) == root
            await trio.Path(root).mkdir(parents=True)
            (root / "report.pdf").write_bytes(b"%PDF")
            route = MemoryRoute(capabilities={"text", "file"})
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_file(str(root / "report.pdf"),
                                                    history_policy="transient")
            assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert outbound.blocks[0].location == str(root / "report.pdf")
    assert outbound.text == "report.pdf"


@pytest.mark.parametrize(("source", "kwargs", "expected"), [
    (ArtifactRef(path="chart.png", summary="ref summary"), {"history_text": "hist"},
     "ref summary"),
    (ArtifactRef(path="chart.png", summary="ref summary"),
     {"summary": "own summary", "history_text": "hist"}, "own summary"),
    (ArtifactRef(path="chart.png", summary="ref summary"),
     {"caption": "cap", "history_text": "hist"}, "cap"),
    (ArtifactRef(path="chart.png", name="named.png"), {"history_policy": "transient"},
     "named.png"),
    (ArtifactRef(path="chart.png"), {"history_text": "hist"}, "hist"),
    ("https://example.com/dir/pic.png?x=1", {"history_policy": "transient"}, "pic.png"),
    ("https://example.com/dir/pic.png", {"history_policy": "transient",
                                          "history_text": "hist"}, "hist"),
])
async def test_outbound_text_falls_back_caption_summary_history_text_name_for_each_source(
        rt, workspace, autojump_clock, source, kwargs, expected) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    rich, plain = MemoryRoute(capabilities={"text", "image"}), MemoryRoute()
    with trio.fail_after(30):  # hang guard
        for route in (rich, plain):  # the media's text and a text-only route's fallback
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_image(source, **kwargs)
            assert await handle.wait() == "delivered"
    assert rich.delivered[0].text == plain.delivered[0].text == expected
    assert [b.as_dict() for b in plain.delivered[0].blocks] == [
        {"type": "text", "text": expected}]
