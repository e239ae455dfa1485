"""The project's error types for bad user input, and the wrapper that turns one into one line.

Stages and the commands run their ``main`` through :func:`run_cli`: a
:class:`UserInputError`, or an ``OSError`` naming a file (a folder where a file is asked for,
no permission, a full disk), prints ``error: <message>`` on stderr and exits with status 2; Ctrl-C
prints one line (``interrupted at epoch N; nothing written``) and exits with 130, the shell's
code for SIGINT; any other exception is a bug and keeps its traceback.

The library names a setting by its role (``<window>``, ``<time_column>``) in a
:class:`SettingError`; whoever knows what the user calls it (a params key for the stages, a
flag for the forecast command) re-words it at the edge (a stage's ``main`` is decorated with
``@stage.main``: ``naming(PARAMS_KEYS)``), so no library module knows a params key.
"""
from __future__ import annotations

import contextlib
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator


class UserInputError(ValueError):
    """Bad params, a bad input file, or a run that cannot succeed with the given settings."""


class ParamsError(UserInputError):
    """A key of params.yaml is missing, unknown, of the wrong type or out of range."""


# the roles a library message may name: <role>, re-worded by the caller
ROLES = ("path", "column", "time_column", "time_format", "sep", "decimal", "thousands",
         "missing", "features", "id_column", "time_gaps", "window", "horizon", "transform",
         "folds", "fold_size", "gap", "lr", "grad_clip", "quantiles", "lookbacks", "season",
         "engine_address", "test_frac", "val_frac", "cal_frac")
_ROLE = re.compile(r"<(" + "|".join(ROLES) + r")>")


def named(text: str, names: dict[str, str]) -> str:
    """``text`` with each role it names (``<window>``) given its name in ``names`` (a role
    without one reads as itself): what a library's message or recorded reason says, worded
    the caller's way."""
    return _ROLE.sub(lambda m: names.get(m.group(1), m.group(1)), text)


class SettingError(UserInputError):
    """Bad input whose message names settings by role (``<window>``); :meth:`named` gives
    the message with the names the user knows (a role without one reads as itself)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.template = message

    def named(self, names: dict[str, str]) -> SettingError:
        """The same error, its roles given the names in ``names``."""
        text = named(self.template, names)
        out = Exception.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.args, out.template = (text,), text
        return out

    def __str__(self) -> str:
        return _ROLE.sub(lambda m: m.group(1), self.template)


class DataError(SettingError):
    """The input data cannot be used as it is."""


class Diverged(SettingError):
    """The training loss stopped being finite."""

    def __init__(self, epoch: int, loss: float) -> None:
        super().__init__(f"training diverged at epoch {epoch} (loss {loss}); lower <lr> or "
                         "set <grad_clip>")
        self.epoch, self.loss = epoch, loss


@contextlib.contextmanager
def naming(names: dict[str, str]) -> Iterator[None]:
    """Inside (or in a function it decorates), a SettingError is raised with its roles named
    by ``names``."""
    try:
        yield
    except SettingError as err:
        raise err.named(names) from None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with where it stopped (``interrupted at epoch 12``)."""


def run_cli(main: Callable[[list[str] | None], object], argv: list[str] | None = None
            ) -> None:
    if threading.current_thread() is threading.main_thread():   # cpu.pin's start-up handler off
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        main(argv)
    except UserInputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except OSError as err:   # a file that cannot be read or written (a folder where a file is
        if not err.filename:  # asked for, no permission, a full disk): one line naming it
            raise
        print(f"error: cannot use {err.filename}: {err.strerror or err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as err:  # every output is written atomically at the end
        where = str(err) if isinstance(err, Interrupted) else "interrupted"
        print(f"\n{where}; nothing written", file=sys.stderr)
        sys.exit(130)
