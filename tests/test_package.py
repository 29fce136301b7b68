"""The package's public surface and install layout stay honest."""

from __future__ import annotations

import importlib
import inspect
import pathlib
import subprocess
import sys
import tomllib

import tidings

ROOT = pathlib.Path(tidings.__file__).parent


def test_errors_module_is_published_under_its_public_name() -> None:
    import tidings.errors as errors

    assert errors is tidings.errors
    assert issubclass(errors.ValidationError, ValueError)
    assert issubclass(errors.DeliveryNotFoundError, LookupError)


def test_every_package_lists_exports_that_exist() -> None:
    for name in ["tidings", "tidings.store", "tidings.supervisor", "tidings.actors",
                 "tidings.channels", "tidings.errors"]:
        module = importlib.import_module(name)
        for public in module.__all__:
            assert hasattr(module, public), f"{name}.__all__ names missing {public}"


def test_pyproject_installs_every_package_directory_and_not_tests() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = set(config["tool"]["setuptools"]["packages"])
    on_disk = {"tidings"} | {
        "tidings." + ".".join(p.parent.relative_to(ROOT).parts)
        for p in ROOT.glob("*/**/__init__.py")
        if p.parent.relative_to(ROOT).parts[0] not in {"tests", "bench", ".venv", "build"}
    }
    assert declared == on_disk
    assert not any(name.startswith("tidings.tests") for name in declared)


def test_console_script_reports_the_version() -> None:
    out = subprocess.run([sys.executable, "-m", "tidings.supervisor.cli", "--version"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"tidings {tidings.__version__}"


def test_the_files_the_quickstart_leaves_in_a_checkout_are_ignored_by_git(
        tmp_path: pathlib.Path) -> None:
    # The README's first command runs `tidings serve` in the checkout: the token it keeps
    # beside the database is a secret, and a `git add .` must not pick it (or the lock) up.
    from tidings.actors._runtime_lock import LOCK_SUFFIX
    from tidings.supervisor._token import token_path

    (tmp_path / ".gitignore").write_bytes((ROOT / ".gitignore").read_bytes())
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    made = []
    for db in ("tidings.db", "tidings-local.db"):  # serve's, and `tidings chat --local`'s
        made += [db, db + "-wal", db + "-shm", db + LOCK_SUFFIX,
                 token_path(tmp_path / db).name]
    ignored = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "--no-index", *made],
                             capture_output=True, text=True, check=False).stdout.split()
    assert sorted(set(made) - set(ignored)) == []


_PUBLIC_PACKAGES = ["tidings", "tidings.store", "tidings.supervisor", "tidings.actors",
                    "tidings.channels", "tidings.errors", "tidings.testing"]


def _exported(name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(name)
    return [(f"{name}.{public}", getattr(module, public)) for public in module.__all__]


def test_no_public_name_of_a_package_is_left_out_of_its_all() -> None:
    for name in _PUBLIC_PACKAGES:
        module = importlib.import_module(name)
        stray = sorted(
            public for public, value in vars(module).items()
            if not public.startswith("_") and public not in module.__all__
            and public not in {"annotations", "TYPE_CHECKING"}
            and not isinstance(value, type(sys)))  # a subpackage imported later
        assert not stray, f"{name} has public names outside __all__: {stray}"



def test_every_exported_class_and_function_has_its_own_docstring() -> None:
    for name in _PUBLIC_PACKAGES:
        for qualified, obj in _exported(name):
            if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__code__")):
                own = vars(obj).get("__doc__") if isinstance(obj, type) else obj.__doc__
                assert (own or "").strip(), f"{qualified} has no docstring of its own"



def test_every_exception_a_package_exports_is_one_of_tidings_errors() -> None:
    # tidings.testing's too: its InvariantViolation is also an AssertionError (pytest shows
    # a failed check as a failed assertion), and, as the README says of every class, one of
    # tidings.errors under TidingsError.
    for name in _PUBLIC_PACKAGES:
        for qualified, obj in _exported(name):
            if isinstance(obj, type) and issubclass(obj, BaseException):
                short = qualified.rsplit(".", 1)[1]
                assert getattr(tidings.errors, short, None) is obj, \
                    f"{qualified} is not tidings.errors.{short}"
                assert short in tidings.errors.__all__


def test_tidings_errors_has_one_base_and_at_most_three_levels_below_it() -> None:
    base = tidings.errors.TidingsError
    for qualified, obj in _exported("tidings.errors"):
        assert isinstance(obj, type), qualified
        assert issubclass(obj, base), f"{qualified} is no TidingsError"
        depth = sum(1 for k in obj.__mro__ if k is not base and issubclass(k, base))
        assert depth <= 3, f"{qualified} is {depth} classes below TidingsError"


def test_every_public_method_of_an_exported_class_has_a_docstring() -> None:
    # What an embedder or adapter author reads in help(): tidings' own classes (an override
    # documented where it is declared counts), inherited members included.
    for package in _PUBLIC_PACKAGES:
        for qualified, cls in _exported(package):
            if not isinstance(cls, type) or issubclass(cls, BaseException):
                continue
            for name in dir(cls):
                owner = next((k for k in cls.__mro__ if name in vars(k)), None)
                if name.startswith("_") or not owner.__module__.startswith("tidings"):
                    continue
                member = inspect.getattr_static(cls, name)
                if isinstance(member, property):
                    doc = member.__doc__
                elif inspect.isfunction(member) or isinstance(member, staticmethod | classmethod):
                    doc = inspect.getdoc(getattr(cls, name))
                else:
                    continue
                assert (doc or "").strip(), \
                    f"{qualified}.{name} ({owner.__name__}) has no docstring"


def test_readme_names_every_top_level_export() -> None:
    readme = (ROOT / "README.md").read_text()
    unnamed = [name for name in tidings.__all__
               if not name.startswith("__") and f"`tidings.{name}`" not in readme
               and f"import {name}" not in readme and f"tidings.{name}(" not in readme
               and f"tidings.{name} " not in readme]
    assert not unnamed, f"README never names tidings.{unnamed}"


def test_readme_names_every_class_of_tidings_errors() -> None:
    readme = (ROOT / "README.md").read_text()
    unnamed = [name for name in tidings.errors.__all__ if f"`{name}`" not in readme]
    assert not unnamed, f"README never names tidings.errors.{unnamed}"
