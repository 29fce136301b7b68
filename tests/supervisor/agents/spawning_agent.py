"""An agent module that starts a process as it is imported, as an agent that runs commands
(a shell, git) does in its turns: the process says on its stderr whether it has a stdin and a
stdout."""

from __future__ import annotations

import subprocess
import sys

from tidings.channels import EchoAgent as Agent

subprocess.run([sys.executable, "-c", "import sys\n"
                "for name in ('stdin', 'stdout'):\n"
                "    state = 'none' if getattr(sys, name) is None else 'open'\n"
                "    sys.stderr.write(f'child {name}: {state}\\n')\n"], check=True)

__all__ = ["Agent"]
