"""Hostile input at the runtime's edges: chat ids and slash commands with odd unicode through
a channel, artifact paths that try to escape, and config files. Each gets a clear error (or is
handled), the runtime stays up, and nothing is half-written (the database is checked)."""

from __future__ import annotations

import os
import pathlib
import sqlite3
import string
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tidings
from tidings.actors import ArtifactRef
from tidings.channels import COMMAND_NAMES, parse_conversation_key
from tidings.errors import ConfigError, ValidationError
from tidings.supervisor._config import load_config
from tidings.testing import (
    MemoryChannel,
    RuntimeThread,
    database_violations,
    lifecycle_violations,
)

SETTINGS = settings(max_examples=80, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# every code point, lone surrogates, controls, bidi marks and zero-width joiners included
odd_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=40) \
    | st.sampled_from(["\u202e", "\u200b", "\ufeff", "\x00", "\ud800", "e\u0301", "\U0001F600",
                       "ﬃ", "İ", "ǅ", "\u2028", ":", "%3A", "%", "../", "\\"])
ids = odd_text | st.integers() | st.just("")
commands = st.builds(lambda name, gap, arg: f"/{name}{gap}{arg}",
                     st.sampled_from(sorted(COMMAND_NAMES)) | odd_text,
                     st.sampled_from(["", " ", "\u00a0", "\t", "\u3000"]), odd_text)


def count(db_path: pathlib.Path, table: str) -> int:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


async def say(channel: MemoryChannel, kwargs: dict[str, Any]) -> str:
    outcome = await channel.say(**kwargs)
    await channel.wait_idle()
    return outcome


async def drain(rt: Any) -> None:
    """Wait until nothing is queued or being sent."""
    while True:
        version = rt.bus.version
        counts = await rt.store.read(lambda conn: conn.execute(
            "SELECT count(*) FROM outbox WHERE status IN ('queued', 'sending')").fetchone()[0])
        if not counts:
            return
        await rt.bus.wait_past(version)


def test_odd_chats_and_slash_commands_through_a_channel(db_path, workspace) -> None:
    outcomes: dict[str, int] = {}
    with RuntimeThread(db_path, workspace) as thread:
        channel = MemoryChannel(thread.rt)

        @SETTINGS
        @given(chat_id=ids, sender_id=ids, thread_id=st.none() | ids, text=commands | odd_text)
        @example(chat_id="c", sender_id="u", thread_id=None, text="/resume ../../etc")
        @example(chat_id="c", sender_id="u", thread_id=None, text="/new\x00")
        @example(chat_id="c\ud800", sender_id="u", thread_id=None, text="hi")
        @example(chat_id="c", sender_id="u", thread_id=None, text="hi \ud800 there")
        def check(chat_id: Any, sender_id: Any, thread_id: Any, text: str) -> None:
            kwargs = {"chat_id": chat_id, "sender_id": sender_id, "thread_id": thread_id,
                      "text": text}
            refused: ValidationError | None = None
            try:
                outcome = thread.run(say, channel, kwargs)
            except ValidationError as exc:
                refused = exc
                outcome = f"invalid {exc.field}"
            if refused is not None:
                assert refused.field in ("chat_id", "sender_id", "text", "thread_id"), refused
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            assert thread.rt.supervisor.statistics().state == "running"

        check()
        thread.run(channel.wait_idle)
        thread.run(drain, thread.rt)
    assert database_violations(db_path) == []
    assert lifecycle_violations(channel.events) == []
    conn = sqlite3.connect(db_path)
    keys = [key for (key,) in conn.execute("SELECT conversation_key FROM conversation_bindings")]
    conn.close()
    for key in keys:
        assert parse_conversation_key(key).channel == "memory"
    assert outcomes.get("command", 0) > 0, outcomes


async def say_once(rt: Any, text: str, chat_id: str = "c") -> tuple[str, list[str]]:
    channel = MemoryChannel(rt)
    try:
        outcome = await channel.say(text, chat_id=chat_id)
    except ValidationError as exc:
        outcome = f"invalid {exc.field}"
    await channel.wait_idle()
    return outcome, [event.type for event in channel.events]


@pytest.mark.parametrize(("text", "chat_id", "refused"), [
    ("hi \ud800 there", "c", "text"), ("hi", "c\udfff", "chat_id")])
async def test_a_message_that_is_not_unicode_is_refused_naming_the_field(
        db_path, workspace, text: str, chat_id: str, refused: str) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        outcome, events = await say_once(rt, text, chat_id)
    assert (outcome, events) == (f"invalid {refused}", [])
    assert count(db_path, "turns") == count(db_path, "outbox") == 0


# --- artifact paths --------------------------------------------------------------------------


segments = st.sampled_from(["..", ".", "", "a", "inside.txt", "~", "/", "//", "\x00",
                            "..\\..", "%2e%2e", "\u202e", "link", "out", "deep"])
paths = st.builds(lambda parts, absolute: ("/" if absolute else "") + "/".join(parts),
                  st.lists(segments, min_size=1, max_size=6), st.booleans())


def escape_kit(workspace: pathlib.Path) -> pathlib.Path:
    """A workspace with a real file, a symlink out of it, and a file outside."""
    outside = workspace.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("secret")
    (workspace / "inside.txt").write_text("ok")
    (workspace / "a").mkdir(exist_ok=True)
    (workspace / "a" / "inside.txt").write_text("ok")
    if not (workspace / "link").exists():
        os.symlink(outside, workspace / "link")
        os.symlink(outside / "secret.txt", workspace / "out")
    return outside


async def send_artifact(rt: Any, session_id: str, source: Any) -> str:
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(source, history_text="a file")
    return handle.delivery_id


def test_artifact_paths_that_escape_are_refused_and_write_nothing(db_path, workspace) -> None:
    outside = escape_kit(workspace)
    accepted: list[str] = []
    with RuntimeThread(db_path, workspace) as thread:
        session_id = thread.run(thread.rt.create_session, "web")

        @SETTINGS
        @given(path=paths, as_ref=st.booleans())
        @example(path="../outside/secret.txt", as_ref=False)
        @example(path=str(outside / "secret.txt"), as_ref=True)
        @example(path="link/secret.txt", as_ref=False)
        @example(path="out", as_ref=True)
        @example(path="a/../inside.txt", as_ref=False)
        def check(path: str, as_ref: bool) -> None:
            source = ArtifactRef(path=path) if as_ref else path
            before = [count(db_path, table) for table in ("outbox", "messages", "artifacts")]
            refused: Exception | None = None
            try:
                thread.run(send_artifact, thread.rt, session_id, source)
            except (ValidationError, FileNotFoundError, IsADirectoryError) as exc:
                refused = exc
            if refused is not None:
                after = [count(db_path, table) for table in ("outbox", "messages", "artifacts")]
                assert after == before, (path, refused)  # refused: nothing half-written
                if isinstance(refused, ValidationError):
                    assert refused.field in ("source", "source.path", "path"), refused
                return
            resolved = (workspace / path).resolve() if not path.startswith("/") \
                else pathlib.Path(path).resolve()
            assert resolved.is_relative_to(workspace.resolve()), path  # accepted: inside
            accepted.append(path)

        check()
    assert database_violations(db_path, allow_open=True) == []
    conn = sqlite3.connect(db_path)
    locations = [loc for (loc,) in conn.execute("SELECT location FROM artifacts")]
    conn.close()
    for location in locations:
        assert pathlib.Path(location).resolve().is_relative_to(workspace.resolve()), location


# --- config files ----------------------------------------------------------------------------


keys = st.sampled_from(["db", "workspace", "core_id", "agent", "grace", "token", "host",
                        "port", "level", "json", "max_restarts", "period", "rate", "burst",
                        "heartbeat_s", "max_frame_bytes", "bogus", "", "a.b", "ü"])
scalars = (st.integers(-10**20, 10**20) | st.floats() | st.booleans()
           | st.text(max_size=20) | st.sampled_from(["nan", "inf", "-1", "0", "1e309"]))


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(value), repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return '"' + "".join(ch if ch in string.printable and ch not in '"\\\n\r\t\x0b\x0c'
                         else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 and
                         not 0xD800 <= ord(ch) <= 0xDFFF else "?" for ch in value) + '"'


tables = st.dictionaries(
    st.sampled_from(["serve", "gateway", "logging", "supervisor", "channels", "channels.gateway",
                     "nope"]),
    st.dictionaries(keys, scalars | st.lists(scalars, max_size=3), max_size=5), max_size=4)


def render(doc: dict[str, dict[str, Any]]) -> str:
    lines = []
    for table, items in doc.items():
        lines.append(f"[{table}]")
        lines += [f'"{key}" = {toml_value(value)}' for key, value in items.items()]
    return "\n".join(lines) + "\n"


@SETTINGS
@given(doc=tables)
@example(doc={"serve": {"grace": float("nan")}})
@example(doc={"gateway": {"port": 10**20}})
@example(doc={"supervisor": {"max_restarts": -1}})
def test_config_files_load_or_fail_with_an_error_naming_the_key(tmp_path_factory, doc) -> None:
    path = tmp_path_factory.mktemp("config") / "tidings.toml"
    path.write_text(render(doc))
    try:
        config = load_config(path)
    except ConfigError as exc:
        refused: ConfigError = exc
    else:
        assert config.grace >= 0
        assert config.max_restarts >= 0
        return
    named = set(doc) | {f"{table}.{key}" for table, items in doc.items() for key in items}
    assert refused.field in named, refused  # a table or a key of this file, not another's


@SETTINGS
@given(raw=st.binary(max_size=200) | st.text(max_size=200))
@example(raw=b"\xff\xfe[serve]")
@example(raw="[serve]\ngrace = 1\ngrace = 2\n")
@example(raw="[serve\n")
def test_garbage_config_files_are_a_config_error(tmp_path_factory, raw: bytes | str) -> None:
    path = tmp_path_factory.mktemp("config") / "tidings.toml"
    if isinstance(raw, str):
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:
            raw = raw.encode("utf-8", "surrogatepass")
    path.write_bytes(raw)
    try:
        load_config(path)  # some garbage is valid TOML (an empty file is)
    except ConfigError as exc:
        refused = exc
    else:
        return
    assert refused.field, refused


@pytest.mark.parametrize("field", ["db", "workspace"])
def test_a_config_path_that_is_not_a_string_is_refused(tmp_path, field: str) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(f"[serve]\n{field} = 3\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == f"serve.{field}"


def test_trio_is_not_needed_to_load_a_config(tmp_path) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text("[serve]\ngrace = 3\n")
    assert load_config(path).grace == 3.0
    assert trio.lowlevel.in_trio_run() is False
