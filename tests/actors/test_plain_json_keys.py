"""``plain_json`` (the frozen values of tool calls and approval details, as the gateway's frames
and the terminal show them) writes keys as JSON writes them: ``None`` as ``"null"``, ``True`` as
``"true"``. Before, it used ``str()``: ``"None"``, ``"True"``, so a frame showed keys the
agent never wrote and JSON would not have written."""

from __future__ import annotations

import json

from tidings.actors._blocks import plain_json
from tidings.channels import ToolCall


def test_keys_are_spelled_as_json_spells_them() -> None:
    value = {None: 1, True: 2, False: 3, 1.5: 4, 2: 5, "s": {None: [True]}}
    assert plain_json(value) == json.loads(json.dumps(value))
    assert plain_json(value) == {"null": 1, "true": 2, "false": 3, "1.5": 4, "2": 5,
                                 "s": {"null": [True]}}


def test_a_tool_calls_arguments_read_back_as_json() -> None:
    call = ToolCall("search", {None: "x", 3: "y"})
    assert plain_json(call.arguments) == {"null": "x", "3": "y"}
