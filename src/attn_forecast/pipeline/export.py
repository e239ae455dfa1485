"""Stage export's step: what the forecast service serves, in one file (the manifest): the
network's ONNX export (the train stage's, named by its path and MD5), the JSON that describes
it, the blend's members and weights, every forecaster's calibrated intervals, the forecasters
a request may name and the one it gets by default. ``attn-forecast serve`` reads the manifest
and the ONNX it names, and refuses either where its bytes do not match its dvc.lock entry. No
torch here: an experiment pays only for the copy."""
from __future__ import annotations

import hashlib

from ..forecasters.names import BLEND, forecaster_names
from ..io import read_json, write_json

FORMAT = 1   # the manifest's layout; the service refuses another


def md5_of(path: str) -> str:
    """The file's MD5, as DVC 3 records it (the bytes as they are)."""
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest(onnx: str, model: dict, blend: dict | None, intervals: dict | None) -> dict:
    """The served bundle's record (paths as given: relative to the repository's root)."""
    blend = blend if blend and blend.get("members") else None
    names = forecaster_names(blend)
    return {"format": FORMAT, "onnx": {"path": onnx, "md5": md5_of(onnx)}, "model": model,
            "blend": blend, "intervals": intervals, "forecasters": list(names),
            "default": BLEND if blend else "model"}


def step(onnx: str, onnx_meta: str, blend: str, intervals: str, out: str) -> dict:
    m = manifest(onnx, read_json(onnx_meta), read_json(blend), read_json(intervals))
    write_json(out, m)
    levels = (m["intervals"] or {}).get("levels") or []
    print(f"export: {onnx} (horizon {m['model']['horizon']}, window {m['model']['window']}), "
          f"{len(levels)} quantile levels, forecasters {', '.join(m['forecasters'])} "
          f"(default {m['default']}) -> {out}")
    return m
