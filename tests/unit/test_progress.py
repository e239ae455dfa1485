"""Unit tests for attn_forecast.progress: the progress lines and their ETA."""
from __future__ import annotations

import io

from attn_forecast.progress import Progress
from unit.training.helpers import _p


class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_quiet_for_short_runs_then_one_line_every_few_seconds():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(100, tty=False, after=3.0, every=5.0, stream=out, clock=clock)
    for epoch in range(1, 101):
        clock.now = epoch * 0.5  # half a second an epoch: 50 s in all
        bar.update(epoch, 1.0 / epoch, None)
    bar.close()
    lines = out.getvalue().splitlines()
    # quiet for the first 3 s, then a line every 5 s, and the last epoch always
    assert lines[0].startswith("train: epoch 6/100")
    epochs = [int(ln.split()[2].split("/")[0]) for ln in lines]
    assert epochs == [6, 16, 26, 36, 46, 56, 66, 76, 86, 96, 100]
    assert "0:03 elapsed, 0:47 left" in lines[0]  # ETA from the pace so far
    assert all("\r" not in ln for ln in lines)


def test_progress_on_a_terminal_overwrites_one_line():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(10, tty=True, after=0.0, stream=out, clock=clock)
    for epoch in range(1, 11):
        clock.now = float(epoch)
        bar.update(epoch, 0.5, 0.25)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 10 and text.endswith("\n") and "val 0.25000" in text


def test_progress_inside_one_long_epoch():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(1, tty=False, after=3.0, every=5.0, stream=out, clock=clock)
    for b in range(1, 21):                      # one epoch of 20 batches, 2 s each
        clock.now = 2.0 * b
        bar.batch(1, 100 * b, 2000)
    bar.update(1, 0.5, None)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train: epoch 1/1, 200/2,000 windows")
    assert "0:04 elapsed, 0:36 left" in lines[0]
    # a line at 4, 10, 16, 22, 28 and 34 s (every 5 s at most), and the end of the epoch
    assert len(lines) == 7 and lines[-1].startswith("train: epoch 1/1  loss 0.50000")


def test_progress_shows_hours_and_stays_quiet_when_disabled():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(2, tty=False, after=0.0, stream=out, clock=clock)
    clock.now = 3725.0                          # 1 h 2 min 5 s for the first of two epochs
    bar.update(1, 0.1, None)
    assert "1:02:05 elapsed, 1:02:05 left" in out.getvalue()
    quiet = io.StringIO()
    off = Progress(2, enabled=False, after=0.0, stream=quiet, clock=clock)
    off.update(2, 0.1, None)
    off.close()
    assert quiet.getvalue() == ""


def test_the_eta_counts_the_epochs_max_steps_leaves_and_says_when_it_is_a_bound(capsys):
    from attn_forecast.training.loop import planned_epochs
    # 200 epochs of 10 steps with max_steps 50: five epochs run, so the ETA is for five
    assert planned_epochs(_p(epochs=200, max_steps=50), 10) == 5
    assert planned_epochs(_p(epochs=200, max_steps=0), 10) == 200
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(5, tty=False, after=0.0, stream=out, clock=clock, at_most=True)
    clock.now = 2.0
    bar.update(1, 0.1, 0.2)
    assert out.getvalue().rstrip().endswith("0:02 elapsed, 0:08 left at most")


def test_progress_counts_forecasters_fitted():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(4, tty=False, after=3.0, every=5.0, stream=out, clock=clock,
                   what="baselines: forecasters fitted")
    for k, (name, seconds) in enumerate([("naive", 0.1), ("ets", 6.0), ("theta", 12.0),
                                         ("arima", 30.0)], 1):
        clock.now = seconds
        bar.step(k, name)
    lines = out.getvalue().splitlines()
    # quiet while fast, then which are done and how long the rest may take; the last always
    assert lines[0] == "baselines: forecasters fitted 2/4 (ets)  0:06 elapsed, 0:06 left"
    assert lines[-1].startswith("baselines: forecasters fitted 4/4 (arima)  0:30 elapsed")
    assert len(lines) == 3
