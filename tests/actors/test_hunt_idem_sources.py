"""URL sources that the URL parser itself refuses: refused by field, nothing written."""

from __future__ import annotations

import pytest

from tidings import ArtifactRef
from tidings.errors import ArtifactError

from .conftest import rows


@pytest.mark.parametrize(("source", "field"), [
    ("http://[::1/chart.png", "source"),
    (ArtifactRef(url="https://[fe80::1/x.png"), "source.url"),
])
async def test_a_url_with_a_broken_ipv6_host_is_refused_by_field(rt, db_path, source,
                                                                 field) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_image(source, history_policy="transient")
    assert caught.value.field == field
    assert rows(db_path, "SELECT COUNT(*) FROM outbox") == [(0,)]


async def test_an_artifact_ref_with_metadata_none_is_sent_with_empty_metadata(
        rt, db_path, workspace) -> None:
    """``metadata=None`` passes the field's check (None is no metadata, as everywhere else);
    it must not then fail while the send is built, with a TypeError naming nothing."""
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_image(ArtifactRef(path="chart.png", metadata=None),
                                             summary="a chart", history_policy="transient")
    assert rows(db_path, "SELECT delivery_id, metadata FROM artifacts") == [
        (handle.delivery_id, "{}")]
