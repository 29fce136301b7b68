"""Media sends: sources, root checks, fallbacks, degraded delivery (DESIGN.md "Artifacts")."""

from __future__ import annotations

import os

import pytest
import trio

import tidings
from tidings import ArtifactRef
from tidings.errors import ArtifactError, ValidationError
from tidings.testing import MemoryRoute

from .conftest import refuse_as_runtimes_own, rows


@pytest.fixture
async def bound(rt, workspace):
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file"})
    rt.router.bind(session_id, route)
    return session_id, route


async def test_a_workspace_image_is_sent_with_its_artifact_record(rt, bound, workspace,
                                                                  db_path) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_image("chart.png", caption="Trend chart",
                                             history_text="Sent a trend chart.",
                                             artifact_metadata={"w": 10})
    assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    [block] = outbound.blocks
    assert (block.type, block.location, block.name) == (
        "image", str(workspace / "chart.png"), "chart.png")
    assert outbound.text == "Trend chart"
    [(owner, delivery, kind, location, metadata)] = rows(
        db_path, "SELECT owner_turn_id, delivery_id, block_type, location, metadata "
                 "FROM artifacts")
    assert (owner, delivery, kind, location) == (ctx.turn_id, handle.delivery_id, "image",
                                                 str(workspace / "chart.png"))
    assert metadata == '{"w": 10}'
    [message] = await rt.history(session_id)
    assert (message.kind, message.text) == ("image", "Sent a trend chart.")


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"caption": "cap", "summary": "sum", "history_text": "hist"}, "cap"),
    ({"summary": "sum", "history_text": "hist"}, "sum"),
    ({"history_text": "hist"}, "hist"),
    ({"history_policy": "transient"}, "chart.png"),
])
async def test_media_text_is_caption_then_summary_then_history_text_then_name(
        rt, bound, kwargs, expected) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file("chart.png", **kwargs)
    await handle.wait()
    assert route.delivered[0].text == expected


async def test_a_route_without_the_block_type_gets_the_text_fallback(rt, workspace,
                                                                    db_path) -> None:
    (workspace / "clip.mp4").write_bytes(b"...")
    session_id = await rt.create_session(channel="sms")
    route = MemoryRoute()  # no capabilities: text only
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_video("clip.mp4", summary="Demo clip",
                                             history_text="Sent a demo clip.")
    assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert [b.as_dict() for b in outbound.blocks] == [{"type": "text", "text": "Demo clip"}]
    assert outbound.text == "Demo clip"
    [(data,)] = rows(db_path, "SELECT data FROM events WHERE type = 'delivery.degraded' "
                              "AND delivery_id = ?", handle.delivery_id)
    assert '"missing": ["video"]' in data


async def test_non_text_history_needs_history_text(rt, bound, db_path) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_image("chart.png", caption="no history text")
        assert caught.value.field == "history_text"
        handle = await ctx.output.send_image("chart.png", history_policy="transient")
    await handle.wait()
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]


async def test_a_raw_artifact_dict_is_a_type_error_before_any_history_rule(rt, bound) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError, match=r"summary=\.\.\. and artifact_metadata=\.\.\."):
            await ctx.output.send_image({"path": "chart.png"}, history_policy="bogus",
                                        visible=False)


async def test_paths_outside_the_roots_are_rejected(rt, bound, tmp_path, workspace,
                                                   db_path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (workspace / "link.txt").symlink_to(outside)
    session_id, _ = bound
    bad_sources = ["../secret.txt", str(outside), "link.txt", "missing.png",
                   ArtifactRef(path="link.txt"), ArtifactRef(path=str(outside)),
                   "ftp://example.com/a.png", "file:///etc/passwd", "sub/../chart.png"]
    async with rt.open_turn(session_id) as ctx:
        for source in bad_sources:
            with pytest.raises(ArtifactError) as caught:
                await ctx.output.send_file(source, history_policy="transient")
            assert caught.value.field.startswith("source"), source
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]


@pytest.mark.parametrize("source", ["/".join(["d" * 200] * 15) + "/missing.png",
                                    "n" * 300 + ".png", "line\nbreak\x1b[2J.png"],
                         ids=["missing, 3,000 characters", "name too long", "control chars"])
async def test_a_path_refusal_quotes_the_path_cut_and_escaped(rt, bound, source) -> None:
    """A refusal quoted the path whole and raw ('no such file: ...', 'cannot resolve ...:
    [Errno 36] File name too long: ...', twice): a path can be about 2 MB (MAX_TEXT_BYTES), so
    one refused send made an exception, and a log line, of megabytes, and a line break or an
    escape sequence in it went into the log as it was. Quoted as other refusals are: its repr,
    cut at 80 characters."""
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(source, history_policy="transient")
    message = str(caught.value)
    assert caught.value.field == "source"
    assert len(message) < 300, message
    assert "\n" not in message
    assert "\x1b" not in message


async def test_the_session_artifact_root_and_urls_and_refs_are_accepted(rt, bound,
                                                                       db_path) -> None:
    session_id, route = bound
    root = rt.artifact_root_for(session_id)
    assert root == db_path.parent / "artifacts" / session_id
    await _mkdir(root)
    (root / "report.pdf").write_bytes(b"%PDF")
    async with rt.open_turn(session_id) as ctx:
        a = await ctx.output.send_file(str(root / "report.pdf"), summary="Report PDF",
                                       history_text="Sent a report.")
        b = await ctx.output.send_image("https://example.com/img/cat.png",
                                        history_policy="transient")
        c = await ctx.output.send_file(ArtifactRef(path="chart.png", name="Chart",
                                                   summary="A chart"),
                                       history_policy="transient")
    for handle in (a, b, c):
        assert await handle.wait() == "delivered"
    texts = [o.text for o in route.delivered]
    assert texts == ["Report PDF", "cat.png", "A chart"]
    assert route.delivered[1].blocks[0].source_kind == "url"


async def test_send_accepts_blocks_strings_mappings_and_lists(rt, bound) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send(
            ["hello", {"type": "image", "source": "chart.png", "caption": "c"},
             {"type": "control", "action": "typing"}], history_text="hello + chart")
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send({"type": "hologram"})
        assert caught.value.field == "blocks[0].type"
        with pytest.raises(TypeError):
            await ctx.output.send([42])
    await handle.wait()
    [outbound] = route.delivered
    assert [b.type for b in outbound.blocks] == ["text", "image"]  # control not rendered
    assert outbound.text == "hello\nc"


async def _mkdir(path) -> None:
    os.makedirs(path, exist_ok=True)


async def test_a_repeated_media_send_with_an_idempotency_key_records_one_artifact(
        rt, bound, db_path) -> None:
    session_id, route = bound
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_image("chart.png", history_text="Sent a chart.",
                                                idempotency_key="chart")
            again = await ctx.output.send_image("chart.png", history_text="Sent a chart.",
                                                idempotency_key="chart")
            assert await first.wait() == "delivered"
            later = await ctx.output.send_image("chart.png", history_text="Sent a chart.",
                                                idempotency_key="chart")
    assert first.delivery_id == again.delivery_id == later.delivery_id
    assert rows(db_path, "SELECT delivery_id FROM artifacts") == [(first.delivery_id,)]
    assert [d.delivery_id for d in await rt.deliveries(session_id=session_id)] == [
        first.delivery_id]
    assert len(await rt.history(session_id)) == 1
    assert [o.delivery_id for o in route.delivered] == [first.delivery_id]


@pytest.fixture
async def rooted(db_path, workspace, tmp_path):
    """A runtime with ``artifact_root`` set, a session, and a file in the session's root."""
    custom = tmp_path / "custom_artifacts"
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    artifact_root=custom) as runtime:
        session_id = await runtime.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        runtime.router.bind(session_id, route)
        yield runtime, session_id, route, custom


async def test_a_file_in_the_configured_artifact_root_is_accepted(rooted, db_path) -> None:
    rt, session_id, route, custom = rooted
    root = rt.artifact_root_for(session_id)
    assert root == custom.resolve() / session_id
    await _mkdir(root)
    (root / "report.pdf").write_bytes(b"%PDF")
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_file(str(root / "report.pdf"),
                                                history_policy="transient")
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert outbound.blocks[0].location == str(root / "report.pdf")
    assert rows(db_path, "SELECT location FROM artifacts") == [(str(root / "report.pdf"),)]


async def test_with_a_configured_root_the_default_root_is_refused(rooted, db_path,
                                                                  workspace) -> None:
    rt, session_id, _, _ = rooted
    default = db_path.parent / "artifacts" / session_id
    assert not default.resolve().is_relative_to(workspace.resolve())
    await _mkdir(default)
    (default / "old.pdf").write_bytes(b"%PDF")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(str(default / "old.pdf"), history_policy="transient")
    assert caught.value.field == "source"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]


async def test_another_sessions_artifact_root_is_refused(rooted, db_path) -> None:
    rt, session_id, _, _ = rooted
    other = await rt.create_session(channel="web")
    theirs = rt.artifact_root_for(other)
    await _mkdir(theirs)
    (theirs / "private.pdf").write_bytes(b"%PDF")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(str(theirs / "private.pdf"),
                                       history_policy="transient")
        assert caught.value.field == "source"
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(ArtifactRef(path=str(theirs / "private.pdf")),
                                       history_policy="transient")
        assert caught.value.field == "source.path"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]


async def test_a_symlink_in_the_session_root_pointing_outside_is_refused(rooted, db_path,
                                                                         tmp_path) -> None:
    rt, session_id, _, _ = rooted
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    root = rt.artifact_root_for(session_id)
    await _mkdir(root)
    (root / "innocent.txt").symlink_to(outside)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(str(root / "innocent.txt"), history_policy="transient")
    assert caught.value.field == "source"
    assert "outside" in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]


@pytest.mark.parametrize("target", ["outside", "another session's root"])
async def test_a_session_root_that_is_a_symlink_gives_no_access_where_it_leads(
        tmp_path, target) -> None:
    """Whoever can make the session's artifact directory (an agent saving its first file
    there; with ``tidings serve``'s defaults the artifacts directory is in the workspace) can
    make it a symbolic link instead: to ``/``, or to another session's root. What is through
    it is where the link leads, as for a link inside the root: outside both roots, or in
    another session's; refused, nothing written."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    db = workspace / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        other = await rt.create_session(channel="web")
        theirs = rt.artifact_root_for(other)
        await _mkdir(theirs)
        (theirs / "private.pdf").write_bytes(b"%PDF")
        root = rt.artifact_root_for(session_id)
        if target == "outside":
            root.symlink_to(tmp_path)
            sources = [str(secret), str(root / "secret.txt"),
                       ArtifactRef(path=root / "secret.txt")]
        else:
            root.symlink_to(theirs)
            sources = [str(theirs / "private.pdf"), str(root / "private.pdf"),
                       "artifacts/" + session_id + "/private.pdf"]
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                for source in sources:
                    with pytest.raises(ArtifactError) as caught:
                        await ctx.output.send_file(source, history_policy="transient")
                    assert caught.value.field.startswith("source"), source
    assert rows(db, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db, "SELECT count(*) FROM artifacts") == [(0,)]


async def test_policy_and_visibility_are_checked_before_paths(rt, bound, db_path) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_file("../escape.txt", history_policy="bogus")
        assert not isinstance(caught.value, ArtifactError)
        assert caught.value.field == "history_policy"
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_file("../escape.txt", history_policy="transient",
                                       visible=False)
        assert not isinstance(caught.value, ArtifactError)
        assert caught.value.field == "visible"
        with pytest.raises(ValidationError) as caught:  # persist needs history_text first
            await ctx.output.send_file("../escape.txt")
        assert not isinstance(caught.value, ArtifactError)
        assert caught.value.field == "history_text"
        with pytest.raises(ArtifactError) as caught:  # and only then the path
            await ctx.output.send_file("../escape.txt", history_policy="transient")
        assert caught.value.field == "source"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_a_raw_dict_source_is_a_type_error_before_a_bad_policy(rt, bound) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError, match="raw artifact dict"):
            await ctx.output.send_file({"path": "../escape.txt"}, history_policy="bogus")
        with pytest.raises(TypeError, match=r"blocks\[0\]\.source: a raw artifact dict"):
            await ctx.output.send([{"type": "file", "source": {"path": "chart.png"}}],
                                  history_policy="bogus", visible=False)


@pytest.mark.parametrize(("ref", "message"), [
    (ArtifactRef(path={"path": "chart.png"}), "source.path: a raw artifact dict"),
    (ArtifactRef(path=42), "source.path: expected a path"),
    (ArtifactRef(path=b"chart.png"), "source.path: expected a path"),
    (ArtifactRef(path=ArtifactRef(path="chart.png")), "source.path: expected a path"),
    (ArtifactRef(url=42), "source.url: expected str"),
    (ArtifactRef(url=b"https://example.com/a.png"), "source.url: expected str"),
])
async def test_an_artifact_refs_path_or_url_of_the_wrong_type_is_a_type_error_first(
        rt, bound, db_path, ref, message) -> None:
    """The source's type is checked before any history rule (DESIGN.md, the SDK's
    docstring), a ready-made block's ``location`` too; an ``ArtifactRef``'s ``path=`` or
    ``url=`` of the wrong type (a raw artifact dict among them) was found only with the
    paths, after the policy, visibility and ``history_text`` had been refused."""
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        for controls in ({"history_policy": "bogus"}, {"history_policy": "transient",
                                                       "visible": False}, {}):
            with pytest.raises(TypeError, match=message.replace(".", r"\.")):
                await ctx.output.send_file(ref, **controls)
            with pytest.raises(TypeError, match=r"blocks\[1\]\." + message.replace(".", r"\.")):
                await ctx.output.send(["look", {"type": "file", "source": ref}], **controls)
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_an_artifacts_metadata_is_stored_as_json_writes_it_with_one_value_a_key(
        rt, bound, db_path) -> None:
    """An ``ArtifactRef``'s ``metadata`` and the send's ``artifact_metadata`` are merged (the
    send's wins) as JSON keys: ``1`` and ``"1"`` are one key, not two written into one object
    (a JSON reader keeps one of them, the other lost)."""
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(
            ArtifactRef(path="chart.png", metadata={"1": "ref", "r": True}),
            artifact_metadata={1: "mine", "n": [1]}, history_policy="transient")
    assert await handle.wait() == "delivered"
    assert rows(db_path, "SELECT metadata FROM artifacts") == [
        ('{"1": "mine", "r": true, "n": [1]}',)]


async def test_the_runtimes_own_files_in_the_workspace_are_refused(tmp_path) -> None:
    """With the database inside the workspace (``tidings serve``'s default: ``./tidings.db``
    in ``.``, so the artifacts directory is ``./artifacts``), another session's artifact root
    and the database's own files are inside the workspace too; a turn may send neither: the
    first is that session's, the second holds every session's history (and the gateway's
    token beside it). A file of the workspace's own is sent as before."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = workspace / "tidings.db"
    (workspace / "notes.txt").write_text("mine")
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        other = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        for owner in (session_id, other):
            await _mkdir(rt.artifact_root_for(owner))
            (rt.artifact_root_for(owner) / "report.pdf").write_bytes(b"%PDF")
        (workspace / "tidings.db.token").write_text("secret-token")
        theirs = rt.artifact_root_for(other) / "report.pdf"
        refused = [str(theirs), "artifacts/" + other + "/report.pdf", ArtifactRef(path=theirs),
                   "tidings.db", "tidings.db-wal", "tidings.db-shm", "tidings.db.runtime.lock",
                   "tidings.db.token", str(db)]
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(ctx, refused)
                mine = await ctx.output.send_file(
                    str(rt.artifact_root_for(session_id) / "report.pdf"),
                    history_policy="transient")
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
            assert [await mine.wait(), await notes.wait()] == ["delivered", "delivered"]
    assert [o.blocks[0].name for o in route.delivered] == ["report.pdf", "notes.txt"]
    assert rows(db, "SELECT count(*) FROM artifacts") == [(2,)]


async def test_a_workspace_that_is_the_artifacts_directory_keeps_its_files(tmp_path) -> None:
    """``artifact_root`` set to the workspace itself (or above it) is the host sharing it: its
    files are the workspace's, not another session's artifacts."""
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "notes.txt").write_text("mine")
    for artifact_root in (workspace, tmp_path):
        async with tidings.open_runtime(tmp_path / "state" / "t.db", workspace=workspace,
                                        artifact_root=artifact_root) as rt:
            session_id = await rt.create_session(channel="web")
            route = MemoryRoute(capabilities={"text", "file"})
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_file("src/notes.txt",
                                                    history_policy="transient")
            assert await handle.wait() == "delivered"


async def test_the_token_beside_a_symbolic_link_to_the_database_is_the_runtimes_own(
        tmp_path) -> None:
    """``tidings serve`` keeps its gateway token beside the database's name as given
    (``<db>.token``); when that name is a symbolic link (the database kept on another disk),
    the token sits beside the link, in the workspace, while SQLite's files are beside the
    file the link leads to. Only the latter were refused: a turn could send the token."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "data").mkdir()
    link = workspace / "tidings.db"
    link.symlink_to(tmp_path / "data" / "real.db")
    (workspace / "tidings.db.token").write_text("secret-token")
    (workspace / "tidings.db.notes").write_text("mine")
    async with tidings.open_runtime(link, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(ctx, ("tidings.db.token",
                                                   str(workspace / "tidings.db.token"),
                                                   ArtifactRef(path="tidings.db.token")))
                notes = await ctx.output.send_file("tidings.db.notes",
                                                   history_policy="transient")
            assert await notes.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["tidings.db.notes"]


async def test_the_database_under_another_name_is_the_runtimes_own(tmp_path) -> None:
    """The database's files were told by their names (``<database>`` + a suffix, beside it),
    so the same file under another name was sent: on a case-insensitive file system (macOS's,
    Windows'), ``TIDINGS.DB`` for ``tidings.db``, which any turn can name; here, as Linux's
    names are exact, a hard link in the workspace. It is every session's history (and the
    token the gateway's clients present). The file is now told by its identity too."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = workspace / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        (workspace / "tidings.db.token").write_text("secret-token")
        os.link(db, workspace / "history.bin")
        os.link(workspace / "tidings.db.token", workspace / "token.txt")
        (workspace / "notes.txt").write_text("mine")
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(
                    ctx, ("history.bin", "token.txt", ArtifactRef(path="history.bin")))
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
            assert await notes.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["notes.txt"]
