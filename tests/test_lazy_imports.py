"""What importing tidings costs: the packages load their public names on first use.

The writer child boots with ``from tidings.store._writer_child import main``; that runs
``tidings/__init__.py`` and ``tidings/store/__init__.py`` first, so those must not pull in trio,
the actors or the channels it never uses. Each case runs in a fresh interpreter, since this one
has imported everything already.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

from tidings.store._writer_process import child_command

HEAVY = ("trio", "trio_websocket", "tidings.actors", "tidings.channels", "tidings.supervisor")
"""Modules the writer child and a bare ``import tidings`` have no use for."""


def _run(code: str, tmp_path: pathlib.Path) -> str:
    """Run *code* in a fresh interpreter set up the way the writer child is; its stdout."""
    _, env = child_command(tmp_path / "unused.db", "FULL")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_writer_child_imports_neither_trio_nor_the_packages_above_the_store(
        tmp_path: pathlib.Path) -> None:
    boot = child_command(tmp_path / "unused.db", "FULL")[0][2]
    assert "from tidings.store._writer_child import main" in boot  # the import pinned here
    loaded = _run(f"""
        import sys
        from tidings.store._writer_child import main
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
    """, tmp_path)
    assert loaded == "[]"


def test_import_tidings_is_light_and_every_public_name_still_resolves(
        tmp_path: pathlib.Path) -> None:
    out = _run(f"""
        import sys
        import tidings
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
        assert set(tidings.__all__) <= set(dir(tidings))
        for name in tidings.__all__:
            assert getattr(tidings, name) is not None, name
        namespace = {{}}
        exec("from tidings import *", namespace)
        assert set(tidings.__all__) <= set(namespace), set(tidings.__all__) - set(namespace)
        import tidings.actors, tidings.channels, tidings.supervisor.testing
        assert tidings.Runtime is tidings.actors.Runtime
        assert tidings.open_runtime is tidings.actors.open_runtime
        assert tidings.Agent is tidings.channels.Agent
        assert tidings.testing is tidings.supervisor.testing
        assert tidings.errors is sys.modules["tidings.errors"]
        print("ok")
    """, tmp_path)
    assert out.splitlines() == ["[]", "ok"]


def test_import_tidings_store_is_light_and_every_public_name_still_resolves(
        tmp_path: pathlib.Path) -> None:
    out = _run(f"""
        import sys
        import tidings.store as store
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
        assert set(store.__all__) <= set(dir(store))
        for name in store.__all__:
            assert getattr(store, name) is not None, name
        namespace = {{}}
        exec("from tidings.store import *", namespace)
        assert set(store.__all__) <= set(namespace), set(store.__all__) - set(namespace)
        from tidings.store import _acking, _store
        assert store.Store is _store.Store and store.acking is _acking
        try:
            store.no_such_name
        except AttributeError as exc:
            assert "tidings.store" in str(exc) and "no_such_name" in str(exc), exc
        else:
            raise AssertionError("a missing name resolved")
        print("ok")
    """, tmp_path)
    assert out.splitlines() == ["[]", "ok"]


def test_the_published_modules_import_first_by_their_public_names(
        tmp_path: pathlib.Path) -> None:
    out = _run("""
        import tidings.testing
        from tidings.testing import MemoryRoute
        import tidings.errors
        from tidings.errors import ValidationError
        import tidings
        from tidings import testing
        import tidings.supervisor.testing as real
        assert tidings.testing is real and testing is real and MemoryRoute is real.MemoryRoute
        assert real.__name__ == "tidings.supervisor.testing"
        assert ValidationError is tidings.errors.ValidationError
        print("ok")
    """, tmp_path)
    assert out == "ok"


def test_the_subpackages_resolve_after_a_bare_import_and_load_on_first_use(
        tmp_path: pathlib.Path) -> None:
    """The README names ``tidings.actors.MAX_TEXT_BYTES``, ``tidings.channels`` and
    ``tidings.supervisor`` as a host writes them after ``import tidings``: they resolved only
    once something else had imported that subpackage (``tidings.open_runtime`` loads the
    actors), an ``AttributeError`` before."""
    out = _run(f"""
        import sys
        import tidings
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
        assert {{"actors", "channels", "supervisor", "store"}} <= set(dir(tidings))
        assert tidings.actors.MAX_TEXT_BYTES == 1 << 20
        assert tidings.channels.ChannelBase is sys.modules["tidings.channels"].ChannelBase
        assert tidings.supervisor.open_supervisor is not None
        assert tidings.actors is sys.modules["tidings.actors"]
        print("ok")
    """, tmp_path)
    assert out.splitlines() == ["[]", "ok"]
