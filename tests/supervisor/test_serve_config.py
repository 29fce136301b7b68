"""tidings serve configuration: defaults, the TOML file, flags over the file, and refusals
that name the dotted key."""

from __future__ import annotations

import pathlib
import re

import pytest

from tidings.errors import ConfigError
from tidings.supervisor._age import parse_age
from tidings.supervisor._config import load_config

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "tidings.example.toml"


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    return path


def test_no_configuration_at_all_is_a_working_default() -> None:
    config = load_config()
    assert config.db == pathlib.Path("tidings.db")
    assert config.agent is None
    assert config.writer == "process"
    assert config.channel.name == "gateway"
    settings = config.gateway_config("x" * 16)
    assert (settings.host, settings.port, settings.ack_window) == ("127.0.0.1", 8765, 32)


def test_the_example_file_is_valid_and_documents_every_key() -> None:
    config = load_config(EXAMPLE)
    text = EXAMPLE.read_text()
    from tidings.channels._gateway_config import GATEWAY_KEYS
    for key in (*GATEWAY_KEYS, "token_file", "db", "workspace", "core_id", "agent", "grace",
                "writer", "level", "json", "max_restarts", "period", "dispatch_mode",
                "turn_timeout"):
        assert f"{key} =" in text, key
    assert config.gateway_config("x" * 16).port == 8765


def test_the_example_file_names_every_channel_and_retention_key() -> None:
    """Every key a [channels.<name>] table takes (the gateway's own table is the example's)
    and both [retention] keys appear in the example, set, commented out, or said to have no
    effect there: a key added to ChannelConfig must reach the file that lists them all."""
    from tidings.channels._config import _CONFIG_KEYS
    text = EXAMPLE.read_text()
    for key in (*sorted(set(_CONFIG_KEYS.values())), "keep", "interval"):
        assert re.search(rf"^#? *(\[channels\.gateway\.)?{key}\b", text, re.MULTILINE), key


@pytest.mark.parametrize("key", ["keep", "interval"])
def test_the_example_file_gives_each_retention_minimum_the_file_is_held_to(tmp_path,
                                                                          key) -> None:
    """A keep under 1 hour is refused (README, Retention), but the example, which lists
    every key, said so only of the interval ("at least 1s"): someone copying it and writing
    keep = "10m" learned it from the refusal. Each key's comment gives its minimum, and the
    loader takes that and refuses less."""
    section = EXAMPLE.read_text().split("[retention]", 1)[1]
    doc = re.split(r"^# interval =", section, flags=re.MULTILINE)[0 if key == "keep" else 1]
    least = re.search(r"at least (\d+[smhd])\b", doc)
    assert least is not None, doc
    seconds = parse_age(least[1])
    other = "" if key == "keep" else 'keep = "30d"\n'
    load_config(write(tmp_path, f"[retention]\n{other}{key} = {seconds}\n"))  # taken
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, f"[retention]\n{other}{key} = {seconds * 0.99}\n"))
    assert caught.value.field == f"retention.{key}"


def test_the_example_files_commented_out_values_are_the_defaults(tmp_path) -> None:
    """The file says it lists every key with its default: its commented-out identity and
    memory scope, taken in as written, change nothing (a value said to be an example, with
    "default: none" beside it, stays out)."""
    lines = EXAMPLE.read_text().splitlines()
    tables = lines[lines.index("# [channels.gateway.identity]"):lines.index("[logging]")]
    taken = [line.removeprefix("# ") for line in tables if "default: none" not in line]
    assert "display_name = " in "\n".join(taken)
    text = EXAMPLE.read_text().replace("\n[logging]", "\n" + "\n".join(taken) + "\n[logging]")
    channel = load_config(write(tmp_path, text)).channel
    default = load_config().channel
    assert channel.resolved_identity() == default.resolved_identity()
    assert channel.resolved_memory_scope() == default.resolved_memory_scope()


def test_flags_override_the_file(tmp_path) -> None:
    path = write(tmp_path, '[serve]\ndb = "from-file.db"\ngrace = 3\nwriter = "process"\n'
                           '[gateway]\nport = 9000\nheartbeat_s = 5\n'
                           '[channels.gateway]\ndispatch_mode = "followup"\n'
                           '[logging]\nlevel = "debug"\n')
    config = load_config(path, db="flag.db", port=9100, log_json=True)
    assert config.db == pathlib.Path("flag.db")
    assert config.grace == 3.0
    assert config.writer == "process"
    assert load_config(path, writer="thread").writer == "thread"
    settings = config.gateway_config("x" * 16)
    assert (settings.port, settings.heartbeat_s) == (9100, 5)
    assert config.channel.dispatch_mode == "followup"
    assert (config.log_level, config.log_json) == ("debug", True)


@pytest.mark.parametrize(("text", "field"), [
    ("[gateway]\nport = -1\n", "gateway.port"),
    ("[gateway]\nack_window = 0\n", "gateway.ack_window"),
    # A page the store cannot read (past SQLite's integers): every hello failed, 1011.
    (f"[gateway]\nreplay_page = {2 ** 63}\n", "gateway.replay_page"),
    ("[gateway]\nportt = 1\n", "gateway.portt"),
    ("[gateway]\ntoken = \"short\"\n", "gateway.token"),
    ("[gateway]\ntoken_file = 5\n", "gateway.token_file"),
    ("[gateway]\ntoken_file = [\"a.token\"]\n", "gateway.token_file"),
    ("[serve]\ngrace = -1\n", "serve.grace"),
    # TOML carries any integer; one no float holds is refused as inf is, not an OverflowError
    (f"[serve]\ngrace = {10 ** 400}\n", "serve.grace"),
    (f"[supervisor]\nperiod = {10 ** 400}\n", "supervisor.period"),
    ("[serve]\nagent = \"not an import path\"\n", "serve.agent"),
    ("[serve]\nspeed = 1\n", "serve.speed"),
    ("[serve]\nwriter = \"fork\"\n", "serve.writer"),
    ("[serve]\nwriter = 1\n", "serve.writer"),
    ("[logging]\nlevel = \"loud\"\n", "logging.level"),
    ("[logging]\njson = \"yes\"\n", "logging.json"),
    ("[supervisor]\nmax_restarts = -2\n", "supervisor.max_restarts"),
    ("[channels.gateway]\ndispatch_mode = \"shout\"\n", "channels.gateway.dispatch_mode"),
    ("[extras]\nx = 1\n", "extras"),
    ("gateway = 3\n", "gateway"),
])
def test_invalid_config_is_refused_naming_the_key(tmp_path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert caught.value.field == field


def test_unreadable_or_invalid_toml_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[gateway\n"))


def test_a_bad_flag_is_refused_like_the_file(tmp_path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(port=70000)
    assert caught.value.field == "gateway.port"


@pytest.mark.parametrize(("text", "flags", "field"), [
    ('[serve]\ngrace = "ten"\n', {"grace": 5.0}, "serve.grace"),
    ("[serve]\ndb = 5\n", {"db": "flag.db"}, "serve.db"),
    ('[serve]\nwriter = "fast"\n', {"writer": "thread"}, "serve.writer"),
    ('[serve]\nagent = "not an import path"\n', {"agent": "tidings.channels:EchoAgent"},
     "serve.agent"),
    ('[serve]\ncore_id = ""\n', {"core_id": "host-a"}, "serve.core_id"),
    ('[gateway]\nport = "8765"\n', {"port": 9000}, "gateway.port"),
    ('[gateway]\nhost = 5\n', {"host": "127.0.0.1"}, "gateway.host"),
    ('[gateway]\ntoken = "short"\n', {"token": "a-good-token"}, "gateway.token"),
    ("[gateway]\ntoken_file = 5\n", {"token_file": "flag.token"}, "gateway.token_file"),
    ('[logging]\nlevel = "loud"\n', {"log_level": "info"}, "logging.level"),
    ('[logging]\njson = "yes"\n', {"log_json": True}, "logging.json"),
])
def test_a_bad_key_of_the_file_is_refused_also_when_a_flag_replaces_it(tmp_path, text, flags,
                                                                       field) -> None:
    """The flag wins, but the file is still wrong: taken while the flag hid it, it was refused
    at the first start without the flag (a service unit changed, a command typed by hand)."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), **flags)
    assert caught.value.field == field


def test_tidings_serve_refuses_a_bad_key_a_flag_replaces(tmp_path, monkeypatch, capsys) -> None:
    from tidings.supervisor.cli import main
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, '[serve]\ngrace = "ten"\n')
    # (a workspace it refuses later: were the file taken, this would not serve)
    assert main(["serve", "--config", str(path), "--grace", "5", "--port", "0",
                 "--workspace", str(tmp_path / "missing")]) == 2
    assert "invalid configuration: serve.grace: " in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [path]  # nothing made


def test_a_token_flag_overrides_the_files_token_either_way(tmp_path) -> None:
    path = write(tmp_path, '[gateway]\ntoken = "from-the-file"\n')
    config = load_config(path, token_file=tmp_path / "flag.token")
    assert config.token is None  # the flag's file, not the file's token
    assert config.token_file == tmp_path / "flag.token"
    path = write(tmp_path, '[gateway]\ntoken_file = "file.token"\n')
    config = load_config(path, token="from-the-flag")
    assert (config.token, config.token_file) == ("from-the-flag", None)


def test_a_file_that_gives_both_the_token_and_a_token_file_is_refused(tmp_path) -> None:
    # As --token and --token-file are (argparse refuses the two together): with both, the
    # token was used and the file silently never read nor made, though a client (tidings
    # chat --token-file) would read it.
    path = write(tmp_path, '[gateway]\ntoken = "from-the-file"\ntoken_file = "file.token"\n')
    with pytest.raises(ConfigError, match="not both") as caught:
        load_config(path)
    assert caught.value.field == "gateway.token_file"
    # A flag still replaces both keys of the file.
    assert load_config(path, token="from-the-flag").token == "from-the-flag"
    assert load_config(path, token_file=tmp_path / "flag.token").token is None


async def test_the_largest_replay_page_taken_is_one_a_hello_can_use(tmp_path) -> None:
    # replay_page = 2**63 was taken, and every hello then failed (1011, internal error: the
    # store's limit must be at most 2**63 - 1): the largest one taken still welcomes.
    import functools

    import trio

    from tidings.channels import GatewayClient
    from tidings.supervisor._serve import serve
    from tidings.supervisor._signals import StopControl

    path = write(tmp_path, f"[gateway]\nreplay_page = {2 ** 63 - 1}\n")
    config = load_config(path, db=str(tmp_path / "serve.db"), port=0, token="x" * 16,
                         workspace=str(tmp_path))
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control))
        for after_seq in (None, 0):
            async with GatewayClient.connect(info.url, token="x" * 16, conversation="a",
                                             after_seq=after_seq) as client:
                assert client.welcome["type"] == "welcome"
        control.request("test")


@pytest.mark.parametrize(("text", "field"), [
    ('[serve]\ndb = "~/tidings.db"\n', "serve.db"),
    ('[serve]\nworkspace = "~/work"\n', "serve.workspace"),
    ('[gateway]\ntoken_file = "~/tidings.token"\n', "gateway.token_file"),
])
def test_a_home_path_with_no_home_to_expand_is_refused_naming_the_key(
        tmp_path, monkeypatch, text, field) -> None:
    """'~' with no HOME and no password entry for the user (a container run as a bare uid):
    pathlib's expanduser raised a bare RuntimeError, a traceback naming no key."""
    import pwd

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(ConfigError, match="no home directory") as caught:
        load_config(write(tmp_path, text))
    assert caught.value.field == field


def test_a_home_path_of_no_such_user_is_refused_naming_the_key(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no home directory") as caught:
        load_config(db="~no_such_user_of_this_test/tidings.db")
    assert caught.value.field == "serve.db"
