"""``CommandAgent`` refuses an ``argv`` that is not a list of arguments by name, and says what
it got: ``None``, a number, a set or a generator was refused as "not a single string", which
sent the host looking for a string it never passed."""

from __future__ import annotations

import pytest

from tidings.channels import CommandAgent
from tidings.errors import ValidationError


@pytest.mark.parametrize(("argv", "says"), [
    (None, "not NoneType"),
    (5, "not int"),
    ({"ls"}, "not set"),
    ((arg for arg in ["ls"]), "not generator"),
    ("ls -l", "not a single string"),
    (b"ls", "not a single string"),
])
def test_an_argv_that_is_not_a_list_says_what_it_got(argv, says) -> None:
    with pytest.raises(ValidationError) as info:
        CommandAgent(argv)
    assert info.value.field == "argv"
    assert says in str(info.value)
