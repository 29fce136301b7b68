"""An agent module whose import warns, as many libraries do when imported (urllib3's
NotOpenSSLWarning, a deprecation of a dependency): Python prints such a warning on stderr as
lines of plain text."""

from __future__ import annotations

import warnings

from tidings.channels import EchoAgent as Agent

warnings.warn("an old library\nsays so on two lines", UserWarning, stacklevel=1)

__all__ = ["Agent"]
