"""The README's fragments and names, as a host copies them (tests/test_docs_readme.py runs its
whole programs).

A fragment (the Testing section's ``CheckpointInjector`` and ``InvariantChecker`` blocks) is
run the way a reader completes it: its ``...`` replaced by a small workload, the names it
takes as given (``rt``, ``db``, ``plan``, ``routes``) defined, and a placeholder in its
expected value (``"route:session_...:1"``) taken as a wildcard. Every ``tidings.x.Y`` the
README names, every ``rt.name`` and the fields it lists of a handle and an outbound exist, so
a rename cannot leave the README behind.
"""

from __future__ import annotations

import ast
import fnmatch
import pathlib
import re
import textwrap
from typing import Any

import trio

import tidings
from tidings.supervisor import ChildSpec, open_supervisor
from tidings.testing import (
    CheckpointInjector,
    FaultPlan,
    FaultRule,
    InvariantChecker,
    MemoryRoute,
)

ROOT = pathlib.Path(tidings.__file__).parent
README = (ROOT / "README.md").read_text(encoding="utf-8")

_WORKLOAD = """\
session_id = await rt.create_session(channel="web")
routes[session_id] = MemoryRoute()
rt.router.bind(session_id, routes[session_id])
async with rt.open_turn(session_id) as ctx:
    handles = [await ctx.output.send_text(str(i)) for i in range(5)]
outcomes = [await handle.wait() for handle in handles]
"""
"""What a reader puts for ``...``: five sends, waited for (each takes a lane two steps)."""


def _block(start: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    return next(block for block in blocks if block.startswith(start))


def _completed(block: str) -> str:
    """*block* with its ``...`` line (a comment after it aside) replaced by :data:`_WORKLOAD`,
    at that line's indent."""
    lines = block.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.partition("#")[0].strip() == "..."]
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join([*lines[:at], textwrap.indent(_WORKLOAD, indent).rstrip("\n"),
                      *lines[at + 1:]]) + "\n"


async def _run(code: str, namespace: dict[str, Any]) -> None:
    """Run *code* as asyncio's REPL runs a body with top-level ``await``, in this trio run."""
    compiled = compile(code, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)  # the README's own example
    if result is not None:
        await result


async def test_the_checkpoint_injection_fragment_does_what_it_asserts(
        tmp_path: pathlib.Path) -> None:
    block = _block("injector = CheckpointInjector(")
    *body, last = block.rstrip("\n").splitlines()
    expected = ast.literal_eval(last.removeprefix("assert injector.injected == "))
    async with tidings.open_runtime(tmp_path / "tidings.db", workspace=tmp_path) as rt:
        namespace = {"rt": rt, "routes": {}, "CheckpointInjector": CheckpointInjector,
                     "MemoryRoute": MemoryRoute}
        with trio.fail_after(30):
            await _run(_completed("\n".join(body)), namespace)
    injected = namespace["injector"].injected
    assert len(injected) == len(expected), injected
    for (step, child), (want_step, pattern) in zip(injected, expected, strict=True):
        assert step == want_step
        assert fnmatch.fnmatchcase(child, pattern.replace("...", "*")), (child, pattern)
    assert "unknown" in namespace["outcomes"]  # the cancel crashed the lane mid-delivery


async def test_the_invariant_checker_fragment_runs_and_holds(tmp_path: pathlib.Path) -> None:
    block = _block("checker = InvariantChecker()")
    plan = FaultPlan([FaultRule("deliver", nth=2)])
    namespace = {"tidings": tidings, "InvariantChecker": InvariantChecker,
                 "MemoryRoute": MemoryRoute, "db": tmp_path / "tidings.db", "plan": plan,
                 "routes": {}}
    with trio.fail_after(30):
        await _run(_completed(block), namespace)  # assert_ok() raises on a violation
    assert namespace["outcomes"] == ["delivered", "unknown", "delivered", "delivered",
                                     "delivered"]
    assert [record.seam for record in plan.injected] == ["deliver"]
    assert namespace["checker"].violations == []


def _loggers() -> set[str]:
    """The logger names the package's own modules create."""
    names: set[str] = set()
    for path in ROOT.rglob("*.py"):
        if {"tests", ".venv", "bench"} & set(path.relative_to(ROOT).parts):
            continue
        names.update(re.findall(r"getLogger\(\"([\w.]+)\"\)", path.read_text(encoding="utf-8")))
    return names


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            target: object = __import__(".".join(parts[:end]), fromlist=["_"])
        except ImportError:
            continue
        try:
            for part in parts[end:]:
                target = getattr(target, part)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_tidings_name_exists() -> None:
    named = set(re.findall(r"`(tidings(?:\.\w+)+)", README))
    assert len(named) > 10, "README's tidings.* names are not found"
    files = {"tidings.db"}  # serve's default database, a file name
    loggers = _loggers()
    missing = sorted(name for name in named - files
                     if not _resolves(name) and name not in loggers)
    assert not missing, f"README names {missing}: neither a module, an attribute nor a logger"


def _named(variable: str) -> set[str]:
    """The attribute paths the README writes after ``variable.`` (``router.bind``)."""
    return set(re.findall(rf"\b{variable}\.([a-z_]+(?:\.[a-z_]+)*)", README))


def _has(target: object, path: str) -> bool:
    """Whether *target* has the attribute path; a last part ending ``_`` is a prefix, as in
    the README's ``ctx.output.send_*``."""
    *parents, last = path.split(".")
    for part in parents:
        if not hasattr(target, part):
            return False
        target = getattr(target, part)
    if last.endswith("_"):
        return any(name.startswith(last) for name in dir(target))
    return hasattr(target, last)


async def test_every_attribute_the_readme_names_of_its_objects_exists(
        tmp_path: pathlib.Path) -> None:
    """``rt.x``, ``ctx.x`` (a turn's or a supervised child's), ``sup.x``, ``handle.x`` and
    ``checker.x``, looked up on live objects (some are set by ``__init__``)."""
    assert {"open_turn", "history", "events", "deliveries", "router.bind"} <= _named("rt")
    child_contexts: list[Any] = []

    async def child(ctx: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        child_contexts.append(ctx)
        task_status.started()
        async for _ in ctx.mailbox:
            pass

    with trio.fail_after(30):
        async with tidings.open_runtime(tmp_path / "tidings.db", workspace=tmp_path,
                                        fault_plan=FaultPlan([])) as rt:  # .fault_plan.injected
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, MemoryRoute())
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("hi")
            async with open_supervisor([ChildSpec("child", child)]) as sup:
                objects = {"rt": [rt], "ctx": [ctx, *child_contexts], "sup": [sup],
                           "handle": [handle], "checker": [InvariantChecker()]}
                missing = sorted(f"{variable}.{name}" for variable, found in objects.items()
                                 for name in _named(variable)
                                 if not any(_has(each, name) for each in found))
    assert not missing, f"README names {missing}, which none of those objects has"


def _listed_after(name: str) -> list[str]:
    """The backquoted words of the parenthesis after ``name`` in "The names" paragraph, up to
    a colon (``status``'s values follow one)."""
    paragraph = README.split("The names: ", 1)[1].split("\n\n", 1)[0]
    listed = paragraph.split(f"`{name}` (", 1)[1].split(")", 1)[0].split(":", 1)[0]
    return re.findall(r"`(\w+)`", listed)


def test_the_fields_the_readme_lists_of_a_handle_and_an_outbound_exist() -> None:
    for name, cls in (("tidings.DeliveryHandle", tidings.DeliveryHandle),
                      ("tidings.Outbound", tidings.Outbound)):
        fields = _listed_after(name)
        assert "session_id" in fields, (name, fields)
        missing = [field for field in fields if not hasattr(cls, field)]
        assert not missing, f"README lists {name}.{missing}, which it has not"


def test_the_error_classes_list_is_tidings_errors() -> None:
    """The README's **Error classes** list names every class of ``tidings.errors`` (a new one
    left out would be an exception a host does not know to catch), and nothing else but
    builtins it says they subclass and the config classes it names."""
    import builtins

    import tidings.channels
    import tidings.errors

    listed = README.split("- **Error classes**", 1)[1].split("\n- **", 1)[0]
    named = set(re.findall(r"`([A-Z]\w+)`", listed))
    assert not set(tidings.errors.__all__) - named, "not in the README's Error classes"
    others = sorted(name for name in named - set(tidings.errors.__all__)
                    if not hasattr(builtins, name) and not hasattr(tidings.channels, name))
    assert not others, f"the Error classes list names {others}, which tidings.errors has not"
