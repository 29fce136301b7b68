"""tidings serve in process: a crashed gateway is restarted and logged, too many crashes end
it with a clear message, a port in use is a clear failure, a stop is clean."""

from __future__ import annotations

import contextlib
import functools
import logging
import socket

import attrs
import pytest
import trio
import trio.testing

from tidings.channels import GatewayClient
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import ServeFailed, serve
from tidings.supervisor._signals import StopControl

TOKEN = "serve-test-token"


def _config(tmp_path, **flags):
    flags = {"db": str(tmp_path / "serve.db"), "port": 0, "token": TOKEN,
             "workspace": str(tmp_path), **flags}
    return load_config(**flags)


async def test_a_crashed_gateway_is_restarted_and_logged(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="gateway", times=1)])
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, _config(tmp_path), control,
                                                     fault_plan=plan))
        info.supervisor.mailbox("gateway").send_nowait("crash, please")
        with trio.fail_after(10):
            while info.supervisor.statistics().restarts < 1:
                await trio.testing.wait_all_tasks_blocked()
        port = info.gateway.port
        async with GatewayClient.connect(f"ws://127.0.0.1:{port}", token=TOKEN,
                                         conversation="alpha") as client:
            assert client.welcome["type"] == "welcome"
        control.request("test")
    messages = [record.getMessage() for record in caplog.records]
    assert any("event=child_restarted" in m and "child=gateway" in m for m in messages)
    assert any("event=gateway_listening" in m and "incarnation=2" in m for m in messages)


# The gateway's listener and the retention pruner are both serve's children and share its
# restart budget; the message named the gateway whichever kept crashing.
@pytest.mark.parametrize(("child", "said"), [("gateway", "the gateway"),
                                             ("retention", "serve's retention")])
async def test_restart_intensity_exceeded_ends_serve_naming_the_child(tmp_path, child,
                                                                      said) -> None:
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child=child),
                      FaultRule(Seam.CHILD_START, child=child, nth=2)])
    control = StopControl()
    config = attrs.evolve(_config(tmp_path), max_restarts=1, keep=3600.0)

    async def crash_it() -> None:
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(serve, config, control,
                                                         fault_plan=plan))
            info.supervisor.mailbox(child).send_nowait("crash")

    with pytest.raises(ExceptionGroup) as caught:
        await crash_it()
    assert caught.group_contains(ServeFailed,
                                 match=f"^{said} kept crashing: more than 1 restarts")


async def test_a_port_in_use_is_a_clear_failure(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServeFailed, match=f"cannot listen on ws://127.0.0.1:{port}"):
            await serve(_config(tmp_path, port=port), StopControl())


async def test_a_stop_request_ends_serve_cleanly(tmp_path) -> None:
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(serve, _config(tmp_path), control)
        async with GatewayClient.connect(info.url, token=TOKEN, conversation="a") as client:
            await client.message("hello")
            with trio.fail_after(10):
                frames = await client.receive_until(
                    lambda frame: frame["type"] == "delivery")
            assert frames[-1]["text"] == "hello"
        control.request("test")
    assert info.gateway.closed


async def test_a_database_it_cannot_open_is_a_clear_failure_and_leaves_no_token(
        tmp_path) -> None:
    (tmp_path / "serve.db").mkdir()  # a directory where the database should be
    config = _config(tmp_path, token=None)
    with pytest.raises(ServeFailed, match=r"cannot open the database .*serve\.db.*directory"):
        await serve(config, StopControl())
    assert not (tmp_path / "serve.db.token").exists()


async def test_a_missing_workspace_is_refused_by_name_and_leaves_nothing(tmp_path) -> None:
    from tidings.errors import ConfigError

    config = _config(tmp_path, token=None, workspace=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"^serve\.workspace: ") as caught:
        await serve(config, StopControl())
    assert caught.value.field == "serve.workspace"
    assert sorted(path.name for path in tmp_path.iterdir()) == []


async def test_the_gateway_channel_agent_key_is_used_and_a_bad_one_refused(
        tmp_path, monkeypatch) -> None:
    from tidings.errors import ConfigError

    (tmp_path / "channel_agent_mod.py").write_text(
        "class Named:\n    async def run(self, turn):\n        await turn.send_chunk('named')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    toml = tmp_path / "serve.toml"
    toml.write_text('[channels.gateway]\nagent = "channel_agent_mod:Named"\n')
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(serve, _config(tmp_path, path=toml), control)
        assert type(info.gateway.agent).__name__ == "Named"
        control.request("test")
    # --agent (serve.agent) still wins over the channel's key.
    async with trio.open_nursery() as nursery:
        config = _config(tmp_path, path=toml, agent="tidings.channels:EchoAgent")
        info = await nursery.start(serve, config, control := StopControl())
        assert type(info.gateway.agent).__name__ == "EchoAgent"
        control.request("test")
    toml.write_text('[channels.gateway]\nagent = "no_such_module_here:Agent"\n')
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"^channels\.gateway\.agent: cannot import"):
        await serve(_config(empty, path=toml, token=None), StopControl())
    assert list(empty.iterdir()) == []


async def test_log_lines_stay_key_value_when_a_path_has_a_space(tmp_path, caplog) -> None:
    from tidings.supervisor._logging import parse_fields

    caplog.set_level(logging.INFO, logger="tidings")
    where = tmp_path / "my data"
    where.mkdir()
    control = StopControl()
    async with trio.open_nursery() as nursery:
        await nursery.start(serve, _config(where, token=None), control)
        control.request("a test with spaces")
    lines = {}
    for record in caplog.records:
        if record.name == "tidings.serve":
            fields = parse_fields(record.getMessage())
            assert fields is not None, record.getMessage()
            lines[fields["event"]] = fields
    db = str(where / "serve.db")
    assert lines["token_created"]["path"] == db + ".token"
    assert lines["serving"]["db"] == db
    assert lines["serving"]["token_file"] == db + ".token"
    assert lines["stop_requested"]["signal"] == "a test with spaces"
    assert lines["stopped"]["db"] == db


async def test_a_token_file_given_relative_is_logged_as_the_absolute_path_the_db_is(
        tmp_path, caplog, monkeypatch) -> None:
    # The log names the database by its absolute path; a token file given as a relative one
    # was logged as given, so the two lines a reader compares did not look alike.
    from tidings.supervisor._logging import parse_fields

    caplog.set_level(logging.INFO, logger="tidings")
    monkeypatch.chdir(tmp_path)
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(serve, _config(tmp_path, token=None,
                                                  token_file="tokens/serve.token"), control)
        control.request("test")
    assert info.token_file == tmp_path / "tokens" / "serve.token"
    logged = [parse_fields(r.getMessage()) for r in caplog.records if r.name == "tidings.serve"]
    serving = next(fields for fields in logged if fields and fields["event"] == "serving")
    created = next(fields for fields in logged if fields and fields["event"] == "token_created")
    assert serving["token_file"] == created["path"] == str(tmp_path / "tokens" / "serve.token")


async def test_a_stop_with_no_grace_and_nothing_running_warns_of_nothing(tmp_path,
                                                                         caplog) -> None:
    """``--grace 0`` gave every stop an ``event=grace_expired ... turns_cancelled=0`` warning,
    though nothing was running to be cut (the wait for idle is cut before it can look)."""
    caplog.set_level(logging.INFO, logger="tidings")
    control = StopControl()
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve, _config(tmp_path, grace=0.0), control))
        control.request("test")
    messages = [record.getMessage() for record in caplog.records]
    assert any("event=stopping grace=0 turns_running=0" in m for m in messages), messages
    assert not [m for m in messages if "grace_expired" in m]


async def test_a_second_stop_request_while_starting_ends_the_start(tmp_path, monkeypatch,
                                                                    caplog) -> None:
    # A start that takes long (a big recovery at open) ran to its end whatever was asked:
    # the first request was honoured only once serving, the second reached nothing.
    import tidings
    from tidings.supervisor import _serve

    caplog.set_level(logging.INFO, logger="tidings")
    opening, real = trio.Event(), tidings.open_runtime

    def slow_open(*args, **kwargs):
        @contextlib.asynccontextmanager
        async def opened():
            opening.set()
            await trio.sleep_forever()  # a recovery that does not end soon
            async with real(*args, **kwargs) as rt:  # never reached
                yield rt
        return opened()

    monkeypatch.setattr(_serve.tidings, "open_runtime", slow_open)
    control = StopControl()
    config = attrs.evolve(_config(tmp_path), token=None)  # its token file: made once open
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, config, control)
            await opening.wait()
            control.request("SIGINT")  # the first: the start goes on
            await trio.testing.wait_all_tasks_blocked()
            assert opening.is_set()
            control.request("SIGINT")  # the second: the start ends, serve returns
    messages = [record.getMessage() for record in caplog.records]
    assert any(m.startswith("event=start_abandoned") for m in messages)
    assert not any(m.startswith("event=serving") for m in messages)
    assert not (tmp_path / "serve.db.token").exists()  # a start that did not happen: no token
