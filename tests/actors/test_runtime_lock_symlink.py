"""A ``<database>.runtime.lock`` that is a symbolic link to nothing (say into ``/run``, a tmpfs
emptied by the reboot that also killed the last runtime): ``open_runtime`` spun for ever in its
worker thread, at full CPU and deaf to Ctrl-C (the exclusive create finds the link there, the
plain open finds no file behind it, and the loop took that for a file its maker had just
removed). The lock file is now the link's target, made as a missing lock file is made.

The open runs in a child process, so that the spin, which no cancel reaches, fails the test
instead of hanging it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_OPEN_TWICE = textwrap.dedent("""
    import sys, trio, tidings
    from tidings.errors import StoreError

    async def main(db, workspace):
        async with tidings.open_runtime(db, workspace=workspace) as rt:
            try:
                async with tidings.open_runtime(db, workspace=workspace):
                    print("second runtime opened")
            except StoreError as exc:
                print("second refused:", exc)
            print("opened", rt.store.epoch)

    trio.run(main, sys.argv[1], sys.argv[2])
""")


def test_a_lock_file_that_is_a_link_to_nothing_is_made_where_it_points(tmp_path,
                                                                     workspace) -> None:
    run_dir = tmp_path / "run"  # the tmpfs, empty again
    run_dir.mkdir()
    db = tmp_path / "tidings.db"
    lock = tmp_path / "tidings.db.runtime.lock"
    lock.symlink_to(run_dir / "tidings.lock")
    done = subprocess.run([sys.executable, "-c", _OPEN_TWICE, str(db), str(workspace)],
                          capture_output=True, text=True, timeout=60)  # hang guard
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("second refused:")
    assert "already open in another runtime" in done.stdout
    assert done.stdout.splitlines()[1] == "opened 1"
    assert lock.is_symlink()
    assert (run_dir / "tidings.lock").is_file()  # the lock file, still there as always
