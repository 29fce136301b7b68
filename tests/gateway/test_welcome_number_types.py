"""The welcome's numbers come as README's welcome example writes them: an integer where it
shows one (``"burst": 60``), a float where it shows a fraction (``"rate": 20.0``). A client
in a typed language decodes by the example, and an integer field that arrives as ``20.0``
fails there (Go's ``int``, serde's ``u64``)."""

from __future__ import annotations

import pathlib
import re

import tidings

README = (pathlib.Path(tidings.__file__).parent / "README.md").read_text(encoding="utf-8")


def _example_numbers() -> dict[str, str]:
    """The welcome example's number fields, as README writes them."""
    [example] = re.findall(r'`\{"type": "welcome",(.*?)\}`', README, flags=re.DOTALL)
    numbers = dict(re.findall(r'"(\w+)": (-?\d+(?:\.\d+)?)\b', example))
    assert {"heartbeat_s", "rate", "burst", "max_frame_bytes"} <= set(numbers), numbers
    return numbers


async def test_the_welcome_s_numbers_have_the_example_s_types(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "numbers") as client:
        welcome = client.welcome
    for name, written in _example_numbers().items():
        sent = welcome[name]
        assert type(sent) is (float if "." in written else int), (name, written, sent)
        assert sent == float(written), (name, written, sent)


async def test_settings_given_as_integers_still_come_as_the_example_s_types(
        rt, serve_gateway, connect) -> None:
    """``heartbeat_s = 20`` and ``rate = 5`` in a config (integers, which it takes) do not
    change the welcome's types: a client cannot tell which form the server's config used."""
    async with serve_gateway(rt, heartbeat_s=20, rate=5, burst=7) as (_gateway, url), \
            connect(url, "numbers") as client:
        welcome = client.welcome
    assert (welcome["heartbeat_s"], welcome["rate"], welcome["burst"]) == (20, 5, 7)
    for name, written in _example_numbers().items():
        sent = welcome[name]
        assert type(sent) is (float if "." in written else int), (name, written, sent)
