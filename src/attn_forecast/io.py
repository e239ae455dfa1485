"""Atomic, pickle-free file output and input.

Every artifact is written to a temporary file in the destination folder and renamed into place,
so a stage killed halfway leaves either the old file or the new one, never half of one. Numbers
in committed files are written at the precisions below.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

# Committed files hold numbers at these precisions (significant digits): CPUs of different
# vendors train to weights that differ in the last bits (see cpu.py), which moves metrics in
# about the 7th digit; 4 digits keep `dvc metrics diff` quiet across machines and are well
# below the spread of one seed (~1e-2).
METRIC_DIGITS = 4
CSV_DIGITS = 6


def rounded(obj, digits: int = METRIC_DIGITS):
    """``obj`` (nested dicts and lists) with every float at ``digits`` significant digits."""
    if isinstance(obj, dict):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v, digits) for v in obj]
    if isinstance(obj, float) and math.isfinite(obj):
        return float(f"{obj:.{digits}g}")
    return obj


def dotted(values: dict, prefix: str = "") -> dict:
    """A nested mapping as ``dotted.key -> value``, down to the leaves (``{"train": {"lr":
    1}}`` -> ``{"train.lr": 1}``; a section nested deeper, ``peers.nf_nhits``, to its own
    keys, ``peers.nf_nhits.max_steps``)."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out

def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except OSError as err:   # an error names the file asked for, never the temporary one
        if err.filename in (tmp, str(tmp)) or err.filename2 == str(path):
            raise OSError(err.errno, err.strerror, str(path)) from None
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def replace_files(folder: str | Path, pattern: str = "*") -> Iterator[Path]:
    """Yield an empty temporary folder beside ``folder``; on success its files replace the
    ``pattern`` files of ``folder`` (stale ones removed). On an error or Ctrl-C the folder is
    left exactly as it was."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        yield tmp
        new = {f.name for f in tmp.glob(pattern)}
        for f in sorted(tmp.glob(pattern)):
            os.chmod(f, 0o666 & ~_umask())
            os.replace(f, folder / f.name)
        for old in folder.glob(pattern):
            if old.name not in new:
                old.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def _json_safe(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, inf) as None: JSON has no NaN, and a score
    that does not exist is null (n/a), never a number."""
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: str | Path, obj: Any) -> None:
    """Valid JSON always: a non-finite float is written as null."""
    write_text(path, json.dumps(_json_safe(obj), indent=2, sort_keys=False,
                                allow_nan=False) + "\n")


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def write_npz(path: str | Path, compressed: bool = False, **arrays: np.ndarray) -> None:
    # np.savez writes fixed zip timestamps, so equal arrays give equal bytes.
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        (np.savez_compressed if compressed else np.savez)(fh, **arrays)


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def write_csv(path: str | Path, frame: Any, digits: int | None = None) -> None:
    """Write a pandas DataFrame without its index; floats as their shortest exact repr, or at
    ``digits`` significant digits (committed plot files); missing values as NaN."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n", na_rep="NaN",
                     float_format=f"%.{digits}g" if digits else None)


def write_columns(path: str | Path, columns: dict, digits: int) -> None:
    """A CSV of equal-length columns (numbers; None is NaN) without pandas, written as
    :func:`write_csv` writes a DataFrame at ``digits`` significant digits."""
    def cell(v) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return "NaN"
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return str(int(v))
        return f"{float(v):.{digits}g}"
    cols = [list(c) for c in columns.values()]
    lines = [",".join(columns)] + [",".join(cell(c[i]) for c in cols)
                                   for i in range(len(cols[0]) if cols else 0)]
    write_text(path, "\n".join(lines) + "\n")


def sha256_tree(folder: str | Path, pattern: str = "*.py") -> str:
    """The SHA-256 (hex) of every file under ``folder`` matching ``pattern``: each one's path
    relative to it and its bytes, in path order (a file edited, added, removed or renamed
    changes it)."""
    import hashlib
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(folder.rglob(pattern)):
        if f.is_file():
            h.update(f.relative_to(folder).as_posix().encode() + b"\0")
            h.update(sha256_file(f).encode())
    return h.hexdigest()


def sha256_file(path: str | Path) -> str:
    """The file's SHA-256 (hex), read in blocks."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
