"""A batch too big for one frame's length prefix is committed in-process, like one that will
not pickle, instead of crashing the process writer (every request it held then failed "not
committed"). The real limit is 4 GiB (a 4-byte prefix); the test shrinks the prefix the host
side computes the limit from."""

from __future__ import annotations

from tidings.store import InsertRows, _writer_process
from tidings.store._writer import WriteRequest


def _request(text: str) -> WriteRequest:
    return WriteRequest([InsertRows("kv", ("k", "v"), (("k", text),))])


def test_a_batch_past_the_frame_limit_is_left_to_the_host(monkeypatch) -> None:
    monkeypatch.setattr(_writer_process, "HEADER", 1)  # frames up to 255 bytes
    assert _writer_process.encode_batch([_request("x")]) is not None
    assert _writer_process.encode_batch([_request("x" * 300)]) is None
