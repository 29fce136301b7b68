"""The ``tidings`` command line."""

from __future__ import annotations

import argparse
import sys

import tidings

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tidings")
    parser.add_argument("--version", action="version", version=f"tidings {tidings.__version__}")
    parser.parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
