"""``parse_command`` given something that is no string (a platform's ``None`` text for a photo,
the raw ``bytes`` of a frame) raised the internals of its regex and trimming (``object of type
'NoneType' has no len()``, an ``AttributeError`` for bytes), naming nothing: it is now a
``TypeError`` naming ``text``, as every public call refuses a value of the wrong type."""

from __future__ import annotations

import pytest

from tidings.channels import parse_command


@pytest.mark.parametrize("value", [None, 5, b"/help", ["/help"]])
def test_parse_command_refuses_what_is_no_string_naming_text(value) -> None:
    with pytest.raises(TypeError, match=r"^text: expected str, got ") as info:
        parse_command(value)
    assert type(info.value) is TypeError


def test_parse_command_still_reads_a_string() -> None:
    assert parse_command("/help").name == "help"
    assert parse_command("hello") is None
