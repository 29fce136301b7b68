"""An agent module that starts a process as it is imported, as an agent that runs commands
(a shell, git) does in its turns: the process says on its stderr whether it has a stdout."""

from __future__ import annotations

import subprocess
import sys

from tidings.channels import EchoAgent as Agent

subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('child stdout: ' + "
                "('none' if sys.stdout is None else 'open') + '\\n')"], check=True)

__all__ = ["Agent"]
