"""Run test code in the very step in which a runtime actor logs a line.

Some races cannot be set up from the test's own task: the messages accepted in the step in
which the ``tasks`` supervisor crashes, before it stops its children, are one (the crash is
its own task raising). The kernel logs an injected fault (``event=fault_injected``) in that
task just before it raises, so a handler on that line runs the test's code there."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

__all__ = ["calling_on"]


class _OnLine(logging.Handler):
    """Calls ``action()`` once, on the first log line that holds ``needle``."""

    def __init__(self, needle: str, action: Callable[[], object]) -> None:
        super().__init__(logging.DEBUG)
        self.needle, self.action, self.done = needle, action, False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.done and self.needle in record.getMessage():
            self.done = True
            self.action()


@contextlib.contextmanager
def calling_on(needle: str, action: Callable[[], object], *,
               logger: str = "tidings.supervisor") -> Iterator[None]:
    """Within the block, call ``action()`` once, in the task that logs the first line on
    ``logger`` holding ``needle``, as it logs it (the logger is set to DEBUG meanwhile, so
    the line is logged). What ``action`` raises is raised there."""
    target = logging.getLogger(logger)
    handler = _OnLine(needle, action)
    level = target.level
    target.setLevel(logging.DEBUG)
    target.addHandler(handler)
    try:
        yield
    finally:
        target.removeHandler(handler)
        target.setLevel(level)
