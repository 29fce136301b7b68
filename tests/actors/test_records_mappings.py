"""The mapping fields of the public records (``ApprovalRequest.details``, ``Outbound.metadata``,
``ControlBlock.data``) refuse what is not a mapping by name, when the record is made.

Before, a list failed inside the converter with an ``AttributeError`` or a ``TypeError`` that
named nothing, an empty list (or ``()``) was taken as ``{}``, and a list of pairs passed for a
mapping: a host calling ``rt.router.request_approval`` itself never reached the router's
checks."""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalRequest, ControlBlock, Outbound
from tidings.errors import ValidationError

NOT_MAPPINGS = [[1], [], (), [("a", 1)], "ab", 3, object()]


@pytest.mark.parametrize("value", NOT_MAPPINGS)
def test_approval_details_must_be_a_mapping(value) -> None:
    with pytest.raises(ValidationError) as caught:
        ApprovalRequest("session_a", "deploy", "request_1", details=value)
    assert caught.value.field == "details"
    assert "must be a mapping" in caught.value.reason


@pytest.mark.parametrize("value", NOT_MAPPINGS)
def test_control_data_must_be_a_mapping(value) -> None:
    with pytest.raises(ValidationError) as caught:
        ControlBlock("typing", data=value)
    assert caught.value.field == "data"


@pytest.mark.parametrize("value", NOT_MAPPINGS)
def test_outbound_metadata_must_be_a_mapping(value) -> None:
    with pytest.raises(ValidationError) as caught:
        Outbound("session_a", "dlv_1", "message", (), "hi", metadata=value)
    assert caught.value.field == "metadata"


def test_mappings_and_none_are_still_taken_read_only() -> None:
    request = ApprovalRequest("session_a", "deploy", "request_1", details={"a": [1, {"b": 2}]})
    assert request.details == {"a": (1, {"b": 2})}
    with pytest.raises(TypeError):
        request.details["a"] = 1  # type: ignore[index]
    assert dict(ApprovalRequest("session_a", "deploy", "request_1").details) == {}
    assert dict(ControlBlock("typing", data=None).data) == {}
    assert dict(ControlBlock("typing", data={"x": 1}).data) == {"x": 1}
