"""An agent module whose import gets two Ctrl-Cs, as a slow import (a heavy dependency) does
when the user presses Ctrl-C twice while ``tidings serve`` loads it: the signals come while
the event loop is busy, before it could take the first one. Raised here, in the import, so the
test needs no timing."""

from __future__ import annotations

import signal

from tidings.channels import EchoAgent as Agent

signal.raise_signal(signal.SIGINT)
signal.raise_signal(signal.SIGINT)

__all__ = ["Agent"]
