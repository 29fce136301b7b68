"""The writer child joins the batches it has in hand into one transaction.

While the child commits a batch, the host sends the next ones; the commit (its fsync) is most of
a batch's time, so the batches waiting in the pipe commit together, each still answered on its
own and in order. Driven here through ``serve`` with the pipe's bytes given at once, which is
what the child reads when the host got ahead of it.
"""

from __future__ import annotations

import io
import pickle
import sqlite3

import pytest

from tidings.store import Execute, InsertRows
from tidings.store._connect import connect_writer, prepare_path
from tidings.store._schema import migrate
from tidings.store._writer_child import (
    HEADER,
    JOIN_UP_TO,
    RESUME,
    UNREADABLE,
    frame,
    serve,
)


def _row(key: str) -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, "v"),))


def _batch(*requests: list) -> bytes:
    return frame(pickle.dumps(list(requests)))


def _answers(output: bytes) -> list:
    """Every answer the child wrote after its ``ready``."""
    answers, rest = [], memoryview(output)
    while rest:
        end = HEADER + int.from_bytes(rest[:HEADER], "big")
        answers.append(pickle.loads(rest[HEADER:end]))
        rest = rest[end:]
    assert answers[0][0] == "ready"
    return answers[1:]


def _serve(tmp_path, pipe: bytes) -> list:
    path = tmp_path / "w.db"
    conn = connect_writer(prepare_path(path))
    migrate(conn)  # a tidings database, as the child is only ever given
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
    conn.close()
    out = io.BytesIO()
    serve(path, "FULL", io.BytesIO(pipe), out)
    return _answers(out.getvalue())


def _keys(tmp_path) -> list[str]:
    conn = sqlite3.connect(tmp_path / "w.db")
    try:
        return [k for (k,) in conn.execute("SELECT k FROM kv ORDER BY k")]
    finally:
        conn.close()


def test_batches_in_hand_commit_together_and_are_answered_each_in_order(tmp_path) -> None:
    answers = _serve(tmp_path, _batch([_row("a")], [_row("b")])
                     + _batch([_row("c")]) + _batch([Execute("SELECT count(*) FROM kv")]))
    # One transaction: the three inserts ran as one statement (counted in the first answer);
    # the read in the last batch sees the rows of the batches before it.
    assert answers == [([[None], [None]], None, True, 2),
                       ([[None]], None, True, 0),
                       ([[[(3,)]]], None, True, 0)]
    assert _keys(tmp_path) == ["a", "b", "c"]


def test_a_request_that_fails_in_a_joined_batch_fails_alone(tmp_path) -> None:
    answers = _serve(tmp_path, _batch([_row("a")]) + _batch([_row("b")], [_row("a")])
                     + _batch([_row("c")]))
    assert [answer[0] for answer in answers] == [[[None]], [[None], None], [[None]]]
    assert [answer[1] for answer in answers[::2]] == [None, None]
    errors = answers[1][1]
    assert errors[0] is None
    assert errors[1][0] == "conflict"  # its neighbour in the batch and the joined ones commit
    assert _keys(tmp_path) == ["a", "b", "c"]


def test_a_batch_that_will_not_load_is_not_joined_and_stops_the_batches_behind_it(
        tmp_path) -> None:
    unloadable = frame(b"\x80\x05not a pickle")
    answers = _serve(tmp_path, _batch([_row("a")]) + unloadable + _batch([_row("c")])
                     + frame(RESUME) + _batch([_row("d")]))
    assert answers[0] == ([[None]], None, True, 1)
    assert [answer[0] for answer in answers[1:3]] == [UNREADABLE, UNREADABLE]
    assert answers[3] == ([[None]], None, True, 1)  # after RESUME, as before
    assert _keys(tmp_path) == ["a", "d"]  # "c" is the host's to commit, in its turn


def test_a_join_stops_at_join_up_to_requests(tmp_path) -> None:
    half = JOIN_UP_TO // 2 + 1
    batches = [[[_row(f"{n}-{i:05}")] for i in range(half)] for n in range(3)]
    answers = _serve(tmp_path, b"".join(_batch(*batch) for batch in batches))
    # The first two join (the first is under the bound), the third is a transaction of its own.
    assert [answer[3] for answer in answers] == [1, 0, 1]
    assert len(_keys(tmp_path)) == 3 * half


def test_input_that_ends_inside_a_frame_runs_the_whole_ones_before_it(tmp_path) -> None:
    cut = _batch([_row("b")])[:-1]
    with pytest.raises(EOFError):
        _serve(tmp_path, _batch([_row("a")]) + cut)
    assert _keys(tmp_path) == ["a"]
