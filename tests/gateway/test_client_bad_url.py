"""A URL ``GatewayClient.connect`` cannot use is bad input: a :class:`ValidationError` (a
``ValueError``, in ``tidings.errors`` as README says every exception is) naming ``url``,
before any connection is tried; not a bare ``ValueError`` about a "WebSocket URL", nor an
``AttributeError`` for one that is no string, nor a ``UnicodeError`` from the name lookup for a
host no lookup takes."""

from __future__ import annotations

import pytest

from tidings.channels import GatewayClient
from tidings.errors import ValidationError


@pytest.mark.parametrize("url", [
    pytest.param("http://127.0.0.1:1/", id="http"),
    pytest.param("127.0.0.1:8080", id="no-scheme"),
    pytest.param("ws://", id="no-host"),
    pytest.param("ws://127.0.0.1:99999/", id="port-out-of-range"),
    # A server listening on port 0 took a free one (its log says which): 0 reaches nothing.
    pytest.param("ws://127.0.0.1:0/", id="port-zero"),
    pytest.param("ws://[::1/", id="broken-ipv6"),
    pytest.param("ws://" + "a" * 64 + ".example:80/", id="label-too-long"),
    pytest.param("ws://a..example:80/", id="empty-label"),
    pytest.param(8080, id="not-a-string"),
    pytest.param(b"ws://127.0.0.1:1/", id="bytes"),
])
async def test_a_url_it_cannot_use_is_a_validation_error_naming_url(url) -> None:
    with pytest.raises(ValidationError) as caught:
        async with GatewayClient.connect(url, token="t" * 32, conversation="c"):
            raise AssertionError("connected")
    assert caught.value.field == "url"
    assert str(caught.value).startswith("url: "), str(caught.value)
