"""The project's error type for bad user input, and the wrapper that turns it into one line.

Stages and the forecast command run their ``main`` through :func:`run_cli`: a
:class:`UserInputError` prints ``error: <message>`` on stderr and exits with status 2; Ctrl-C
prints one line (``interrupted at epoch N; nothing written``) and exits with 130, the shell's
code for SIGINT; any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import sys
from collections.abc import Callable


class UserInputError(ValueError):
    """Bad params, a bad input file, or a run that cannot succeed with the given settings."""


class Diverged(UserInputError):
    """The training loss stopped being finite (the stage names the settings to change)."""

    def __init__(self, epoch: int, loss: float) -> None:
        super().__init__(f"training diverged at epoch {epoch} (loss {loss})")
        self.epoch, self.loss = epoch, loss


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with where it stopped (``interrupted at epoch 12``)."""


def run_cli(main: Callable[[list[str] | None], object], argv: list[str] | None = None) -> None:
    try:
        main(argv)
    except UserInputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as err:  # every output is written atomically at the end
        where = str(err) if isinstance(err, Interrupted) else "interrupted"
        print(f"\n{where}; nothing written", file=sys.stderr)
        sys.exit(130)
