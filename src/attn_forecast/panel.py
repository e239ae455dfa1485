"""Panels: many series in one long table, and one global model over all of them.

The raw panel (the generate stage's CSV) has the columns ``id, t, value, signal``, rows grouped
by id and sorted by time inside each id. The prepared panel is flat: every series' rows one
after the other in memory-mappable ``.npy`` arrays (``levels``, ``signal``, ``t`` and ``z``,
the scaled model series), and an offsets table (``index.npz``): series ``i`` is rows
``offsets[i]:offsets[i + 1]``. A batch reads only its own windows from the arrays.

``z`` is **level-aligned**: row r holds the model value of level r (for ``diff`` and
``log_return`` the step that ends at level r; each series' first row has no step and holds 0,
which no window reads). A window is named by the row ``e`` of its first target: inputs
``z[e-W:e]``, targets ``z[e:e+H]``, last known level ``levels[e-1]``. Windows never cross
series: a series of n rows starting at row a has window ends ``a + W + offset`` ..
``a + n - H``.

Each series is split by the single-series rule on its own length (windows.make_split): its
test targets are its last ``test_frac`` of levels, its validation targets the ``val_frac``
before them. Each series is scaled by its own training part (z-score, min-max or none); a
series whose training part is constant is scaled by 1 around its value. Series too short for a
window in every part are left out, and listed in ``panel.json``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import UserInputError
from .io import read_json, read_npz, replace_files, write_json
from .windows import _cut, gather_windows, to_levels, to_model_series, transform_offset

PANEL_FILE = "panel.json"   # marks a prepared folder as a panel


# ---------------------------------------------------------------- synthetic panel
SEASONS = (7, 12, 24, 50)


def synthetic_series(i: int, n: int, seed: int, noise_std: float, trend: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Series ``i`` of the synthetic panel: (values, signal) of length ``n``. Related series:
    each is a level, a trend, one of a few shared seasonal shapes (period from
    :data:`SEASONS`, a second harmonic) and Gaussian noise, on its own scale; drawn from its
    own seeded generator, so a series does not depend on how many others there are."""
    rs = np.random.default_rng([seed, i])
    period = SEASONS[int(rs.integers(len(SEASONS)))]
    scale = 10 ** rs.uniform(0, 3)                    # 1 .. 1000: per-series scaling matters
    level = scale * rs.uniform(2, 5)
    amp, amp2 = rs.uniform(0.5, 1.5), rs.uniform(0, 0.5)
    phase = rs.uniform(0, 2 * np.pi)
    slope = trend * rs.uniform(-1, 1)
    t = np.arange(n, dtype=np.float64)
    shape = amp * np.sin(2 * np.pi * t / period + phase) \
        + amp2 * np.sin(4 * np.pi * t / period + 2 * phase)
    signal = level + scale * (slope * t + shape)
    noise = rs.standard_normal(n) * (noise_std * rs.uniform(0.5, 2.0) * scale)
    return signal + noise, signal


def panel_lengths(n_series: int, n_points: int, min_points: int, seed: int) -> np.ndarray:
    """Each series' length: ``n_points``, or drawn uniformly from [min_points, n_points]."""
    if not min_points or min_points >= n_points:
        return np.full(n_series, n_points, dtype=np.int64)
    return np.random.default_rng([seed, 2**31]).integers(min_points, n_points + 1, n_series)


def synthetic_chunks(n_series: int, n_points: int, min_points: int, seed: int,
                     noise_std: float, trend: float, rows: int = 1_000_000):
    """The synthetic panel as DataFrames of about ``rows`` rows (``id, t, value, signal``),
    so a large panel is written without holding it in memory."""
    lengths = panel_lengths(n_series, n_points, min_points, seed)
    width = len(str(n_series - 1))
    start = 0
    while start < n_series:
        stop = start + 1
        while stop < n_series and lengths[start:stop + 1].sum() <= rows:
            stop += 1
        parts = [synthetic_series(i, int(lengths[i]), seed, noise_std, trend)
                 for i in range(start, stop)]
        yield pd.DataFrame({
            "id": np.repeat([f"s{i:0{width}d}" for i in range(start, stop)],
                            lengths[start:stop]),
            "t": np.concatenate([np.arange(n) for n in lengths[start:stop]]),
            "value": np.concatenate([v for v, _ in parts]),
            "signal": np.concatenate([s for _, s in parts])})
        start = stop


def write_panel_csv(path: str | Path, chunks) -> tuple[int, int]:
    """Write ``id, t, value, signal`` chunks (each id's rows together) to one CSV atomically;
    returns the rows and the ids."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from .io import atomic_path
    n = n_ids = 0
    last = None
    with atomic_path(path) as tmp:
        writer = None
        for frame in chunks:
            ids = frame["id"].to_numpy()
            if len(ids):
                n_ids += int((ids[1:] != ids[:-1]).sum()) + int(ids[0] != last)
                last = ids[-1]
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pacsv.CSVWriter(str(tmp), table.schema)
            writer.write_table(table)
            n += len(frame)
        if writer is not None:
            writer.close()
    return n, n_ids


# ---------------------------------------------------------------- a user's long CSV
def read_panel_csv(path: str | Path, id_column: str, column: str, time_column: str,
                   missing: str, *, time_format: str = "auto", sep: str = ",",
                   decimal: str = ".", thousands: str = "", features: list[str] = (),
                   keys: dict | None = None) -> pd.DataFrame:
    """A long-format panel (one row per id and time) as ``id, t, value, signal`` (and a
    ``feature:<name>`` column per feature), grouped by id (in order of first appearance) and
    sorted by time inside each id. The time column is read with one format for the whole
    file; each id's times must be distinct; empty cells follow ``missing`` inside each id
    (``ffill`` never carries a value across ids; ``drop`` drops a row with any empty cell)."""
    from .data import (FEATURE_PREFIX, PARAM_KEYS, DataError, _line, _separator_hint,
                       _to_numbers, iso_times, parse_times)
    keys = {**PARAM_KEYS, "id_column": "data.csv_id_column", **(keys or {})}
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{keys['path']}: file not found: {path}")
    try:
        raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, engine="c")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "empty file"
        raise DataError(f"{path}: not a readable CSV file ({first})") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    for key, name in ((keys["id_column"], id_column), (keys["column"], column),
                      (keys["time_column"], time_column),
                      *((keys["features"], f) for f in features)):
        if name and name not in raw.columns:
            have = ", ".join(map(str, raw.columns)) or "none"
            raise DataError(f"{key}: column {name!r} not in {path} (columns: {have})"
                            + _separator_hint(list(raw.columns), keys))
    if not time_column:
        raise DataError(f"{keys['time_column']} must name the time column of a panel "
                        f"({path} holds many series, and rows alone do not order them)")
    ids = raw[id_column].str.strip()
    if (ids == "").any():
        i = _line(ids == "")
        raise DataError(f"{path}: id column {id_column!r} is empty on line {i + 2}")
    numeric = {"value": column, **{FEATURE_PREFIX + f: f for f in features}}
    key = parse_times(raw[time_column].str.strip(), time_format, str(path), time_column,
                      keys["time_format"])
    codes, uniques = pd.factorize(ids, sort=False)
    frame = pd.DataFrame({"code": codes, "key": key, "line": np.arange(len(raw)) + 2})
    empty = np.zeros(len(raw), dtype=bool)
    for out, name in numeric.items():
        text = raw[name].str.strip()
        frame[out] = _to_numbers(text, name, decimal, thousands, str(path), keys).to_numpy(
            np.float64)
        empty |= (text == "").to_numpy()
    frame["empty"] = empty
    frame = frame.sort_values(["code", "key"], kind="stable").reset_index(drop=True)
    dup = frame.duplicated(["code", "key"], keep=False).to_numpy()
    if dup.any():
        r = frame.iloc[int(np.flatnonzero(dup)[0])]
        raise DataError(f"{path}: id {uniques[r['code']]!r} has the time "
                        f"{raw[time_column].iloc[r['line'] - 2].strip()!r} twice (line "
                        f"{r['line']}); each id's times must be distinct")
    if frame["empty"].any():
        first = frame.iloc[int(np.flatnonzero(frame["empty"].to_numpy())[0])]
        what = repr(column) if not features else f"{column!r} or a feature"
        if missing == "error":
            raise DataError(f"{path} has {int(frame['empty'].sum())} row(s) with an empty cell "
                            f"in {what}, the first for id {uniques[first['code']]!r} on line "
                            f"{first['line']}; set {keys['missing']} to ffill or drop")
        if missing == "drop":
            frame = frame[~frame["empty"]].reset_index(drop=True)
        else:
            for out, name in numeric.items():
                frame[out] = frame.groupby("code")[out].ffill()
                lead = frame[out].isna().to_numpy()
                if lead.any():
                    r = frame.iloc[int(np.flatnonzero(lead)[0])]
                    raise DataError(f"{path}: id {uniques[r['code']]!r} starts with empty "
                                    f"cells in {name!r} (line {r['line']}), with no earlier "
                                    f"value to carry forward; remove them or set "
                                    f"{keys['missing']} to drop")
    if not len(frame):
        raise DataError(f"{path}: column {column!r} holds no values")
    t = iso_times(frame["key"]) if frame["key"].dtype.kind == "M" else frame["key"].to_numpy()
    out = pd.DataFrame({"id": np.asarray(uniques, dtype=object)[frame["code"].to_numpy()],
                        "t": t, "value": frame["value"].to_numpy(np.float64),
                        "signal": np.nan})
    for name in numeric:
        if name != "value":
            out[name] = frame[name].to_numpy(np.float64)
    return out


# ---------------------------------------------------------------- the prepared panel
@dataclass(frozen=True)
class PanelSplit:
    """What the training loop needs of a split: the window, the horizon and each part's
    window ends (rows of the flat arrays)."""
    window: int
    horizon: int
    parts: dict = field(repr=False, default_factory=dict)  # part -> (N,) int64 global ends

    def ends(self, part: str) -> np.ndarray:
        return self.parts[part]


def concat_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])`` without the loop
    (empty ranges where b <= a)."""
    lens = np.maximum(np.asarray(stops, np.int64) - starts, 0)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lens) - lens
    return np.repeat(np.asarray(starts, np.int64) - before, lens) + np.arange(total)


@dataclass(frozen=True)
class Panel:
    ids: np.ndarray          # (S,) str
    offsets: np.ndarray      # (S + 1,) int64: series i is rows offsets[i]:offsets[i + 1]
    val_start: np.ndarray    # (S,) int64: first validation target, in the series' own rows
    test_start: np.ndarray   # (S,) int64: first test target
    center: np.ndarray       # (S,) float64: each series' scaler
    scale: np.ndarray        # (S,) float64
    levels: np.ndarray       # (R,) float64 (memory-mapped)
    signal: np.ndarray       # (R,) float64, NaN where there is none
    t: np.ndarray            # (R,) float64 steps or datetime64 times
    z: np.ndarray            # (R,) float32, level-aligned model series
    window: int
    horizon: int
    transform: str
    scaler: str
    source: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)   # {"count": n, "ids": first few}
    auto: dict = field(default_factory=dict)
    # past covariates (data.csv_feature_columns): (R, F) float32, level-aligned like z, each
    # column transformed and z-scored per series on its training rows; None without
    cal: np.ndarray | None = None
    features: tuple = ()
    feature_transforms: tuple = ()
    feature_center: np.ndarray | None = None     # (S, F)
    feature_scale: np.ndarray | None = None      # (S, F)
    time_features: tuple = ()   # calendar inputs (prepare.time_features): cal's first columns
    is_panel = True

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_time_features(self) -> int:
        """Calendar columns of ``cal`` (the features' come after them)."""
        return 0 if self.cal is None else int(self.cal.shape[1]) - self.n_features

    @property
    def offset(self) -> int:
        return transform_offset(self.transform)

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def part_bounds(self, part: str) -> tuple[np.ndarray, np.ndarray]:
        """Each series' first and last window end (inclusive) of ``part``, as rows."""
        a, n = self.offsets[:-1], self.lengths
        W, H, off = self.window, self.horizon, self.offset
        lo, hi = {"train": (np.zeros_like(n), self.val_start),
                  "val": (self.val_start, self.test_start),
                  "test": (self.test_start, n)}[part]
        return a + np.maximum(lo, W + off), a + hi - H

    def ends(self, part: str) -> np.ndarray:
        first, last = self.part_bounds(part)
        return concat_ranges(first, last + 1)

    def counts(self, part: str) -> np.ndarray:
        first, last = self.part_bounds(part)
        return np.maximum(last + 1 - first, 0)

    @cached_property
    def split(self) -> PanelSplit:
        return PanelSplit(self.window, self.horizon,
                          {p: self.ends(p) for p in ("train", "val", "test")})

    def series_of(self, ends: np.ndarray) -> np.ndarray:
        """The series index of each row."""
        return np.searchsorted(self.offsets, ends, side="right") - 1

    def train_rows(self, i: int) -> tuple[int, int]:
        """Rows of series ``i``'s training targets' levels (its in-sample part)."""
        a = int(self.offsets[i])
        return a, a + int(self.val_start[i])

    def to_levels(self, z_pred: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Model-space forecasts (N, H) of windows ``ends`` back in levels."""
        sid = self.series_of(ends)
        unscaled = z_pred.astype(np.float64) * self.scale[sid, None] + self.center[sid, None]
        return to_levels(unscaled, self.levels[ends - 1], self.transform)

    def targets(self, ends: np.ndarray) -> np.ndarray:
        return self.levels[ends[:, None] + np.arange(self.horizon)[None, :]]

    def meta(self) -> dict:
        """The checkpoint's record of the data: settings, sizes and every series' scaler (the
        forecast command scales each id as training did)."""
        return {"kind": "panel", "window": self.window, "horizon": self.horizon,
                "transform": self.transform, "scaler": {"kind": self.scaler},
                "n_series": self.n_series, "n_rows": int(self.offsets[-1]),
                "n_windows": {p: int(self.counts(p).sum()) for p in ("train", "val", "test")},
                "source": self.source, "dropped": self.dropped,
                "time_features": list(self.time_features),
                "auto": self.auto,
                "features": list(self.features),
                "feature_transforms": list(self.feature_transforms), "feature_scalers": [],
                "series": {"ids": [str(i) for i in self.ids],
                           "center": self.center.tolist(), "scale": self.scale.tolist(),
                           **({"feature_center": self.feature_center.tolist(),
                               "feature_scale": self.feature_scale.tolist()}
                              if self.n_features else {})}}


def is_panel_dir(folder: str | Path) -> bool:
    return (Path(folder) / PANEL_FILE).is_file()


def load_data(folder: str | Path):
    """What the prepare stage wrote: a :class:`Panel`, or a single series' ``Prepared``."""
    from .windows import load_prepared
    return load_panel(folder) if is_panel_dir(folder) else load_prepared(folder)


def _max_rows(path: str | Path) -> int:
    """An upper bound of a CSV file's data rows: its lines, less the header."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(16 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n") - 1


def read_raw_panel(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray]:
    """The generate stage's panel CSV: (ids (S,), offsets (S + 1,), t, value, signal), read
    in blocks into arrays allocated once (a 20M-row panel needs its three columns in memory,
    no more); rows must be grouped by id and sorted by time inside each id (generate writes
    them so)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    opts = pacsv.ConvertOptions(column_types={"id": pa.string(), "value": pa.float64(),
                                              "signal": pa.float64()},
                                include_columns=["id", "t", "value", "signal"])
    read = pacsv.ReadOptions(block_size=8 << 20)
    reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
    t_type = reader.schema.field("t").type
    if pa.types.is_integer(t_type):  # the first block's whole numbers: read every block's as
        opts.column_types = {**opts.column_types, "t": pa.float64()}     # float64 (0.5 later)
        reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
    elif not (pa.types.is_floating(t_type) or pa.types.is_date(t_type)
              or pa.types.is_timestamp(t_type) or pa.types.is_null(t_type)):
        raise UserInputError(f"{path}: column 't' holds {t_type} values, not numbers or ISO "
                             "dates; run the generate stage again (dvc repro)")
    cap = max(_max_rows(path), 0)
    value, signal = np.empty(cap), np.empty(cap)
    t = None
    ids: list[str] = []
    bounds: list[int] = []     # row where each id starts
    row = 0
    for batch in reader:
        enc = batch.column(0).dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False)
        names = enc.dictionary.to_pylist()
        for s in np.flatnonzero(np.diff(codes, prepend=-1)):
            name = names[codes[s]]
            if s == 0 and ids and ids[-1] == name:
                continue                                  # the same id, from the last block
            ids.append(name)
            bounds.append(row + int(s))
        times = batch.column(1)
        if pa.types.is_date(times.type) or pa.types.is_timestamp(times.type):
            times = times.cast(pa.timestamp("s"))
        times = times.to_numpy(zero_copy_only=False)
        if t is None:
            t = np.empty(cap, dtype=times.dtype if times.dtype.kind == "M" else np.float64)
        k = batch.num_rows
        t[row:row + k] = times
        value[row:row + k] = batch.column(2).to_numpy(zero_copy_only=False)
        signal[row:row + k] = batch.column(3).to_numpy(zero_copy_only=False)
        row += k
        del batch, enc, times
    if len(set(ids)) != len(ids):
        raise UserInputError(f"{path}: the rows of each id must be together (id "
                             f"{next(i for i in ids if ids.count(i) > 1)!r} appears in two "
                             "places); run the generate stage again (dvc repro)")
    offsets = np.array(bounds + [row], dtype=np.int64)
    t = np.zeros(0) if t is None else t
    return np.array(ids, dtype=str), offsets, t[:row], value[:row], signal[:row]


def read_raw_features(path: str | Path, names: list[str]) -> np.ndarray:
    """The ``feature:<name>`` columns of the generate stage's panel CSV, (R, F) float64,
    in a second pass over the file (only these columns in memory)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from .data import FEATURE_PREFIX
    cols = [FEATURE_PREFIX + n for n in names]
    opts = pacsv.ConvertOptions(column_types={c: pa.float64() for c in cols},
                                include_columns=cols)
    try:
        reader = pacsv.open_csv(str(path), convert_options=opts,
                                read_options=pacsv.ReadOptions(block_size=8 << 20))
    except pa.ArrowInvalid:
        raise UserInputError(f"{path} has no column for every feature of "
                             "data.csv_feature_columns; run the generate stage again "
                             "(dvc repro)") from None
    out = np.empty((max(_max_rows(path), 0), len(names)))
    row = 0
    for batch in reader:
        k = batch.num_rows
        for j in range(len(names)):
            out[row:row + k, j] = batch.column(j).to_numpy(zero_copy_only=False)
        row += k
    return out[:row]


def _scaler(zm: np.ndarray, kind: str) -> tuple[float, float]:
    if kind == "none" or not len(zm):
        return 0.0, 1.0
    if kind == "zscore":
        center, scale = float(np.mean(zm)), float(np.std(zm))
    else:
        center = float(np.min(zm))
        scale = float(np.max(zm)) - center
    return center, (scale if scale > 0 and math.isfinite(scale) else 1.0)


def prepare_panel(ids: np.ndarray, offsets: np.ndarray, t: np.ndarray, levels: np.ndarray,
                  signal: np.ndarray, *, window: int, horizon: int, test_frac: float,
                  val_frac: float, scaler: str, transform: str, source: dict | None = None,
                  features: np.ndarray | None = None, feature_names: tuple = (),
                  feature_transforms: tuple = (), time_features: tuple = (),
                  auto: dict | None = None) -> Panel:
    """Split, transform and scale every series by its own training part; series without a
    window in every part are left out. ``features``: raw past covariates (R, F), one column
    per name, each with its transform (windows.feature_series), z-scored per series on its
    training rows (a column constant there: by 1 around its value). ``time_features``:
    calendar inputs of each row's time stamp (dates), before the features in ``cal``."""
    off = transform_offset(transform)
    n = np.diff(offsets)
    if not len(n):
        raise UserInputError("the panel holds no series")
    test_start = np.floor(n * (1 - test_frac) + 1e-9).astype(np.int64)
    val_start = np.floor(n * (1 - test_frac - val_frac) + 1e-9).astype(np.int64) \
        if val_frac > 0 else test_start.copy()
    if test_frac and not np.array_equal(test_start, [_cut(int(k), 1 - test_frac) for k in n]):
        raise AssertionError("cuts differ from windows.make_split's")  # one rule for both
    first = window + off
    ok = (val_start - horizon >= first) & (n - horizon >= np.maximum(test_start, first))
    if val_frac > 0:
        ok &= test_start - horizon >= np.maximum(val_start, first)
    if not ok.any():
        need = window + horizon + off
        raise UserInputError(
            f"every series of the panel is too short: the longest has {int(n.max())} values, "
            f"and window {window} + horizon {horizon} with test_frac {test_frac} and val_frac "
            f"{val_frac} need about {math.ceil(need / max(1e-9, 1 - test_frac - val_frac))} "
            "(or a smaller prepare.window, prepare.horizon or fractions)")
    dropped = {"count": int((~ok).sum()), "ids": [str(i) for i in ids[~ok][:5]]}
    keep = np.flatnonzero(ok)
    if len(keep) < len(ids):
        rows = concat_ranges(offsets[keep], offsets[keep + 1])
        t, levels, signal = t[rows], levels[rows], signal[rows]
        features = features[rows] if features is not None else None
        n, val_start, test_start, ids = n[keep], val_start[keep], test_start[keep], ids[keep]
        offsets = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
    z = np.zeros(len(levels), dtype=np.float32)
    center, scale = np.zeros(len(ids)), np.ones(len(ids))
    for i in range(len(ids)):
        a, b = int(offsets[i]), int(offsets[i + 1])
        try:
            zm = to_model_series(levels[a:b], transform)    # zm[j] is level j + off
        except UserInputError as err:
            raise UserInputError(f"series {ids[i]!r}: {err}") from None
        if not np.isfinite(zm).all():
            raise UserInputError(f"series {ids[i]!r}: prepare.transform {transform} gives a "
                                 "value that is not finite; use diff or none")
        center[i], scale[i] = _scaler(zm[:val_start[i] - off], scaler)
        z[a + off:b] = (zm - center[i]) / scale[i]
    extra: dict = {}
    cols = []
    if time_features:
        from .calendar import time_features as calendar
        cols.append(calendar(np.asarray(t), list(time_features)))
        extra["time_features"] = tuple(time_features)
    if feature_names:
        names = tuple(feature_names)
        kinds = tuple(feature_transforms) or ("none",) * len(names)
        fz, fc, fs = scale_features(np.asarray(features, dtype=np.float64), offsets, val_start,
                                    off, names, kinds, ids)
        cols.append(fz)
        extra.update(features=names, feature_transforms=kinds, feature_center=fc,
                     feature_scale=fs)
    if cols:
        extra["cal"] = cols[0] if len(cols) == 1 else np.concatenate(cols, axis=1)
    return Panel(ids, offsets, val_start, test_start, center, scale, levels, signal, t, z,
                 window, horizon, transform, scaler, dict(source or {}), dropped,
                 dict(auto or {}), **extra)


def scale_features(raw: np.ndarray, offsets: np.ndarray, val_start: np.ndarray, off: int,
                   names: tuple, kinds: tuple, ids: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each series' feature columns transformed and z-scored on its training rows (levels
    ``off .. val_start - 1``, the rows of its training targets' steps): (R, F) float32
    level-aligned, and the (S, F) centers and scales. A value the transform leaves undefined
    (a differenced column's first row) is 0, the training mean."""
    from .windows import feature_series
    S, F = len(offsets) - 1, len(names)
    cal = np.zeros((len(raw), F), dtype=np.float32)
    center, scale = np.zeros((S, F)), np.ones((S, F))
    for i in range(S):
        a, b = int(offsets[i]), int(offsets[i + 1])
        for k in range(F):
            try:
                f = feature_series(raw[a:b, k], kinds[k], names[k])
            except UserInputError as err:
                raise UserInputError(f"series {ids[i]!r}: {err}") from None
            part = f[off:val_start[i]]
            part = part[np.isfinite(part)]
            c, sd = (float(np.mean(part)), float(np.std(part))) if len(part) else (0.0, 1.0)
            center[i, k], scale[i, k] = c, sd if sd > 0 else 1.0
            cal[a:b, k] = np.nan_to_num((f - c) / scale[i, k], nan=0.0)
    return cal, center, scale


def choose_panel_auto(offsets: np.ndarray, levels: np.ndarray, test_frac: float,
                      val_frac: float, window: int | str, patch_len: int = 0,
                      patch_stride: int = 0, sample: int = 500) -> dict:
    """The panel's season, recorded always (``evaluate.season: auto`` uses it): the most
    common of the seasons found in the training parts of up to ``sample`` series spread over
    the panel (0 when most show none); for ``prepare.window: auto`` the window to match, capped
    by the median series' training part."""
    from .seasons import detect_season, window_for
    n = np.diff(offsets)
    n_train = np.floor(n * (1 - test_frac - val_frac) + 1e-9).astype(np.int64)
    picked = spread(np.arange(len(n)), sample)
    found = np.array([detect_season(levels[offsets[i]:offsets[i] + n_train[i]])["season"]
                      for i in picked], dtype=np.int64)
    vals, counts = np.unique(found, return_counts=True)
    season = int(vals[np.argmax(counts)])
    out = {"season": {"season": season, "reason": (
        f"the most common season of {len(picked)} series' training parts: "
        + (f"lag {season} ({int(counts.max())} series)" if season else
           f"none ({int(counts.max())} series show no season)"))}}
    if window == "auto":
        out["window"] = window_for(season, int(np.median(n_train)), patch_len, patch_stride)
    return out


ARRAYS = ("levels", "signal", "t", "z")


def save_panel(out_dir: str | Path, p: Panel) -> None:
    """``panel.json``, ``index.npz`` and one ``.npy`` per flat array (memory-mappable),
    replacing whatever the folder held (a single series' files too)."""
    with replace_files(out_dir) as tmp:
        for name in ARRAYS:
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(getattr(p, name)),
                    allow_pickle=False)
        if p.cal is not None:
            np.save(tmp / "cal.npy", np.ascontiguousarray(p.cal), allow_pickle=False)
        with open(tmp / "index.npz", "wb") as fh:
            np.savez(fh, ids=p.ids.astype(str), offsets=p.offsets, val_start=p.val_start,
                     test_start=p.test_start, center=p.center, scale=p.scale,
                     **({"feature_center": p.feature_center, "feature_scale": p.feature_scale}
                        if p.n_features else {}))
        write_json(tmp / PANEL_FILE, {k: v for k, v in p.meta().items() if k != "series"})


def load_panel(in_dir: str | Path, mmap: bool = True) -> Panel:
    """The prepared panel; the flat arrays memory-mapped (copy-on-write: a process reads
    only the pages its windows touch)."""
    d = Path(in_dir)
    meta, idx = read_json(d / PANEL_FILE), read_npz(d / "index.npz")
    arrays = {name: np.load(d / f"{name}.npy", mmap_mode="c" if mmap else None,
                            allow_pickle=False) for name in ARRAYS}
    return Panel(idx["ids"], idx["offsets"], idx["val_start"], idx["test_start"],
                 idx["center"], idx["scale"], arrays["levels"], arrays["signal"], arrays["t"],
                 arrays["z"], meta["window"], meta["horizon"], meta["transform"],
                 meta["scaler"]["kind"], meta.get("source", {}), meta.get("dropped", {}),
                 meta.get("auto", {}), **({
                     "cal": np.load(d / "cal.npy", mmap_mode="c" if mmap else None,
                                    allow_pickle=False)} if (d / "cal.npy").is_file() else {}),
                 **({"features": tuple(meta["features"]),
                     "feature_transforms": tuple(meta["feature_transforms"]),
                     "feature_center": idx["feature_center"],
                     "feature_scale": idx["feature_scale"]} if meta.get("features") else {}),
                 time_features=tuple(meta.get("time_features", ())))


# ---------------------------------------------------------------- baselines and scores
PANEL_BASELINES = ("naive", "seasonal_naive", "mean", "ridge")
RIDGE_WINDOWS = 200_000   # training windows the panel's global ridge is fitted on, at most
STAT_SERIES = 200         # ETS, Theta and ARIMA (one model per series) up to this many series


def spread(ends: np.ndarray, k: int) -> np.ndarray:
    """At most ``k`` of ``ends``, evenly spaced (deterministic)."""
    if len(ends) <= k:
        return ends
    return ends[np.linspace(0, len(ends) - 1, k).round().astype(np.int64)]


def panel_baselines(p: Panel, names: list[str], *, ridge_alpha: float, season: int
                    ) -> tuple[dict[str, np.ndarray | None], list[str]]:
    """The baselines on every series' test windows, in levels: naive (the last value),
    seasonal naive (with a season), mean (each series' training mean), ridge (one global
    ridge on the scaled windows of up to :data:`RIDGE_WINDOWS` training windows, like the
    model), and ETS, Theta and ARIMA (one model per series, on panels of up to
    :data:`STAT_SERIES` series; beyond, null with a warning)."""
    from . import metrics as M
    test = p.ends("test")
    sid = p.series_of(test)
    H = p.horizon
    last = p.levels[test - 1]
    out: dict[str, np.ndarray | None] = {}
    warnings = []
    for name in names:
        if name == "naive":
            out[name] = M.naive_forecast(last, H)
        elif name == "seasonal_naive":
            if season:
                out[name] = M.seasonal_naive_forecast(p.levels, test, H, season)
        elif name == "mean":
            means = np.array([np.mean(p.levels[slice(*p.train_rows(i))])
                              for i in range(p.n_series)])
            out[name] = np.repeat(means[sid, None], H, axis=1)
        elif name == "ridge":
            train = spread(p.ends("train"), RIDGE_WINDOWS)
            x_tr, y_tr = gather_windows(np.asarray(p.z), train, p.window, H)
            fit = M.ridge_model(x_tr, y_tr, ridge_alpha)
            preds = [M.ridge_predict(fit, gather_windows(np.asarray(p.z), test[i:i + 100_000],
                                                         p.window, H)[0])
                     for i in range(0, len(test), 100_000)]
            out[name] = p.to_levels(np.concatenate(preds), test)
            if p.n_features:  # the same global ridge seeing the past covariates' windows too
                def both(ends: np.ndarray) -> np.ndarray:
                    x, _ = gather_windows(np.asarray(p.z), ends, p.window, H)
                    feats = np.asarray(p.cal)[:, p.n_time_features:]
                    c = np.lib.stride_tricks.sliding_window_view(feats, p.window,
                                                                 axis=0)[ends - p.window]
                    return np.concatenate([x, c.reshape(len(ends), -1)], axis=1)
                fit_f = M.ridge_model(both(train), y_tr, ridge_alpha)
                preds = [M.ridge_predict(fit_f, both(test[i:i + 100_000]))
                         for i in range(0, len(test), 100_000)]
                out["ridge_features"] = p.to_levels(np.concatenate(preds), test)
        elif p.n_series > STAT_SERIES:
            warnings.append(f"warning: baseline {name} fits one model per series, for panels "
                            f"of up to {STAT_SERIES:,} series (this one has "
                            f"{p.n_series:,}); it is reported as null")
            out[name] = None
        else:
            out[name], failed = _per_series(p, name, test, sid, season)
            if failed:
                warnings.append(f"warning: baseline {name} could not be fitted on "
                                f"{len(failed)} series (first: {failed[0]}); their scores "
                                "are left out of its aggregates")
            if len(failed) == p.n_series:
                out[name] = None
    return out, warnings


def _per_series(p: Panel, name: str, test: np.ndarray, sid: np.ndarray, season: int
                ) -> tuple[np.ndarray, list[str]]:
    """ETS, Theta or ARIMA fitted on each series' training part, forecasting its test windows
    from their own origins (statbaselines.forecast). A series it cannot fit gets NaN, and is
    named in the list returned."""
    from . import statbaselines as S
    out = np.full((len(test), p.horizon), np.nan)
    failed = []
    for i in range(p.n_series):
        a, b = (int(x) for x in p.offsets[i:i + 2])
        rows = np.flatnonzero(sid == i)
        try:
            out[rows] = S.forecast(name, np.asarray(p.levels[a:b]), int(p.val_start[i]),
                                   test[rows] - a, p.horizon, season)
        except S.BaselineFailed as err:
            failed.append(f"{p.ids[i]!r} ({err})")
    return out, failed


def naive_scales(p: Panel) -> np.ndarray:
    """Each series' in-sample one-step naive MAE on its training part (MASE's denominator)."""
    from .metrics import naive_scale
    return np.array([naive_scale(p.levels[slice(*p.train_rows(i))]) for i in range(p.n_series)])


def by_series(p: Panel, ends: np.ndarray, actual: np.ndarray,
              forecasts: dict[str, np.ndarray | None]) -> pd.DataFrame:
    """One row per series: ``id, n_test`` and each forecaster's RMSE, MAE, MASE and sMAPE
    over the series' test windows (every step ahead)."""
    sid = p.series_of(ends)
    count = np.bincount(sid, minlength=p.n_series).astype(np.float64)
    n = count * actual.shape[1]
    scales = naive_scales(p)
    signal = p.signal[ends[:, None] + np.arange(p.horizon)[None, :]]
    has_signal = bool(np.isfinite(signal).all())
    table = {"id": p.ids, "n_test": count.astype(np.int64)}
    for name, f in forecasts.items():
        if f is None:
            continue
        err = f - actual
        sq = np.bincount(sid, (err ** 2).sum(axis=1), minlength=p.n_series)
        ab = np.bincount(sid, np.abs(err).sum(axis=1), minlength=p.n_series)
        den = np.abs(actual) + np.abs(f)
        sm = np.divide(2 * np.abs(err), den, out=np.zeros_like(den), where=den > 0)
        table[f"{name}_rmse"] = np.sqrt(sq / n)
        table[f"{name}_mae"] = ab / n
        with np.errstate(divide="ignore", invalid="ignore"):
            table[f"{name}_mase"] = np.where(scales > 0, ab / n / scales, np.nan)
        table[f"{name}_smape"] = 100 * np.bincount(sid, sm.sum(axis=1), minlength=p.n_series) / n
        if has_signal:
            ss = np.bincount(sid, ((f - signal) ** 2).sum(axis=1), minlength=p.n_series)
            table[f"{name}_signal_rmse"] = np.sqrt(ss / n)
    return pd.DataFrame(table)


def aggregate(table: pd.DataFrame, names: list[str]) -> dict:
    """Mean and median over series of each forecaster's per-series scores; mean MASE is the
    panel's headline (scale-free, so every series counts alike). A series without a score (a
    baseline that could not fit it; MASE: a training part without any change) is left out,
    and ``n_series`` counts those scored. ``beats_naive`` is the share of series where the
    forecaster's MASE is below naive's."""
    out = {}
    for name in names:
        if f"{name}_rmse" not in table:
            out[name] = None
            continue
        m = {}
        for metric in ("mase", "rmse", "mae", "smape", "signal_rmse"):
            col = f"{name}_{metric}"
            if col in table:
                v = table[col].to_numpy(dtype=float)
                v = v[np.isfinite(v)]
                m[f"{metric}_mean"] = float(np.mean(v)) if len(v) else None
                m[f"{metric}_median"] = float(np.median(v)) if len(v) else None
        mase = table[f"{name}_mase"].to_numpy(dtype=float)
        m["n_series"] = int(np.isfinite(mase).sum())   # series with a score (MASE defined)
        if name != "naive" and "naive_mase" in table:
            naive = table["naive_mase"].to_numpy(dtype=float)
            both = np.isfinite(mase) & np.isfinite(naive)
            m["beats_naive"] = float(np.mean(mase[both] < naive[both])) if both.any() else None
        out[name] = m
    return out


def ranked(table: pd.DataFrame, column: str = "model_mase") -> dict[str, int]:
    """Row of the best, median and worst series by ``column`` (ties: the first)."""
    v = table[column].to_numpy(dtype=float)
    order = np.argsort(np.where(np.isfinite(v), v, np.inf), kind="stable")
    finite = int(np.isfinite(v).sum()) or len(v)
    return {"best": int(order[0]), "median": int(order[(finite - 1) // 2]),
            "worst": int(order[finite - 1])}
