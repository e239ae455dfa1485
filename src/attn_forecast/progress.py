"""Progress on stderr (training epochs, forecasters fitted): one overwritten line on a
terminal, a line every few seconds in logs; short runs stay quiet."""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable


def _clock(seconds: float) -> str:
    m, sec = divmod(int(round(seconds)), 60)
    return f"{m}:{sec:02d}" if m < 60 else f"{m // 60}:{m % 60:02d}:{sec:02d}"


class Progress:
    """Per-epoch progress on stderr once training has run ``after`` seconds (short runs stay
    quiet): on a terminal one overwritten line, at most ten updates a second; otherwise (logs,
    CI, captured output) one line every ``every`` seconds. Shows elapsed time and an ETA for
    ``epochs`` (the run's planned epochs); ``at_most`` (early stopping may end it sooner) says
    the ETA is a bound."""

    def __init__(self, epochs: int, enabled: bool = True, tty: bool | None = None,
                 after: float = 3.0, every: float = 5.0, stream=None,
                 clock: Callable[[], float] = time.monotonic, what: str = "train: epoch",
                 at_most: bool = False) -> None:
        self.what, self.at_most = what, at_most
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty() if tty is None else tty
        self.epochs, self.enabled, self.after, self.every = epochs, enabled, after, every
        self.clock = clock
        self.t0 = clock()
        self.last_print = -math.inf
        self.printed = False

    def update(self, epoch: int, loss: float, val: float | None) -> None:
        """After an epoch."""
        v = f"  val {val:.5f}" if val is not None else ""
        self._show(epoch, f"{self.what} {epoch}/{self.epochs}  loss {loss:.5f}{v}",
                   final=epoch == self.epochs)

    def batch(self, epoch: int, done: int, total: int) -> None:
        """Inside an epoch (long epochs on big data): how many of its windows are done."""
        if done < total:
            self._show(epoch - 1 + done / total,
                       f"{self.what} {epoch}/{self.epochs}, {done:,}/{total:,} windows")

    def step(self, done: int, label: str) -> None:
        """After ``done`` of ``epochs`` units of work (a forecaster fitted), ``label`` the
        last one."""
        self._show(done, f"{self.what} {done}/{self.epochs} ({label})", final=done == self.epochs)

    def _show(self, epochs_done: float, text: str, final: bool = False) -> None:
        now = self.clock()
        elapsed = now - self.t0
        if not self.enabled or elapsed < self.after or epochs_done <= 0:
            return
        gap = 0.1 if self.tty else self.every
        if now - self.last_print < gap and not final:
            return
        self.last_print = now
        eta = elapsed / epochs_done * (self.epochs - epochs_done)
        line = f"{text}  {_clock(elapsed)} elapsed, {_clock(eta)} left" \
            + (" at most" if self.at_most else "")
        if self.tty:
            print(f"\r{line}", end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)
        self.printed = True

    def close(self) -> None:
        if self.tty and self.printed:
            print(file=self.stream, flush=True)
            self.printed = False
