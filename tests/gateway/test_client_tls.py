"""``wss://``: the gateway client checks the server's certificate against the system's trust
store and the URL's host name (sent as SNI), as trio-websocket's ``open_websocket_url`` did,
and a certificate it refuses is said at once. trio-websocket's reader task took the failed TLS
handshake for a closed connection and waited on for the websocket handshake: the client said
"no welcome ... within 30 s (not a tidings gateway, or a hung one?)", the certificate's error
lost, after the whole welcome timeout."""

from __future__ import annotations

import functools
import math
import pathlib
import ssl

import pytest
import trio
from trio_websocket import ConnectionRejected, HandshakeError

from tidings.channels import GatewayClient

from ..real_time import fail_after_real

# A self-signed certificate for localhost and 127.0.0.1 (EC P-256, valid until 2126).
CERT = """-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUfT/n7nIrEmSpocATTTZAAyUMpMMwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMzEzMzc1MFoYDzIxMjYxMTA5
MTMzNzUwWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQbdIWmBUDTm895y/H4nR5vLk2ASI3D5+KYF4sQbM3/VpLhXrDy9GZS
WCzWx40CiTbNICRrK6YS5wYP5R/n9Nmjo28wbTAdBgNVHQ4EFgQUudMqXVD+GLty
OzznTSscXAaWoMAwHwYDVR0jBBgwFoAUudMqXVD+GLtyOzznTSscXAaWoMAwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDSAAwRQIhALXwwXw7m58p5lTDNoHCJBtZhiNJaNq5MKIYnzs1MgC9AiB6
jxxBcm+7NWs6VtcCi5eaHLyD+2rj/uLNzbevhcUGeg==
-----END CERTIFICATE-----
"""
KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgN1PJWxGfB7f2Chpn
PLc0gVK0GB6B+eVET+yAY08yD1ihRANCAAQbdIWmBUDTm895y/H4nR5vLk2ASI3D
5+KYF4sQbM3/VpLhXrDy9GZSWCzWx40CiTbNICRrK6YS5wYP5R/n9Nmj
-----END PRIVATE KEY-----
"""


async def _not_found(stream: trio.SSLStream[trio.SocketStream]) -> None:
    """A web server over TLS: answers 404 to the handshake, or ends when TLS fails."""
    try:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                data = await stream.receive_some()
                if not data:
                    return
                request += data
            await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                  b"Connection: close\r\n\r\n")
    except trio.BrokenResourceError:  # the client refused the certificate
        pass


async def _serve(nursery: trio.Nursery, tmp_path: pathlib.Path, names: list[str | None], *,
                 host: str = "127.0.0.1") -> int:
    (tmp_path / "cert.pem").write_text(CERT)
    (tmp_path / "key.pem").write_text(KEY)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    context.sni_callback = lambda _socket, name, _context: names.append(name)
    [listener] = await nursery.start(functools.partial(
        trio.serve_ssl_over_tcp, _not_found, 0, context, host=host))
    return listener.transport_listener.socket.getsockname()[1]


async def _connect(url: str, welcome_timeout: float = 5) -> None:
    async with GatewayClient.connect(url, token="gateway-test-token", conversation="tls",
                                     welcome_timeout=welcome_timeout):
        pytest.fail("welcomed by a server that is no gateway")


async def test_a_certificate_it_does_not_trust_is_said_at_once(tmp_path: pathlib.Path) -> None:
    names: list[str | None] = []
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tmp_path, names)
        # No welcome bound: a client that waited for a welcome instead of saying the refused
        # certificate would wait until the hang guard fails the test.
        with fail_after_real(60), pytest.raises(HandshakeError) as caught:
            await _connect(f"wss://localhost:{port}", welcome_timeout=math.inf)
        nursery.cancel_scope.cancel()
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
    assert "self-signed certificate" in str(caught.value.__cause__)  # what tidings chat says
    assert names == ["localhost"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
async def test_a_trusted_certificate_for_the_host_is_taken(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))  # the trust store
    names: list[str | None] = []
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tmp_path, names)
        with pytest.raises(ConnectionRejected) as caught:  # TLS passed: the 404 is read
            await _connect(f"wss://{host}:{port}")
        nursery.cancel_scope.cancel()
    assert caught.value.status_code == 404
    assert names == [host if host == "localhost" else None]  # no SNI for an IP address


async def test_a_certificate_for_another_host_is_refused(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))
    names: list[str | None] = []
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tmp_path, names, host="127.0.0.2")
        with pytest.raises(HandshakeError) as caught:
            await _connect(f"wss://127.0.0.2:{port}")  # the certificate names 127.0.0.1
        nursery.cancel_scope.cancel()
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
    assert "mismatch" in str(caught.value.__cause__)
