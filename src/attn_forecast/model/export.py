"""Export a trained model for serving: ONNX (any ONNX runtime) or a torch.export program.

    attn-forecast export --model models/model.pt --format onnx --out model.onnx   (commands/)

writes ``model.onnx`` and, beside it, ``model.json``: what a service without Python needs to
forecast in the series' own units (the window length, horizon, transform, scaler, quantile
levels, calendar features, and the inputs' and outputs' names and shapes).

The graph takes scaled model-space values and returns them:

    inputs   window            (batch, W)     float32: the last W transformed, scaled values
             calendar_inputs   (batch, W, C)  float32: only with calendar features
             calendar_targets  (batch, H, C)  float32: only with calendar features
             features          (batch, W, F)  float32: only with past covariates (the window's
                                              steps; transformed and scaled, see the JSON)
             seen              (batch, W)     bool: only for a model that forecasts from fewer
                                              values than W (the fine-tuned prior): the steps
                                              that hold values, the padding before them False
    outputs  forecast          (batch, H)     float32: the next H values, scaled
             quantiles         (batch, H, Q)  float32: only with a quantile head

so that ``levels = inverse_transform(forecast * scale + center)``; with transform ``none`` that
is ``forecast * scale + center`` (see the JSON's ``how`` entry). The batch size is dynamic.
ONNX uses PyTorch's TorchScript-based exporter (the torch.export-based one needs the
onnxscript package, which this project does not install); ``--format pt2`` writes a
``torch.export`` program instead, for serving from Python.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ..io import atomic_path, write_json
from .settings import context_of, takes_short


class Serving(nn.Module):
    """The model with plain tensor inputs and outputs (no flags, no tuples of weights), in the
    order of :func:`io_names`."""

    def __init__(self, model: nn.Module, masked: bool = False) -> None:
        super().__init__()
        self.model = model
        self.settings = model.settings
        self.masked = masked

    def forward(self, window: torch.Tensor, *rest: torch.Tensor):
        s, cal = self.settings, None
        seen = rest[-1] if self.masked else None
        side = rest[:-1] if self.masked else rest
        if side:  # [calendar_inputs, calendar_targets] [features] -> the model's (C + F) pair
            xs, ys = ([side[0]], [side[1]]) if s.n_time_features else ([], [])
            if s.n_features:  # a target time's features are never read: zeros
                feats = side[-1]
                xs.append(feats)
                ys.append(feats.new_zeros(feats.shape[0], s.horizon, s.n_features))
            cal = (torch.cat(xs, dim=-1), torch.cat(ys, dim=-1))
        if self.settings.quantiles:
            q = self.model(window, cal=cal, quantiles=True, seen=seen)[0]
            return q[..., list(self.settings.quantiles).index(0.5)], q
        return self.model(window, cal=cal, seen=seen)[0]


def io_names(settings, masked: bool = False) -> tuple[list[str], list[str]]:
    inputs = ["window"] + (["calendar_inputs", "calendar_targets"]
                           if settings.n_time_features else []) \
        + (["features"] if settings.n_features else []) + (["seen"] if masked else [])
    outputs = ["forecast"] + (["quantiles"] if settings.quantiles else [])
    return inputs, outputs


def example_inputs(settings, batch: int = 2, masked: bool = False) -> tuple[torch.Tensor, ...]:
    x = (torch.zeros(batch, settings.window),)
    if settings.n_time_features:
        C = settings.n_time_features
        x += (torch.zeros(batch, settings.window, C), torch.zeros(batch, settings.horizon, C))
    if settings.n_features:
        x += (torch.zeros(batch, settings.window, settings.n_features),)
    if masked:
        x += (torch.ones(batch, settings.window, dtype=torch.bool),)
    return x


def describe(settings, meta: dict, fmt: str) -> dict:
    """The JSON beside the exported model."""
    mask = takes_short(meta, settings.window)
    inputs, outputs = io_names(settings, mask)
    W, H, C = settings.window, settings.horizon, settings.n_time_features
    shapes = {"window": ["batch", W], "calendar_inputs": ["batch", W, C],
              "calendar_targets": ["batch", H, C], "forecast": ["batch", H],
              "features": ["batch", W, settings.n_features], "seen": ["batch", W],
              "quantiles": ["batch", H, len(settings.quantiles)]}
    return {
        "format": fmt, "window": W, "horizon": H, "transform": meta["transform"],
        # the fewest values a history needs (before a transform's one): a shorter window than
        # W is padded with its first value and the padding marked False in ``seen``
        "context": context_of(meta, W),
        "scaler": meta["scaler"], "quantiles": list(settings.quantiles),
        # one scaler per series: ids[k] is scaled by center[k], scale[k] (and its features by
        # feature_center[k], feature_scale[k])
        "series_scalers": meta["series"],
        "time_features": meta.get("time_features", []),
        **({"features": meta["features"], "feature_transforms": meta["feature_transforms"]}
           if settings.n_features else {}),
        "inputs": {n: shapes[n] for n in inputs}, "outputs": {n: shapes[n] for n in outputs},
        "how": ("A series' scaler is its own, from series_scalers (center, scale at its id's "
                "index). x = (transform(levels)[-window:] - center) / scale; "
                "y = forecast * scale + center; levels: transform none: y; "
                "diff: last level + cumsum(y); log_return: last level * exp(cumsum(y)). "
                "transform(levels): none: levels; diff: levels[1:] - levels[:-1]; "
                "log_return: log(levels[1:] / levels[:-1]). Calendar features: sin and cos of "
                "each feature's phase (minute / 60, hour / 24, dayofweek / 7, (dayofmonth - 1) "
                "/ 31, (dayofyear - 1) / 366, (month - 1) / 12) times 2 pi, in that order."
                + (" Features (past covariates, of the window's steps): each column's "
                   "transform (none; diff and log_return as above; log1p: log(1 + x)), then "
                   "(f - feature_center) / feature_scale of the series; a row the transform "
                   "leaves undefined (a differenced column's first) is 0 after scaling."
                   if settings.n_features else "")
                + (" seen: True for the steps that hold values; a history shorter than window "
                   "(at least context) is padded in front with its first scaled value, its "
                   "padding False." if mask else "")),
    }


def export(model: nn.Module, meta: dict, out: str | Path, fmt: str,
           meta_path: str | Path | None = None) -> Path:
    """Write the model and its JSON (``meta_path``, by default beside ``out`` with the suffix
    .json); returns the JSON's path."""
    import warnings
    out = Path(out)
    mask = takes_short(meta, model.settings.window)
    serving = Serving(model, mask).eval()
    inputs, outputs = io_names(model.settings, mask)
    args = example_inputs(model.settings, masked=mask)
    with atomic_path(out) as tmp, warnings.catch_warnings():
        # the TorchScript exporter's deprecation notice, and its tracer's notes on the
        # model's Python branches (each taken the same way for every input)
        warnings.simplefilter("ignore")
        if fmt == "onnx":
            dynamic = {name: {0: "batch"} for name in inputs + outputs}
            torch.onnx.export(serving, args, str(tmp), input_names=inputs,
                              output_names=outputs, dynamic_axes=dynamic, dynamo=False,
                              opset_version=17)
        else:
            batch = torch.export.Dim("batch", min=1)
            # forward(window, *side): the side inputs' specs are one nested tuple
            shapes = ({0: batch}, tuple({0: batch} for _ in args[1:])) if len(args) > 1 \
                else ({0: batch},)
            program = torch.export.export(serving, args, dynamic_shapes=shapes)
            import io
            buf = io.BytesIO()   # a buffer: torch.export warns on a file not named *.pt2
            torch.export.save(program, buf)
            tmp.write_bytes(buf.getvalue())
    meta_path = Path(meta_path) if meta_path else out.with_suffix(".json")
    write_json(meta_path, describe(model.settings, meta, fmt))
    return meta_path
