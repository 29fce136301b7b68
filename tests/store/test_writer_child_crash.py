"""The writer process (``writer="process"``, ``tidings serve --writer process``) shares its
host's stderr: an unexpected crash in it (a bug in a batch's code, a database it cannot open)
printed a plain traceback there, among the host's ``--log-json`` lines, which a log reader
then could not parse. The child now reports the crash on its answers pipe and prints nothing;
the host logs it in its own form (``event=writer_process_crashed``, the child's traceback as
the ``traceback`` field) and fails the writer with an error that says what crashed."""

from __future__ import annotations

import json
import logging

import pytest

from tidings.errors import StoreError
from tidings.store import Execute, open_store
from tidings.supervisor._logging import parse_fields

from ..real_time import fail_after_real

_HOOK = """\
import tidings.store._writer_child as child

def _crash(*args, **kwargs):
    raise RuntimeError("boom in the writer child")

child.{name} = _crash
"""


def _hooked(tmp_path, monkeypatch, name: str) -> None:
    """The writer child, started with the host's ``sys.path``, has *name* crash."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_HOOK.format(name=name))
    monkeypatch.syspath_prepend(str(hooks))


def _leaves(error: BaseException | None) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [] if error is None else [error]


def _crash_logged(caplog) -> dict[str, str]:
    logged = [parse_fields(r.getMessage()) for r in caplog.records
              if "writer_process_crashed" in r.getMessage()]
    assert len(logged) == 1, caplog.text
    fields = logged[0]
    assert fields is not None, caplog.text  # key=value throughout: a JSON line reads it
    assert json.loads(json.dumps(fields)) == fields
    assert "RuntimeError: boom in the writer child" in fields["error"]
    assert "Traceback (most recent call last)" in fields["traceback"]
    return fields


@pytest.mark.parametrize("name", ["execute_batch", "connect_writer"])
async def test_a_crash_in_the_writer_process_is_logged_by_the_host_not_printed(
        tmp_path, monkeypatch, capfd, caplog, name) -> None:
    _hooked(tmp_path, monkeypatch, name)
    caplog.set_level(logging.INFO, logger="tidings")
    raised: Exception | None = None
    with fail_after_real(30):  # a real child process
        try:
            async with open_store(tmp_path / "a.db", writer="process") as store:
                await store.commit([Execute("CREATE TABLE kv (k TEXT)")])
        except Exception as exc:  # noqa: BLE001 - a StoreError, or a group holding them
            raised = exc
    assert any(isinstance(leaf, StoreError) and "boom in the writer child" in str(leaf)
               for leaf in _leaves(raised)), repr(raised)
    _crash_logged(caplog)
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    assert "boom" not in err, err
