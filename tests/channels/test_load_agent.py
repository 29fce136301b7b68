"""Agents pluggable by import path: ``package.module:Name``."""

from __future__ import annotations

import importlib
import pathlib
import sys
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from tidings.channels import EchoAgent, load_agent
from tidings.errors import ConfigError

MODULE = """
class Good:
    async def run(self, turn):
        pass

instance = Good()

class Nested:
    class Inner(Good):
        pass

class NeedsArgs(Good):
    def __init__(self, model):
        self.model = model

class NotAnAgent:
    pass

class SyncRun:
    def run(self, turn):
        return None

class RaisesOnInit(Good):
    def __init__(self):
        raise RuntimeError("no api key")

class RunRaises:
    @property
    def run(self):  # reads what __init__ never set: an agent's own bug, named by the field
        raise KeyError("client")

class Unprintable(Exception):
    def __str__(self):  # reads what it never set, as some library errors do
        return self.detail

class RaisesUnprintably(Good):
    def __init__(self):
        raise Unprintable()

class RunRaisesUnprintably:
    @property
    def run(self):
        raise Unprintable()

value = 42
"""


@pytest.fixture
def module(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway importable module holding agents good and bad; returns its name."""
    name = f"agents_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / f"{name}_broken.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)
    sys.modules.pop(f"{name}_broken", None)


def test_a_class_is_instantiated_with_no_arguments(module: str) -> None:
    agent = load_agent(f"{module}:Good")
    assert type(agent).__name__ == "Good"
    assert type(load_agent(f"{module}:Nested.Inner")).__name__ == "Inner"
    assert isinstance(load_agent("tidings.channels:EchoAgent"), EchoAgent)


def test_an_object_attribute_is_returned_as_it_is(module: str) -> None:
    assert load_agent(f"{module}:instance") is sys.modules[module].instance


@pytest.mark.parametrize(("path", "message"), [
    ("not a path", "must look like 'package.module:Name'"),
    ("pkg.module", "must look like"),
    ("pkg.module:", "must look like"),
    (":Name", "must look like"),
    ("pkg..module:Name", "must look like"),
    ("pkg.module:Name:extra", "must look like"),
    (" pkg.module:Name", "must look like"),
    ("no_such_module_xyz:Agent", "cannot import module 'no_such_module_xyz'"),
])
def test_bad_paths_are_a_config_error_naming_agent(path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_agent(path)
    assert info.value.field == "agent"


@pytest.mark.parametrize(("attr", "message"), [
    ("Missing", "has no attribute 'Missing'"),
    ("Nested.Missing", "has no attribute 'Nested.Missing'"),
    ("NeedsArgs", "cannot create NeedsArgs with no arguments: TypeError"),
    ("RaisesOnInit", "cannot create RaisesOnInit with no arguments: RuntimeError: no api key"),
    ("NotAnAgent", "is not an agent"),
    ("value", "is not an agent"),
    ("SyncRun", "run must be a coroutine function"),
    ("RunRaises", "getting its run failed: KeyError: 'client'"),
])
def test_bad_targets_are_a_config_error(module: str, attr: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_agent(f"{module}:{attr}")
    assert info.value.field == "agent"


@pytest.mark.parametrize(("attr", "message"), [
    ("RaisesUnprintably", "cannot create RaisesUnprintably with no arguments: Unprintable"),
    ("RunRaisesUnprintably", "getting its run failed: Unprintable"),
])
def test_an_error_that_cannot_be_printed_is_still_a_config_error(module: str, attr: str,
                                                                 message: str) -> None:
    # The refusal put the error in its text with str(), which raised its own AttributeError
    # out of the handler: a traceback naming no field, where the error it describes is the
    # agent's (as the turn's lifecycle already describes such an error: 56e0408).
    with pytest.raises(ConfigError, match=message) as info:
        load_agent(f"{module}:{attr}")
    assert info.value.field == "agent"
    assert type(info.value.__cause__).__name__ == "Unprintable"


def test_a_module_that_fails_at_import_is_a_config_error_with_its_cause(module: str) -> None:
    with pytest.raises(ConfigError, match=r"importing module .* failed: RuntimeError") as info:
        load_agent(f"{module}_broken:Agent", field="channels.ops.agent")
    assert info.value.field == "channels.ops.agent"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_non_string_path_is_rejected() -> None:
    with pytest.raises(ConfigError, match="must be an import path string") as info:
        load_agent(EchoAgent)  # type: ignore[arg-type]
    assert info.value.field == "agent"


def test_a_channel_refuses_an_agent_whose_run_is_certainly_sync(module: str) -> None:
    """A plain ``def run`` would fail every turn at its first await ("NoneType can't be used in
    'await'") after blocking the event loop: refused when the channel is built, by name."""
    from tidings.channels import ChannelBase, ChannelConfig
    from tidings.errors import ValidationError

    agent = importlib.import_module(module).SyncRun()
    with pytest.raises(ValidationError, match="run must be a coroutine function") as info:
        ChannelBase(None, ChannelConfig(name="ops"), agent=agent)
    assert info.value.field == "agent"


LAZY = """
def __getattr__(name):  # a package that imports its agent on first use (PEP 562)
    if name == "Agent":
        import no_such_sdk_xyz  # its dependency is not installed
    raise AttributeError(name)
"""


def test_an_agent_a_module_fails_to_give_is_a_config_error_with_its_cause(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The error of a module's __getattr__ (its lazy import of the agent failed) came out of
    # load_agent as it was: tidings chat --local --agent pkg:Agent ended in a traceback
    # naming neither the option nor the agent, and tidings serve in an unexpected error.
    name = f"lazy_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(LAZY))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ConfigError, match=rf"getting 'Agent' from {name!r} failed: "
                                              r"ModuleNotFoundError: .*no_such_sdk_xyz") as info:
            load_agent(f"{name}:Agent", field="--agent")
    finally:
        sys.modules.pop(name, None)
    assert info.value.field == "--agent"
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
