"""An artifact's ``name`` is what a route calls the file (a platform's upload name, a file an
adapter saves by it): it must be one plain file name. A name chosen by the agent (an
``ArtifactRef``'s or a ready-made block's: an agent's output can be steered by what it read)
that was a path (``../../.ssh/authorized_keys``), ``..``, or held a control character went to
the route as it was; a name taken from a URL (``https://example.com/a/..``, ``%2E%2E``,
``%0A``) likewise. A chosen name is now refused by field; a URL's falls back to its host."""

from __future__ import annotations

import urllib.parse

import pytest
import trio

from tidings import ArtifactRef
from tidings.actors import MediaBlock
from tidings.errors import ValidationError

BAD_NAMES = ["../../.ssh/authorized_keys", "..", ".", "a/b.png", "a\\b.png", "a\x00b",
             "line\nbreak.png", "tab\t.png", "del\x7f.png", "n" * 256,
             "é" * 128]  # 256 bytes of UTF-8: over NAME_MAX


@pytest.mark.parametrize("name", BAD_NAMES)
async def test_a_chosen_name_that_is_no_plain_file_name_is_refused_by_field(
        rt, bound, name) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_image(ArtifactRef(path="chart.png", name=name),
                                         history_policy="transient")
        assert caught.value.field == "source.name"
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send([MediaBlock(type="image", location="chart.png", name=name,
                                               source_kind="path", fallback="chart")],
                                   history_policy="transient")
        assert caught.value.field == "blocks[0].name"
    assert route.delivered == []


async def test_plain_file_names_are_taken(rt, bound) -> None:
    session_id, route = bound
    names = ["report (final).pdf", "ünïcode.png", ".hidden", "a..b.png", "n" * 255]
    async with rt.open_turn(session_id) as ctx:
        handles = [await ctx.output.send_image(ArtifactRef(path="chart.png", name=name),
                                         history_policy="transient")
                   for name in names]
    with trio.fail_after(30):
        assert [await handle.wait() for handle in handles] == ["delivered"] * len(names)
    assert [o.blocks[0].name for o in route.delivered] == names


@pytest.mark.parametrize(("url", "name"), [
    ("https://example.com/charts/q3.png", "q3.png"),
    ("https://example.com/a/..", "example.com"),
    ("https://example.com/%2E%2E", "example.com"),
    ("https://example.com/x%0Ay.png", "example.com"),
    ("https://example.com/x%5Cy.png", "example.com"),  # a backslash
    ("https://example.com/", "example.com"),
])
async def test_a_urls_name_is_a_plain_file_name_or_its_host(rt, bound, url, name) -> None:
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_image(url, history_policy="transient")
    with trio.fail_after(30):
        assert await handle.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == [name]


@pytest.mark.parametrize("name", ["line\nbreak.png", "x\r\nContent-Type: a.png", "tab\t.png",
                                  "del\x7f.png", "..\\..\\evil.png"])
async def test_a_files_own_name_that_is_no_plain_file_name_is_refused_unless_one_is_chosen(
        rt, bound, workspace, name) -> None:
    """A workspace file's own name (what an agent wrote it as: steerable, as a chosen name
    is) went to the route as it was, a line break, a control character or backslashes in it,
    while the same name chosen by an ``ArtifactRef`` is refused and a URL's falls back to its
    host. Such a file is refused by its source's field, nothing written; with a plain name
    chosen for it (``ArtifactRef(path=..., name=...)``, a ready-made block's ``name``) it is
    sent under that name."""
    session_id, route = bound
    (workspace / name).write_bytes(b"\x89PNG")
    async with rt.open_turn(session_id) as ctx:
        for source, field in ((name, "source"), (ArtifactRef(path=name), "source.path")):
            with pytest.raises(ValidationError) as caught:
                await ctx.output.send_image(source, history_policy="transient")
            assert caught.value.field == field
            assert "name" in str(caught.value)
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send([MediaBlock(type="image", location=name, source_kind="path",
                                              name="", fallback="chart")],
                                  history_policy="transient")
        assert caught.value.field == "blocks[0].location"
        assert await rt.deliveries(session_id) == []
        handles = [await ctx.output.send_image(ArtifactRef(path=name, name="chart.png"),
                                               history_policy="transient"),
                   await ctx.output.send([MediaBlock(type="image", location=name,
                                                     source_kind="path", fallback="chart",
                                                     name="chart.png")],
                                         history_policy="transient")]
    with trio.fail_after(30):
        assert [await handle.wait() for handle in handles] == ["delivered"] * 2
    assert [o.blocks[0].name for o in route.delivered] == ["chart.png"] * 2


@pytest.mark.parametrize("url", ["https://..\\..\\evil.png", "https://../", "https://./a/..",
                                 "https://a b/x.png", "https://a<b>/x.png", "https://a|b/",
                                 "https://a^b/", "https://x%0Ay/", "https://exa\u3000mple.com/",
                                 "https://" + "a" * 300 + "/", "https://%2E%2E/",
                                 "https://a%20b/"])
async def test_a_url_whose_host_is_no_host_name_is_refused_by_field(rt, bound, url) -> None:
    """A URL with no plain last part is named after its host, but the parser takes for a
    host what none is: ``https://..\\..\\evil.png`` went to the route named
    ``..\\..\\evil.png``, ``https://../`` named ``..`` and a 300-letter host so named, the
    names a chosen one may not have; a space, ``<``, ``|``, ``^`` or a line break (``%0A``)
    in a host (what URL parsers refuse in a domain, percent-decoded: no client fetches it)
    was stored and sent as well. Such a URL is refused, naming its field, nothing written;
    a host percent-encoded as a parser decodes it (``ex%41mple.com``) is taken."""
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        for source, field in ((url, "source"), (ArtifactRef(url=url), "source.url")):
            with pytest.raises(ValidationError) as caught:
                await ctx.output.send_image(source, history_policy="transient")
            assert caught.value.field == field
            assert "host" in str(caught.value)
        assert await rt.deliveries(session_id) == []
        handles = [await ctx.output.send_image(url, history_policy="transient")
                   for url in ("https://[::1]/x.png", "https://例え.jp/", "https://a-b_c.d~e/",
                               "https://example.com:8080/a%20b.png", "https://ex%41mple.com/")]
    with trio.fail_after(30):
        assert [await handle.wait() for handle in handles] == ["delivered"] * 5
    assert [o.blocks[0].name for o in route.delivered] == ["x.png", "例え.jp", "a-b_c.d~e",
                                                           "a b.png", "ex%41mple.com"]


UNICODE_BREAKS = ["nel\x85.png", "csi\x9b31m.png", "line\u2028sep.png", "para\u2029sep.png"]


@pytest.mark.parametrize("name", UNICODE_BREAKS)
async def test_a_name_with_a_c1_control_or_a_unicode_line_break_is_no_plain_file_name(
        rt, bound, workspace, name) -> None:
    """'No control character' checked the ASCII ones only: a name holding a C1 control (NEL,
    U+0085, a line break to ``str.splitlines`` and so to the ``email`` package that builds a
    multipart upload's headers; CSI, U+009B, a terminal's escape) or a Unicode line or
    paragraph separator (U+2028, U+2029) was taken, chosen or a file's own, and went to the
    route as what it calls the file. Each is refused by field as ``\\n`` is, and a URL whose
    last part holds one is named after its host."""
    session_id, route = bound
    (workspace / name).write_bytes(b"\x89PNG")
    async with rt.open_turn(session_id) as ctx:
        for source, field in ((ArtifactRef(path="chart.png", name=name), "source.name"),
                              (name, "source"), (ArtifactRef(path=name), "source.path")):
            with pytest.raises(ValidationError) as caught:
                await ctx.output.send_image(source, history_policy="transient")
            assert caught.value.field == field
        assert await rt.deliveries(session_id) == []
        handle = await ctx.output.send_image(
            "https://example.com/" + urllib.parse.quote(name), history_policy="transient")
    with trio.fail_after(30):
        assert await handle.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["example.com"]
