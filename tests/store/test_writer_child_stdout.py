"""What the writer child's interpreter prints is no part of its answers.

The child answered on its stdout, which is also where anything its interpreter prints before
the child's own code runs goes: a ``sitecustomize`` or a ``.pth`` line of the host's ``sys.path``
(the child runs with it) that prints a banner. The host read those bytes as a frame's length
prefix ("site" is 1.9 billion) and waited for ever: ``open_store(writer="process")``, and so
``open_runtime`` and ``tidings serve --writer process``, never opened.
"""

from __future__ import annotations

import trio

from tidings.store import Execute, InsertRows, open_store


async def test_a_site_hook_that_prints_at_start_up_leaves_the_writer_process_working(
        tmp_path, monkeypatch) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("print('site hook says hello')\n")
    monkeypatch.syspath_prepend(str(hooks))  # the writer child gets the host's sys.path
    with trio.fail_after(30):  # hang guard (real time: a real child process)
        async with open_store(tmp_path / "a.db", writer="process") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([InsertRows("kv", ("k", "v"), (("k", "v"),))])
            assert await store.commit([Execute("SELECT k FROM kv")]) == [[("k",)]]
            assert store.writer.process_id is not None
