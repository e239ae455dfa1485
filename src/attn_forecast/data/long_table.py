"""The generate stage's long table (``id, t, value, signal``, past covariates as
``feature:<name>``, a competition's ``horizon`` and ``period``), written and read back in
blocks so a large dataset is never held as a DataFrame; and a table as flat arrays (a Raw)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserInputError
from ..io import atomic_path
from .csv import FEATURE_PREFIX
from .windows import concat_ranges


@dataclass(frozen=True)
class Raw:
    """The generate stage's long table as flat arrays (rows grouped by id, in time order)."""
    ids: np.ndarray                   # (S,) str
    offsets: np.ndarray               # (S + 1,) int64
    t: np.ndarray                     # (R,) float64 or datetime64[s]
    y: np.ndarray                     # (R,) float64, the table's value column
    signal: np.ndarray                # (R,) float64
    features: np.ndarray | None = None   # (R, F) raw past covariates
    feature_names: tuple = ()
    horizons: np.ndarray | None = None   # (S,) a competition's test length of each series
    periods: np.ndarray | None = None    # (S,) each series' seasonal period, where known

    def take(self, keep: np.ndarray) -> Raw:
        """Only the series ``keep`` (indices)."""
        rows = concat_ranges(self.offsets[keep], self.offsets[keep + 1])
        n = np.diff(self.offsets)[keep]
        per = (lambda a: None if a is None else a[keep])  # noqa: E731
        return Raw(self.ids[keep], np.concatenate([[0], np.cumsum(n)]).astype(np.int64),
                   self.t[rows], self.y[rows], self.signal[rows],
                   None if self.features is None else self.features[rows], self.feature_names,
                   per(self.horizons), per(self.periods))


def iso_times(times: np.ndarray) -> np.ndarray:
    """datetime64 as ISO 8601 strings (date only when every time is midnight)."""
    s = pd.Series(times)
    fmt = "%Y-%m-%d" if (s == s.dt.normalize()).all() else \
        "%Y-%m-%dT%H:%M:%S" if (s == s.dt.floor("s")).all() else "%Y-%m-%dT%H:%M:%S.%f"
    return s.dt.strftime(fmt).to_numpy(dtype=object)


def write_long(path: str | Path, chunks, rows: int = 1_000_000) -> tuple[int, int]:
    """Write ``id, t, value, signal[, feature:...]`` DataFrames (each id's rows together, in
    time order) to one CSV, atomically, ``rows`` at a time; returns the rows and the ids."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    n = n_ids = 0
    last = None
    with atomic_path(path) as tmp:
        writer = None
        for whole in chunks:
            for start in range(0, len(whole), rows):
                frame = whole.iloc[start:start + rows]
                if frame["t"].dtype.kind == "M":
                    frame = frame.assign(t=iso_times(frame["t"].to_numpy()))
                ids = frame["id"].to_numpy()
                n_ids += int((ids[1:] != ids[:-1]).sum()) + int(ids[0] != last)
                last = ids[-1]
                table = pa.Table.from_pandas(frame.astype({"id": str}), preserve_index=False)
                if writer is None:
                    writer = pacsv.CSVWriter(str(tmp), table.schema)
                writer.write_table(table)
                n += len(frame)
        if writer is not None:
            writer.close()
    return n, n_ids


def _max_rows(path: str | Path) -> int:
    """An upper bound of a CSV file's data rows: its lines, less the header."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(16 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n") - 1


def read_long(path: str | Path, features: list[str] = ()):
    """The generate stage's table as a Raw, read in blocks into arrays allocated once
    (a 20M-row table needs its columns in memory, no more)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path) as fh:   # a competition's series also carry their horizon and period
        header = fh.readline().strip().replace('"', "").split(",")
    extra = [c for c in ("horizon", "period") if c in header]
    cols = ["id", "t", "value", "signal", *(FEATURE_PREFIX + f for f in features), *extra]
    types = {"id": pa.string(), **{c: pa.float64() for c in cols[2:]}}
    read = pacsv.ReadOptions(block_size=1 << 20)  # 8 MiB blocks peak at 280 MiB of buffers
    try:
        opts = pacsv.ConvertOptions(column_types=types, include_columns=cols)
        reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
        if pa.types.is_integer(reader.schema.field("t").type):  # 0.5 may come later
            opts.column_types = {**types, "t": pa.float64()}
            reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
    except (pa.ArrowInvalid, KeyError):
        raise UserInputError(f"{path} is not the table this version writes (columns "
                             f"{', '.join(cols)}); run the generate stage again (dvc repro)") \
            from None
    t_type = reader.schema.field("t").type
    if not (pa.types.is_floating(t_type) or pa.types.is_date(t_type)
            or pa.types.is_timestamp(t_type) or pa.types.is_null(t_type)):
        raise UserInputError(f"{path}: column 't' holds {t_type} values, not numbers or ISO "
                             "dates; run the generate stage again (dvc repro)")
    cap = max(_max_rows(path), 0)
    value, signal = np.empty(cap), np.empty(cap)
    feats = np.empty((cap, len(features))) if features else None
    more = {c: np.empty(cap) for c in extra}
    t = None
    ids: list[str] = []
    bounds: list[int] = []
    row = 0
    for batch in reader:
        enc = batch.column(0).dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False)
        names = enc.dictionary.to_pylist()
        for s in np.flatnonzero(np.diff(codes, prepend=-1)):
            if not (s == 0 and ids and ids[-1] == names[codes[s]]):  # not the last block's
                ids.append(names[codes[s]])
                bounds.append(row + int(s))
        times = batch.column(1)
        if pa.types.is_date(times.type) or pa.types.is_timestamp(times.type):
            times = times.cast(pa.timestamp("us"))
        times = times.to_numpy(zero_copy_only=False)
        if t is None:
            t = np.empty(cap, dtype=times.dtype if times.dtype.kind == "M" else np.float64)
        k = batch.num_rows
        t[row:row + k] = times
        value[row:row + k] = batch.column(2).to_numpy(zero_copy_only=False)
        signal[row:row + k] = batch.column(3).to_numpy(zero_copy_only=False)
        for j in range(len(features)):
            feats[row:row + k, j] = batch.column(4 + j).to_numpy(zero_copy_only=False)
        for j, c in enumerate(extra):
            more[c][row:row + k] = batch.column(4 + len(features) + j).to_numpy(
                zero_copy_only=False)
        row += k
    if len(set(ids)) != len(ids):
        raise UserInputError(f"{path}: the rows of each id must be together (id "
                             f"{next(i for i in ids if ids.count(i) > 1)!r} appears in two "
                             "places); run the generate stage again (dvc repro)")
    offsets = np.array(bounds + [row], dtype=np.int64)
    t = np.zeros(0) if t is None else t
    per = {c: more[c][offsets[:-1]].astype(np.int64) for c in extra}  # each series' first row
    return Raw(np.array(ids, dtype=str), offsets, t[:row], value[:row], signal[:row],
               None if feats is None else feats[:row], tuple(features),
               per.get("horizon"), per.get("period"))


def raw_of(frame: pd.DataFrame, features: list[str] = ()) -> Raw:
    """A table of the generate stage's columns (each id's rows together, in time order) as a
    Raw, in memory: what read_long gives for the same table written out."""
    ids = frame["id"].astype(str).to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    offsets = np.r_[starts, len(ids)].astype(np.int64)
    per = {c: frame[c].to_numpy()[starts].astype(np.int64) for c in ("horizon", "period")
           if c in frame}
    feats = frame[[FEATURE_PREFIX + f for f in features]].to_numpy(np.float64) \
        if features else None
    t = frame["t"].to_numpy()
    return Raw(ids[starts].astype(str), offsets, t if t.dtype.kind == "M" else t.astype(float),
               frame["value"].to_numpy(np.float64), frame["signal"].to_numpy(np.float64),
               feats, tuple(features), per.get("horizon"), per.get("period"))
