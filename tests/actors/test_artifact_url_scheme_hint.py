"""A URL of another scheme is refused with a hint that fits where it was given: a string
source may be a file so named (pass a ``pathlib.Path`` or ``./name``), but an
``ArtifactRef(url=...)`` is always a URL, so that hint there sent the host looking for a
file it never meant."""

from __future__ import annotations

from tidings import ArtifactRef

from .conftest import refused_by_field


async def test_a_refs_url_of_another_scheme_is_not_taken_for_a_file(rt, bound) -> None:
    session_id, route = bound
    error = await refused_by_field(
        rt, session_id, route,
        lambda ctx: ctx.output.send_file(ArtifactRef(url="ftp://example.com/a.txt"),
                                         history_text="a file"),
        "source.url")
    assert "only http(s) URLs are allowed" in str(error)
    assert "pathlib.Path" not in str(error)


async def test_a_string_of_another_scheme_still_says_how_to_send_a_file_so_named(
        rt, bound) -> None:
    session_id, route = bound
    error = await refused_by_field(
        rt, session_id, route,
        lambda ctx: ctx.output.send_file("ftp://example.com/a.txt", history_text="a file"),
        "source")
    assert "pass a pathlib.Path or './name'" in str(error)
