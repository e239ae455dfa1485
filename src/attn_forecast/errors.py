"""The project's error type for bad user input, and the wrapper that turns it into one line.

Stages and the forecast command run their ``main`` through :func:`run_cli`: a
:class:`UserInputError` prints ``error: <message>`` on stderr and exits with status 2; any other
exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import sys
from collections.abc import Callable


class UserInputError(ValueError):
    """Bad params, a bad input file, or a run that cannot succeed with the given settings."""


def run_cli(main: Callable[[list[str] | None], object], argv: list[str] | None = None) -> None:
    try:
        main(argv)
    except UserInputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
