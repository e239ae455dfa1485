"""Unit tests for attn_forecast.panel: windows that never cross series, each series split by the
single-series rule and scaled by its own training part only, short series left out, the
memory-mapped store, the synthetic panel, reading a long CSV and the generate stage's CSV,
and the forecast command scaling every id as training did."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.baselines import Baselines
from attn_forecast.data import source_settings
from attn_forecast.errors import UserInputError
from attn_forecast.evaluation import evaluate_panel, panel_tables
from attn_forecast.forecast import forecast_levels, load_payload, main, panel_scaler
from attn_forecast.model import ModelSettings, build_model, save_checkpoint
from attn_forecast.panel import (ARRAYS, Panel, concat_ranges, is_panel_dir, load_data,
                                 load_panel, prepare_panel, read_panel_csv, read_raw_panel,
                                 save_panel, synthetic_chunks, write_panel_csv)
from attn_forecast.params import DataParams
from attn_forecast.train import predict
from attn_forecast.windows import make_split, prepare, save_prepared

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W, H = 5, 3
TRANSFORMS = ("none", "diff", "log_return")


# ---------------------------------------------------------------- helpers
def _hand_series() -> list[np.ndarray]:
    """Five positive series of different lengths, built by hand."""
    rs = np.random.default_rng(7)
    return [1.5 * np.arange(1, 38, dtype=np.float64),                       # a ramp, 37
            50 + 10 * np.sin(np.arange(50) / 3.0),                           # 50
            20 * np.exp(np.cumsum(rs.normal(0, 0.05, 64))),                  # a walk, 64
            np.tile([5.0, 6.0, 5.5, 7.0], 10),                               # 40
            rs.uniform(1, 100, 90)]                                           # noise, 90


def _arrays(series: list[np.ndarray], ids: list[str] | None = None):
    """(ids, offsets, t, levels, signal) of a panel holding ``series`` one after the other."""
    ids = np.array(ids if ids is not None else [f"s{i}" for i in range(len(series))])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in series])]).astype(np.int64)
    levels = np.concatenate(series).astype(np.float64)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    return ids, offsets, t, levels, np.full(len(levels), np.nan)


def _panel(series, *, transform="none", scaler="zscore", window=W, horizon=H, test_frac=0.2,
           val_frac=0.1, ids=None, source=None) -> Panel:
    return prepare_panel(*_arrays(series, ids), window=window, horizon=horizon,
                         test_frac=test_frac, val_frac=val_frac, scaler=scaler,
                         transform=transform, source=source)


def _model_values(levels: np.ndarray, transform: str) -> np.ndarray:
    """The model series by hand: zm[j] belongs to level j + offset."""
    if transform == "none":
        return levels.copy()
    if transform == "diff":
        return levels[1:] - levels[:-1]
    return np.log(levels[1:] / levels[:-1])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same dtype, shape and bytes (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- 1. windows never cross series
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_windows_never_cross_series_and_never_read_a_series_first_row(transform):
    series = _hand_series()
    p = _panel(series, transform=transform)
    off = 0 if transform == "none" else 1
    assert p.n_series == len(series) and p.dropped["count"] == 0
    seen = set()
    for part in ("train", "val", "test"):
        ends = p.ends(part)
        assert len(ends) > 0
        assert np.all(np.diff(ends) > 0)                      # sorted, no repeats
        assert not seen & set(ends.tolist())                  # parts are disjoint
        seen |= set(ends.tolist())
        x, y = (np.lib.stride_tricks.sliding_window_view(p.z, k) for k in (W, H))
        for e in ends:
            holders = [i for i in range(len(series))
                       if p.offsets[i] <= e - W and e + H <= p.offsets[i + 1]]
            assert len(holders) == 1, f"{part} window {e} crosses series"
            i = holders[0]
            a = int(p.offsets[i])
            assert e - W >= a + off, f"{part} window {e} reads row {a} (no step there)"
            # what the window reads is this series' own model values, scaled by its scaler
            zm = (_model_values(series[i], transform) - p.center[i]) / p.scale[i]
            local = e - a - off                                # first target, model index
            np.testing.assert_allclose(x[e - W], zm[local - W:local], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(y[e], zm[local:local + H], rtol=1e-5, atol=1e-5)
    if off:  # each series' first row has no step: it holds 0
        assert np.all(p.z[p.offsets[:-1]] == 0)


# ---------------------------------------------------------------- 2. the single-series rule
@pytest.mark.parametrize("transform", ("none", "diff"))
@pytest.mark.parametrize("val_frac", (0.1, 0.0))
def test_each_series_is_split_by_the_single_series_rule(transform, val_frac):
    off = 0 if transform == "none" else 1
    lengths = list(range(6, 80))
    rs = np.random.default_rng(3)
    series = [rs.uniform(1, 10, n) for n in lengths]
    p = _panel(series, transform=transform, val_frac=val_frac, test_frac=0.2)
    usable = []
    for n in lengths:
        try:
            usable.append(make_split(n - off, W, H, 0.2, val_frac, off))
        except UserInputError:
            usable.append(None)
    kept = [i for i, s in enumerate(usable) if s is not None]
    assert len(kept) < len(lengths)                            # some too short for the rule
    assert p.ids.tolist() == [f"s{i}" for i in kept]
    assert p.dropped["count"] == len(lengths) - len(kept)
    sid = {part: p.series_of(p.ends(part)) for part in ("train", "val", "test")}
    for k, i in enumerate(kept):
        split = usable[i]
        assert p.lengths[k] == lengths[i]
        for part in ("train", "val", "test"):
            local = p.ends(part)[sid[part] == k] - p.offsets[k]
            np.testing.assert_array_equal(local, split.ends(part) + off,
                                          err_msg=f"series of {lengths[i]}, {part}")
        # the cuts by target time: test targets are the last test_frac of the levels
        assert p.test_start[k] == split.val_end + off
        assert p.val_start[k] == split.train_end + off


# ---------------------------------------------------------------- 3. per-series scaling
@pytest.mark.parametrize("scaler", ("zscore", "minmax"))
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_each_series_is_scaled_by_its_own_training_part_only(transform, scaler):
    rs = np.random.default_rng(11)
    b = 30 + rs.uniform(0, 5, 45)
    a = 100 * np.exp(np.cumsum(rs.normal(0, 0.03, 60)))
    base = _panel([b, a], transform=transform, scaler=scaler)
    k = 1                                                      # series A is the second
    val_start = int(base.val_start[k])
    assert val_start == math.floor(60 * (1 - 0.2 - 0.1) + 1e-9)
    # the reference: the model values of A's training part (levels before val_start)
    train = _model_values(a[:val_start], transform)
    if scaler == "zscore":
        expected = (np.mean(train), np.std(train))
    else:
        expected = (np.min(train), np.max(train) - np.min(train))
    assert base.center[k] == pytest.approx(expected[0], rel=1e-12, abs=1e-15)
    assert base.scale[k] == pytest.approx(expected[1], rel=1e-12)
    # ... which is the single-series scaler of A alone
    alone = prepare(a, np.full(60, np.nan), np.arange(60.0), window=W, horizon=H, test_frac=0.2,
                    val_frac=0.1, scaler=scaler, transform=transform)
    assert (base.center[k], base.scale[k]) == pytest.approx(
        (alone.scaler.center, alone.scaler.scale), rel=1e-12, abs=1e-15)

    # any value of A from its first validation target on changes nothing of A's scaler
    for j in range(val_start, len(a)):
        poisoned = a.copy()
        poisoned[j] *= 37.0
        p = _panel([b, poisoned], transform=transform, scaler=scaler)
        assert (p.center[k], p.scale[k]) == (base.center[k], base.scale[k]), f"level {j}"
    # the last training level does (the test can see a leak)
    poisoned = a.copy()
    poisoned[val_start - 1] *= 37.0
    p = _panel([b, poisoned], transform=transform, scaler=scaler)
    assert (p.center[k], p.scale[k]) != (base.center[k], base.scale[k])

    # another series B, whatever it holds and however long, changes nothing of A
    other = 5 + np.abs(rs.normal(1000, 300, 70))
    p = _panel([other, a], transform=transform, scaler=scaler)
    assert (p.center[k], p.scale[k]) == (base.center[k], base.scale[k])
    assert p.center[0] != base.center[0]
    assert _same(p.z[p.offsets[1]:p.offsets[2]], base.z[base.offsets[1]:base.offsets[2]])


def test_a_constant_training_part_is_scaled_by_one_around_its_value():
    flat = np.r_[np.full(40, 3.0), np.linspace(3, 9, 10)]
    p = _panel([flat], transform="none", scaler="zscore")
    assert (p.center[0], p.scale[0]) == (3.0, 1.0)
    np.testing.assert_array_equal(p.z[:40], 0.0)


# ---------------------------------------------------------------- 4. short series
def test_short_series_are_left_out_and_listed():
    rs = np.random.default_rng(5)
    series = [rs.uniform(1, 2, n) for n in (60, 5, 50, 12, 70, 3)]
    ids = ["long1", "tiny1", "long2", "tiny2", "long3", "tiny3"]
    p = _panel(series, ids=ids, transform="diff")
    assert p.dropped == {"count": 3, "ids": ["tiny1", "tiny2", "tiny3"]}
    assert p.ids.tolist() == ["long1", "long2", "long3"]
    np.testing.assert_array_equal(p.offsets, [0, 60, 110, 180])
    np.testing.assert_array_equal(p.levels, np.concatenate([series[0], series[2], series[4]]))
    np.testing.assert_array_equal(p.t, np.concatenate([np.arange(n, dtype=float)
                                                       for n in (60, 50, 70)]))
    assert p.meta()["dropped"] == p.dropped and p.meta()["n_series"] == 3
    # a kept series is prepared as if the short ones were never there
    alone = _panel([series[2]], ids=["long2"], transform="diff")
    assert (alone.center[0], alone.scale[0]) == (p.center[1], p.scale[1])
    assert _same(alone.z, p.z[60:110])
    # only the first five are named, all are counted
    many = _panel([rs.uniform(1, 2, 4) for _ in range(8)] + [series[0]], transform="diff")
    assert many.dropped == {"count": 8, "ids": [f"s{i}" for i in range(5)]}


def test_a_non_positive_value_under_log_return_names_its_series():
    good = np.linspace(1, 5, 40)
    bad = np.r_[np.linspace(1, 5, 20), -1.0, np.linspace(1, 5, 19)]
    with pytest.raises(UserInputError, match="'bad'"):
        _panel([good, bad], ids=["good", "bad"], transform="log_return")


def test_a_panel_of_only_short_series_is_refused():
    with pytest.raises(UserInputError, match="every series of the panel is too short"):
        _panel([np.arange(1.0, 9.0), np.arange(1.0, 12.0)], transform="none")


# ---------------------------------------------------------------- 5. the memory-mapped store
def _check_same_panel(back: Panel, p: Panel) -> None:
    for name in ("levels", "signal", "t", "z", "ids", "offsets", "val_start", "test_start",
                 "center", "scale"):
        assert _same(getattr(back, name), getattr(p, name)), name
    assert (back.window, back.horizon, back.transform, back.scaler, back.source, back.dropped) \
        == (p.window, p.horizon, p.transform, p.scaler, p.source, p.dropped)
    for part in ("train", "val", "test"):
        np.testing.assert_array_equal(back.ends(part), p.ends(part))


@pytest.mark.parametrize("times", ("steps", "dates"))
def test_the_saved_panel_reads_back_bit_for_bit_memory_mapped(tmp_path, times):
    series = _hand_series() + [np.arange(1.0, 5.0)]           # one to drop, too
    p = _panel(series, transform="log_return", scaler="minmax",
               source={"kind": "panel", "column": "value"})
    if times == "dates":   # what read_raw_panel gives for a date column
        p = Panel(**{**{f: getattr(p, f) for f in p.__dataclass_fields__},
                     "t": np.datetime64("2024-01-01", "s")
                     + np.arange(len(p.levels)).astype("timedelta64[D]"),
                     "signal": np.linspace(0, 1, len(p.levels))})
    save_panel(tmp_path / "prepared", p)
    back = load_panel(tmp_path / "prepared")
    _check_same_panel(back, p)
    assert isinstance(back.levels, np.memmap) and isinstance(back.z, np.memmap)
    for name in ARRAYS:
        arr = np.load(tmp_path / "prepared" / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        assert isinstance(arr, np.memmap), name
        assert _same(arr, getattr(p, name)), name
    _check_same_panel(load_panel(tmp_path / "prepared", mmap=False), p)


def test_a_panel_and_a_single_series_replace_each_others_files(tmp_path):
    folder = tmp_path / "prepared"
    rs = np.random.default_rng(2)
    levels = rs.uniform(1, 2, 60)
    single = prepare(levels, np.full(60, np.nan), np.arange(60.0), window=W, horizon=H,
                     test_frac=0.2, val_frac=0.1, scaler="zscore", transform="none")
    save_prepared(folder, single)
    assert {f.name for f in folder.iterdir()} == {"series.npz", "meta.json"}
    p = _panel(_hand_series())
    save_panel(folder, p)
    assert {f.name for f in folder.iterdir()} == \
        {"panel.json", "index.npz", "levels.npy", "signal.npy", "t.npy", "z.npy"}
    assert is_panel_dir(folder) and isinstance(load_data(folder), Panel)
    save_prepared(folder, single)
    assert {f.name for f in folder.iterdir()} == {"series.npz", "meta.json"}
    assert not is_panel_dir(folder)
    assert not getattr(load_data(folder), "is_panel", False)


# ---------------------------------------------------------------- 6. the synthetic panel
def test_synthetic_chunks_do_not_depend_on_the_chunk_size_or_the_number_of_series():
    args = dict(n_points=60, min_points=20, seed=3, noise_std=0.1, trend=0.01)
    big = list(synthetic_chunks(10, rows=1_000_000, **args))
    small = list(synthetic_chunks(10, rows=50, **args))
    assert len(big) == 1 and len(small) > 3
    # every chunk holds whole series, at most ``rows`` rows unless one series is longer
    for chunk in small:
        assert len(chunk) <= 50 or chunk["id"].nunique() == 1
        assert not set(chunk["id"]) & set(c for other in small if other is not chunk
                                          for c in other["id"])
    whole = pd.concat(big, ignore_index=True)
    pd.testing.assert_frame_equal(pd.concat(small, ignore_index=True), whole, check_exact=True)
    lengths = whole.groupby("id", sort=False).size()
    assert lengths.min() >= 20 and lengths.max() <= 60 and lengths.nunique() > 1
    # series i of a 5-series panel is series i of the 10-series one
    five = pd.concat(synthetic_chunks(5, **args), ignore_index=True)
    pd.testing.assert_frame_equal(five, whole.iloc[:len(five)].reset_index(drop=True),
                                  check_exact=True)
    assert five["id"].unique().tolist() == [f"s{i}" for i in range(5)]
    # and a different seed is a different panel
    other = pd.concat(synthetic_chunks(5, **{**args, "seed": 4}), ignore_index=True)
    assert not np.array_equal(other["value"].to_numpy()[:20], five["value"].to_numpy()[:20])


# ---------------------------------------------------------------- 7. a user's long CSV
def _write(path, text: str):
    path.write_text(text)
    return path


def test_a_long_csv_is_grouped_by_id_in_first_appearance_and_sorted_by_time(tmp_path):
    path = _write(tmp_path / "long.csv", "id,t,value\n"
                  "b,3,13\n" "a,2,2\n" "b,1,11\n" "c,10,100\n" "a,1,1\n" "b,2,12\n"
                  "a,3,3\n" "c,9,99\n")
    got = read_panel_csv(path, "id", "value", "t", "error")
    assert list(got.columns) == ["id", "t", "value", "signal"]
    assert got["id"].tolist() == ["b"] * 3 + ["a"] * 3 + ["c"] * 2
    assert got["t"].astype(float).tolist() == [1, 2, 3, 1, 2, 3, 9, 10]
    assert got["value"].tolist() == [11, 12, 13, 1, 2, 3, 99, 100]
    assert got["signal"].isna().all()


def test_a_long_csv_sorts_dates_by_time_not_by_text(tmp_path):
    path = _write(tmp_path / "dates.csv", "day;who;price\n"
                  "02/02/2024;x;2\n" "03/01/2024;x;1\n" "01/03/2024;x;3\n" "15/01/2024;y;7\n")
    got = read_panel_csv(path, "who", "price", "day", "error", time_format="%d/%m/%Y",
                         sep=";")
    assert got["id"].tolist() == ["x", "x", "x", "y"]
    assert got["t"].tolist() == ["2024-01-03", "2024-02-02", "2024-03-01", "2024-01-15"]
    assert got["value"].tolist() == [1, 2, 3, 7]


def test_a_time_twice_in_one_id_is_refused_but_not_in_two_ids(tmp_path):
    dup = _write(tmp_path / "dup.csv", "id,t,value\na,1,1\nb,1,5\nb,2,6\nb,1,7\na,2,2\n")
    with pytest.raises(UserInputError, match=r"id 'b' has the time '1' twice \(line 3\)"):
        read_panel_csv(dup, "id", "value", "t", "error")
    ok = _write(tmp_path / "ok.csv", "id,t,value\na,1,1\nb,1,5\nb,2,6\na,2,2\n")
    assert len(read_panel_csv(ok, "id", "value", "t", "error")) == 4


def test_ffill_never_carries_a_value_from_one_id_into_the_next(tmp_path):
    # inside an id, ffill carries the previous *time's* value (the file's order is shuffled)
    path = _write(tmp_path / "gaps.csv", "id,t,value\n"
                  "a,3,\n" "a,1,1\n" "a,2,2\n" "b,2,\n" "b,1,10\n" "b,3,30\n")
    got = read_panel_csv(path, "id", "value", "t", "ffill")
    assert got["value"].tolist() == [1, 2, 2, 10, 10, 30]
    # an id whose first time is empty has no value to carry, even right after another id's
    path = _write(tmp_path / "lead.csv", "id,t,value\n" "a,1,1\n" "a,2,2\n" "b,1,\n" "b,2,5\n")
    with pytest.raises(UserInputError,
                       match=r"id 'b' starts with empty cells in 'value' \(line 4\)"):
        read_panel_csv(path, "id", "value", "t", "ffill")
    got = read_panel_csv(path, "id", "value", "t", "drop")
    assert got["id"].tolist() == ["a", "a", "b"] and got["value"].tolist() == [1, 2, 5]


# ---------------------------------------------------------------- 8. the generate stage's CSV
@pytest.mark.parametrize("n_series, n_points, min_points", [(4, 30, 10), (40, 6000, 0)])
def test_the_generated_panel_csv_reads_back_exactly(tmp_path, n_series, n_points, min_points):
    """The second case is over 8 MiB: read_raw_panel reads it in several blocks, and series
    run across block boundaries."""
    import pyarrow.csv as pacsv
    args = (n_series, n_points, min_points, 9, 0.1, 0.01)
    path = tmp_path / "panel.csv"
    rows, series = write_panel_csv(path, synthetic_chunks(*args, rows=5000))
    whole = pd.concat(synthetic_chunks(*args), ignore_index=True)
    assert (rows, series) == (len(whole), n_series)    # series run across chunks too
    ids, offsets, t, value, signal = read_raw_panel(path)
    names = whole["id"].unique()
    assert ids.tolist() == names.tolist()
    sizes = whole.groupby("id", sort=False).size().to_numpy()
    np.testing.assert_array_equal(offsets, np.r_[0, np.cumsum(sizes)])
    assert offsets.dtype == np.int64
    assert _same(value, whole["value"].to_numpy(np.float64))
    assert _same(signal, whole["signal"].to_numpy(np.float64))
    np.testing.assert_array_equal(t, whole["t"].to_numpy())
    if n_points > 1000:
        blocks = sum(1 for _ in pacsv.open_csv(
            str(path), read_options=pacsv.ReadOptions(block_size=8 << 20)))
        assert blocks > 1


def test_a_generated_csv_with_an_id_in_two_places_is_refused(tmp_path):
    path = tmp_path / "panel.csv"
    frame = pd.concat(synthetic_chunks(3, 20, 0, 1, 0.1, 0.0), ignore_index=True)
    write_panel_csv(path, [frame, frame[frame["id"] == "s0"]])
    with pytest.raises(UserInputError, match="'s0' appears in two places"):
        read_raw_panel(path)


# ---------------------------------------------------------------- 9. concat_ranges
def test_concat_ranges_is_the_loop():
    rs = np.random.default_rng(0)
    for size in (0, 1, 2, 7, 50):
        starts = rs.integers(-5, 40, size)
        stops = starts + rs.integers(-4, 6, size)              # some empty or reversed
        expected = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)]
                                  + [np.zeros(0, np.int64)]).astype(np.int64)
        got = concat_ranges(starts, stops)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(concat_ranges(np.array([3, 3, 9]), np.array([3, 1, 9])), [])


# ---------------------------------------------------------------- 10. the forecast command
@pytest.fixture(scope="module", params=TRANSFORMS)
def forecaster(request, tmp_path_factory):
    """A tiny untrained model over a small panel (each transform), and its checkpoint."""
    rs = np.random.default_rng(4)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (40, 55, 47)]
    source = source_settings(DataParams(kind="panel"))
    p = _panel(series, transform=request.param, ids=["north", "south", "east"], window=8,
               horizon=2, source=source)
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=8, horizon=2, d_model=8, ffn_dim=8)).eval()
    path = tmp_path_factory.mktemp("model") / "model.pt"
    save_checkpoint(path, model, {"prepare": p.meta(), "best_epoch": 0, "history": []})
    return p, model, path


def test_the_forecast_command_forecasts_a_test_window_as_evaluate_does(forecaster):
    p, model, path = forecaster
    meta = load_payload(str(path))["prepare"]
    ev = evaluate_panel(p, model, baselines=Baselines(forecasts={}), noise_std=None,
                        weights=False)
    np.testing.assert_array_equal(ev.ends, p.ends("test"))
    z = torch.from_numpy(np.asarray(p.z))
    for k, e in enumerate(ev.ends):
        i = int(p.series_of(np.array([e]))[0])
        a = int(p.offsets[i])
        scaler, known = panel_scaler(meta, str(p.ids[i]), p.levels[a:e])
        assert known
        got = forecast_levels(model, {**meta, "scaler": scaler}, p.levels[a:e], p.horizon)
        # the same window alone through the model: the same inputs, so the same forecast
        one = predict(model, z, torch.tensor([e]), p.window, p.horizon).numpy()
        np.testing.assert_allclose(p.to_levels(one, np.array([e]))[0], got, rtol=1e-12)
        # evaluate runs every test window in one batch: float32 kernels may round the
        # model's output a unit apart (1.2e-7 of a scaled value) from a batch of one
        np.testing.assert_allclose(got, ev.forecasts["model"][k], rtol=1e-6)
        assert got[:1] == pytest.approx(
            forecast_levels(model, {**meta, "scaler": scaler}, p.levels[a:e], 1), rel=1e-12)
    # the tables name each window's series and time, and the model's first step
    out = panel_tables(ev, p, model.settings)
    pred = out["predictions"]
    assert pred["id"].tolist() == p.ids[p.series_of(ev.ends)].tolist()
    np.testing.assert_array_equal(pred["t"], p.t[ev.ends])
    np.testing.assert_array_equal(pred["predicted"], ev.forecasts["model"][:, 0])
    np.testing.assert_array_equal(pred["actual"], p.levels[ev.ends])
    # the RMSE by step is the mean over series of each series' RMSE at that step
    sid = p.series_of(ev.ends)
    err = ev.forecasts["model"] - ev.actual
    per = [[np.sqrt(np.mean(err[sid == s, h] ** 2)) for s in range(p.n_series)]
           for h in range(p.horizon)]
    np.testing.assert_allclose(out["horizon"]["model"], np.mean(per, axis=1), rtol=1e-12)


def test_the_forecast_command_writes_each_id_scaled_as_training_did(forecaster, tmp_path,
                                                                    capsys):
    p, model, path = forecaster
    meta = load_payload(str(path))["prepare"]
    frames = [pd.DataFrame({"id": str(p.ids[i]), "t": np.asarray(p.t[a:b]).astype(int),
                            "value": p.levels[a:b]})
              for i, (a, b) in enumerate(zip(p.offsets[:-1], p.offsets[1:]))]
    rs = np.random.default_rng(1)
    unseen = 50 * np.exp(np.cumsum(rs.normal(0, 0.05, 30)))
    frames.append(pd.DataFrame({"id": "new", "t": np.arange(30), "value": unseen}))
    raw = pd.concat(frames, ignore_index=True)
    csv = tmp_path / "rows.csv"
    raw.sample(frac=1.0, random_state=3).to_csv(csv, index=False)   # any row order
    out = tmp_path / "forecast.csv"
    steps = 5                                                  # past the horizon: recursive
    main(["--model", str(path), "--csv", str(csv), "--steps", str(steps), "--out", str(out)])
    assert "for each of 4 ids (1 id(s) not in training" in capsys.readouterr().out
    got = pd.read_csv(out, dtype={"id": str})
    assert list(got.columns) == ["id", "step", "time", "forecast"]
    names = raw["id"].drop_duplicates().tolist()
    order = raw.sample(frac=1.0, random_state=3)["id"].drop_duplicates().tolist()
    assert got["id"].tolist() == [n for n in order for _ in range(steps)]
    assert got["step"].tolist() == list(range(1, steps + 1)) * len(names)
    for name in names:
        rows = got[got["id"] == name]
        levels = raw.loc[raw["id"] == name, "value"].to_numpy()
        if name in p.ids:
            i = int(np.flatnonzero(p.ids == name)[0])
            scaler = {"kind": "zscore", "center": float(p.center[i]),
                      "scale": float(p.scale[i])}
        else:   # an id the training never saw: scaled by its whole history
            r = {"none": levels, "diff": np.diff(levels),
                 "log_return": np.diff(np.log(levels))}[p.transform]
            scaler = {"kind": "zscore", "center": float(np.mean(r)), "scale": float(np.std(r))}
        want = forecast_levels(model, {**meta, "scaler": scaler}, levels, steps)
        np.testing.assert_allclose(rows["forecast"], want, rtol=1e-9)
        np.testing.assert_array_equal(rows["time"], len(levels) + np.arange(steps))


@pytest.mark.parametrize("forecaster", ["log_return"], indirect=True)
def test_the_forecast_command_names_an_unseen_id_it_cannot_transform(forecaster, tmp_path):
    _, _, path = forecaster
    values = np.r_[np.linspace(50, 60, 30), -1.0, np.linspace(50, 60, 9)]
    csv = tmp_path / "rows.csv"
    pd.DataFrame({"id": "newid", "t": np.arange(40), "value": values}).to_csv(csv, index=False)
    with pytest.raises(UserInputError, match="id 'newid'"):
        main(["--model", str(path), "--csv", str(csv), "--out", str(tmp_path / "out.csv")])


# ---------------------------------------------------------------- baselines and scores
def test_panel_baselines_are_each_series_own(monkeypatch):
    """naive, mean, seasonal naive and ETS on a panel give, for every series, what the same
    forecaster gives on that series alone; the per-series scores and their aggregates equal
    the single-series metrics computed series by series."""
    from attn_forecast import metrics as M
    from attn_forecast import panel as P
    from attn_forecast import statbaselines as S
    series = _hand_series()
    p = _panel(series, val_frac=0.0)
    f, warnings = P.panel_baselines(p, ["naive", "seasonal_naive", "mean", "ets"],
                                    ridge_alpha=1.0, season=4)
    assert warnings == []
    test = p.ends("test")
    sid = p.series_of(test)
    for i, lv in enumerate(series):
        a = int(p.offsets[i])
        rows = sid == i
        first = test[rows] - a                                   # local first target
        np.testing.assert_array_equal(f["naive"][rows], M.naive_forecast(lv[first - 1], H))
        np.testing.assert_array_equal(f["seasonal_naive"][rows],
                                      M.seasonal_naive_forecast(lv, first, H, 4))
        train = lv[:p.val_start[i]]
        np.testing.assert_allclose(f["mean"][rows], np.mean(train), rtol=1e-12)
        np.testing.assert_allclose(f["ets"][rows],
                                   S.forecast("ets", lv, int(p.val_start[i]), first, H, 4),
                                   rtol=1e-9)
    actual = p.targets(test)
    table = P.by_series(p, test, actual, f)
    for i, lv in enumerate(series):
        rows = sid == i
        scale = M.naive_scale(lv[:p.val_start[i]])
        for name in f:
            assert math.isclose(table[f"{name}_rmse"][i], M.rmse(actual[rows], f[name][rows]),
                                rel_tol=1e-9)
            assert math.isclose(table[f"{name}_mase"][i],
                                M.mase(actual[rows], f[name][rows], scale), rel_tol=1e-9)
    agg = P.aggregate(table, list(f))
    assert math.isclose(agg["ets"]["mase_mean"], table["ets_mase"].mean(), rel_tol=1e-12)
    assert agg["ets"]["beats_naive"] == np.mean(table["ets_mase"] < table["naive_mase"])
    # beyond the limit, per-series models are not fitted: null, with one warning
    monkeypatch.setattr(P, "STAT_SERIES", 2)
    f, warnings = P.panel_baselines(p, ["naive", "theta"], ridge_alpha=1.0, season=0)
    assert f["theta"] is None and len(warnings) == 1 and "up to 2 series" in warnings[0]


def test_the_global_ridge_reads_each_series_scaled_windows():
    """ridge on a panel: one fit over every series' scaled training windows, its forecasts
    unscaled with each window's own series' scaler."""
    from sklearn.linear_model import Ridge
    from attn_forecast import panel as P
    p = _panel(_hand_series(), val_frac=0.0)
    f, _ = P.panel_baselines(p, ["ridge"], ridge_alpha=0.5, season=0)
    tr, te = p.ends("train"), p.ends("test")
    z = np.asarray(p.z, dtype=np.float64)
    x = np.stack([z[e - W:e] for e in tr])
    y = np.stack([z[e:e + H] for e in tr])
    fit = Ridge(alpha=0.5).fit(x, y)
    pred = fit.predict(np.stack([z[e - W:e] for e in te]))
    sid = p.series_of(te)
    want = pred * p.scale[sid, None] + p.center[sid, None]
    np.testing.assert_allclose(f["ridge"], want, rtol=1e-5)


@pytest.mark.parametrize("forecaster", ["none"], indirect=True)
def test_an_id_too_short_to_forecast_is_left_out_and_named(forecaster, tmp_path, capsys):
    p, _, path = forecaster
    a, b = int(p.offsets[0]), int(p.offsets[1])
    raw = pd.concat([pd.DataFrame({"id": "long", "t": np.arange(b - a), "value": p.levels[a:b]}),
                     pd.DataFrame({"id": "short", "t": np.arange(3), "value": [1.0, 2.0, 3.0]})])
    csv = tmp_path / "rows.csv"
    raw.to_csv(csv, index=False)
    out = tmp_path / "forecast.csv"
    main(["--model", str(path), "--csv", str(csv), "--out", str(out)])
    err = capsys.readouterr().err
    assert "1 id(s) left out, the first: id 'short': the series has 3 values" in err, err
    assert pd.read_csv(out)["id"].tolist() == ["long"]


def test_aggregates_leave_out_series_without_a_score():
    from attn_forecast import panel as P
    table = pd.DataFrame({"id": ["a", "b", "c"], "model_rmse": [1.0, 2.0, 3.0],
                          "model_mase": [0.5, np.nan, 2.0], "naive_rmse": [1.0, 1.0, 1.0],
                          "naive_mase": [1.0, np.nan, 1.0]})
    agg = P.aggregate(table, ["model", "naive"])
    assert agg["model"]["n_series"] == 2 and agg["model"]["mase_mean"] == 1.25
    assert agg["model"]["beats_naive"] == 0.5           # of the two series both score
    assert agg["model"]["rmse_mean"] == 2.0


def test_augment_moves_on_a_panel_sees_only_changes_inside_training_windows():
    """train.augment_units moves: the std of the one-step changes inside the training
    windows; on a panel never a change across two series, nor one after a series' training
    part (a single series keeps its one-span rule)."""
    from attn_forecast.train import move_unit
    series = _hand_series()
    p = _panel(series, val_frac=0.1, transform="diff")
    ends = p.ends("train")
    z = torch.from_numpy(np.asarray(p.z))
    rows = sorted({r for e in ends for r in range(e - W + 1, e + H)})
    want = np.std(np.diff(np.asarray(p.z, dtype=np.float64))[np.array(rows) - 1], ddof=1)
    assert math.isclose(move_unit(z, torch.from_numpy(ends), W, H), want, rel_tol=1e-12)
    changed = [s.copy() for s in series]
    changed[1][int(p.val_start[1]):] *= 3                 # after series 1's training part
    q = _panel(changed, val_frac=0.1, transform="diff")
    assert move_unit(torch.from_numpy(np.asarray(q.z)), torch.from_numpy(ends), W, H) == \
        move_unit(z, torch.from_numpy(ends), W, H)
    # one series: the changes over its training windows' whole span, as before
    one = torch.from_numpy(np.asarray(p.z[p.offsets[4]:p.offsets[5]]))
    e1 = torch.arange(W + 1, 60)
    assert move_unit(one, e1, W, H) == float(torch.diff(one[1:60 + H - 1].double()).std())


def test_numbers_that_turn_fractional_after_the_first_block_read_back(tmp_path):
    """pyarrow types a column from its first block: whole numbers there, 0.5 later."""
    from attn_forecast.panel import read_raw_panel
    n = 700_000                                            # > one 8 MiB block
    frame = pd.concat([pd.DataFrame({"id": "A", "t": np.arange(n), "value": 1.0}),
                       pd.DataFrame({"id": "B", "t": np.arange(5) + 0.5, "value": 2.0})])
    frame["signal"] = np.nan
    path = tmp_path / "raw.csv"
    frame.to_csv(path, index=False)
    ids, offsets, t, value, _ = read_raw_panel(path)
    assert ids.tolist() == ["A", "B"] and offsets.tolist() == [0, n, n + 5]
    np.testing.assert_array_equal(t, frame["t"].to_numpy(np.float64))


# ---------------------------------------------------------------- past covariates on a panel
def _feature_panel(transform="log_return"):
    rs = np.random.default_rng(11)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (60, 75)]
    volume = [np.exp(10 + rs.normal(0, 0.5, len(s))) for s in series]
    raw = np.stack([np.concatenate(series), np.concatenate(volume)], axis=1)  # open, volume
    return series, raw, prepare_panel(
        *_arrays(series, ["north", "south"]), window=8, horizon=1, test_frac=0.2,
        val_frac=0.1, scaler="zscore", transform=transform,
        source=source_settings(DataParams(kind="csv", csv_id_column="id", csv_time_column="t",
                                          csv_feature_columns=["open", "volume"])),
        features=raw, feature_names=("open", "volume"),
        feature_transforms=("log_return", "log1p"))


def test_panel_features_are_scaled_per_series_on_its_training_rows_only():
    from attn_forecast.windows import feature_series
    series, raw, p = _feature_panel()
    assert p.cal.shape == (len(raw), 2) and p.cal.dtype == np.float32
    for i in range(2):
        a, b = int(p.offsets[i]), int(p.offsets[i + 1])
        for k, kind in enumerate(("log_return", "log1p")):
            f = feature_series(raw[a:b, k], kind, "x")
            train = f[1:p.val_start[i]]          # the training targets' rows (offset 1)
            train = train[np.isfinite(train)]
            assert math.isclose(p.feature_center[i, k], np.mean(train), rel_tol=1e-12)
            assert math.isclose(p.feature_scale[i, k], np.std(train), rel_tol=1e-12)
            want = np.nan_to_num((f - np.mean(train)) / np.std(train), nan=0.0)
            np.testing.assert_allclose(p.cal[a:b, k], want.astype(np.float32), rtol=1e-6)
    # values from series 0's first validation target on change nothing of its scalers, and
    # nothing of series 1
    raw2 = raw.copy()
    raw2[int(p.val_start[0]):int(p.offsets[1])] *= 3
    q = prepare_panel(*_arrays(series, ["north", "south"]), window=8, horizon=1, test_frac=0.2,
                      val_frac=0.1, scaler="zscore", transform="log_return", features=raw2,
                      feature_names=("open", "volume"),
                      feature_transforms=("log_return", "log1p"))
    np.testing.assert_array_equal(q.feature_center, p.feature_center)
    np.testing.assert_array_equal(q.feature_scale, p.feature_scale)
    np.testing.assert_array_equal(q.cal[p.offsets[1]:], p.cal[p.offsets[1]:])


def test_panel_features_round_trip_and_forecast_as_evaluate_does(tmp_path):
    series, raw, p = _feature_panel()
    save_panel(tmp_path / "prep", p)
    back = load_data(tmp_path / "prep")
    assert back.features == ("open", "volume") and _same(back.cal, p.cal)
    assert _same(back.feature_center, p.feature_center)
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=8, horizon=1, d_model=8, ffn_dim=8,
                                      n_features=2)).eval()
    path = tmp_path / "model.pt"
    save_checkpoint(path, model, {"prepare": back.meta(), "best_epoch": 0, "history": []})
    meta = load_payload(str(path))["prepare"]
    ev = evaluate_panel(back, model, baselines=Baselines(forecasts={}), noise_std=None,
                        weights=False)
    lookup = {n: k for k, n in enumerate(meta["series"]["ids"])}
    from attn_forecast.forecast import feature_scalers
    for k, e in enumerate(ev.ends):
        i = int(p.series_of(np.array([e]))[0])
        a, sid = int(p.offsets[i]), str(p.ids[i])
        scaler, _ = panel_scaler(meta, sid, p.levels[a:e], lookup)
        extra = {"feature_scalers": feature_scalers(meta, sid, raw[a:e], lookup)}
        got = forecast_levels(model, {**meta, "scaler": scaler, **extra}, p.levels[a:e], 1,
                              features=raw[a:e])
        np.testing.assert_allclose(got, ev.forecasts["model"][k], rtol=1e-6)
    # the command on the long CSV: one row per id; more steps than the horizon is refused
    frame = pd.concat([pd.DataFrame({"id": n, "t": np.arange(len(s)), "value": s,
                                     "open": s, "volume": raw[p.offsets[i]:p.offsets[i + 1], 1]})
                       for i, (n, s) in enumerate(zip(["north", "south"], series))])
    csv = tmp_path / "bars.csv"
    frame.to_csv(csv, index=False)
    main(["--model", str(path), "--csv", str(csv), "--out", str(tmp_path / "fc.csv")])
    assert pd.read_csv(tmp_path / "fc.csv")["id"].tolist() == ["north", "south"]
    with pytest.raises(UserInputError, match="--steps must be <= 1"):
        main(["--model", str(path), "--csv", str(csv), "--steps", "2", "--out",
              str(tmp_path / "no.csv")])
    assert not (tmp_path / "no.csv").exists()


def test_the_panel_season_is_the_most_common_in_the_training_parts():
    from attn_forecast.panel import choose_panel_auto
    rs = np.random.default_rng(5)
    t = np.arange(200)
    weekly = [10 + np.sin(2 * np.pi * t / 7) + rs.normal(0, 0.1, 200) for _ in range(3)]
    flat = [np.cumsum(rs.normal(0, 1, 200))]
    series = weekly + flat
    _, offsets, _, levels, _ = _arrays(series)
    auto = choose_panel_auto(offsets, levels, 0.2, 0.0, "auto")
    assert auto["season"]["season"] == 7 and "(3 series)" in auto["season"]["reason"]
    assert auto["window"]["window"] == 16
    # the test parts are never looked at: a season that appears only there is not found
    late = [np.r_[rs.normal(0, 1, 160), 5 * np.sin(2 * np.pi * np.arange(40) / 5)]
            for _ in range(3)]
    _, offsets, _, levels, _ = _arrays(late)
    assert choose_panel_auto(offsets, levels, 0.2, 0.0, 10)["season"]["season"] == 0


def test_calendar_inputs_come_first_in_a_panel_cal(tmp_path):
    series, raw, _ = _feature_panel()
    ids, offsets, _, levels, signal = _arrays(series, ["north", "south"])
    days = np.concatenate([np.arange(len(s)) for s in series]).astype("timedelta64[D]")
    t = np.datetime64("2024-01-01", "s") + days                    # daily, per series
    p = prepare_panel(ids, offsets, t, levels, signal, window=8, horizon=1, test_frac=0.2,
                      val_frac=0.0, scaler="zscore", transform="none", features=raw,
                      feature_names=("open", "volume"),
                      feature_transforms=("log_return", "log1p"), time_features=("dayofweek",))
    assert p.n_time_features == 2 and p.n_features == 2 and p.cal.shape[1] == 4
    from attn_forecast.calendar import time_features
    np.testing.assert_array_equal(p.cal[:, :2], time_features(t, ["dayofweek"]))
    save_panel(tmp_path / "prep", p)
    back = load_data(tmp_path / "prep")
    assert back.time_features == ("dayofweek",) and back.n_time_features == 2
    assert back.meta()["time_features"] == ["dayofweek"]
    with pytest.raises(UserInputError, match="needs dates in the time column"):
        prepare_panel(ids, offsets, np.arange(len(levels), dtype=float), levels, signal,
                      window=8, horizon=1, test_frac=0.2, val_frac=0.0, scaler="zscore",
                      transform="none", time_features=("dayofweek",))


def test_a_semicolon_panel_read_with_commas_names_the_separator(tmp_path):
    path = tmp_path / "sensors.csv"
    path.write_text("sensor;time;temp\ns-a;2024-03-01 14:00;20,5\n")
    with pytest.raises(UserInputError, match="looks ';'-separated: set data.csv_sep to ';'"):
        read_panel_csv(path, "sensor", "temp", "time", "error")
    frame = read_panel_csv(path, "sensor", "temp", "time", "error", sep=";", decimal=",")
    assert frame["value"].tolist() == [20.5] and frame["t"].tolist() == ["2024-03-01T14:00:00"]
