"""Shared pytest configuration: ``--slow`` turns on the long forms of the heavy suites."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="run the long forms of the crash, fault and load suites")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long form: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
