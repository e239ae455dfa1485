"""The rules of ``params.yaml`` that span keys (the schema checks each key on its own); sizes
of the data are checked where the data is known (setup/forecasting.py: check_data)."""
from __future__ import annotations

from ..errors import ParamsError
from ..model.kinds import REGISTRY, with_tokens
from .schema import Params


def check(p: Params) -> None:
    """Rules that span keys; sizes of the data are checked where the data is known."""
    pp, m, d = p.prepare, p.model, p.data
    if pp.test_frac + pp.val_frac + pp.cal_frac >= 1:
        raise ParamsError("params.yaml: prepare.test_frac + prepare.val_frac + prepare.cal_frac "
                          f"must be < 1, got {pp.test_frac} + {pp.val_frac} + {pp.cal_frac}")
    tokens = REGISTRY[m.kind].tokens          # heads, positions and patches apply
    if tokens and m.d_model % m.n_heads:
        raise ParamsError(f"params.yaml: model.d_model ({m.d_model}) must be divisible by "
                          f"model.n_heads ({m.n_heads})")
    if p.train.patience and pp.val_frac == 0:
        raise ParamsError("params.yaml: train.patience needs a validation part: set "
                          f"prepare.val_frac > 0 (got {pp.val_frac}) or train.patience 0")
    side = [k for k, v in (("prepare.time_features", pp.time_features),
                           ("data.csv_feature_columns", d.csv_feature_columns)) if v]
    if p.train.init == "pretrained" and side:
        raise ParamsError(f"params.yaml: {side[0]} needs train.init scratch or auto (the prior "
                          "reads the series' values only, without calendar features or "
                          "covariates)")
    if p.evaluate.conformal == "split" and pp.cal_frac == 0:
        raise ParamsError(
            "params.yaml: evaluate.conformal split calibrates on windows the model neither "
            "trained on nor was selected on: set prepare.cal_frac > 0 (e.g. 0.1) or "
            "evaluate.conformal none")
    q = p.evaluate.quantiles
    if q and (sorted(set(q)) != list(q) or 0.5 not in q):
        raise ParamsError(
            "params.yaml: evaluate.quantiles must be increasing levels between 0 and 1, none "
            f"repeated, holding 0.5 (the median), e.g. [0.1, 0.5, 0.9]; got {list(q)}")
    q = m.quantiles
    if q and (sorted(set(q)) != list(q) or 0.5 not in q or len(q) < 2):
        raise ParamsError(
            "params.yaml: model.quantiles must be increasing, hold 0.5 (the point forecast) "
            f"and at least one other level, e.g. [0.1, 0.5, 0.9]; got {list(q)}")
    dup = sorted({b for b in p.evaluate.baselines if p.evaluate.baselines.count(b) > 1})
    if dup:
        raise ParamsError(f"params.yaml: evaluate.baselines lists {', '.join(dup)} twice")
    if d.csv_decimal == d.csv_thousands or d.csv_decimal == d.csv_sep:
        raise ParamsError(
            f"params.yaml: data.csv_decimal ({d.csv_decimal!r}) must differ from "
            f"data.csv_sep ({d.csv_sep!r}) and data.csv_thousands ({d.csv_thousands!r})")
    if len(d.csv_sep) > 1:
        raise ParamsError(f"params.yaml: data.csv_sep must be one character (a tab: '\\t'), "
                          f"got {d.csv_sep!r}")
    if d.csv_time_format != "auto" and "%" not in d.csv_time_format:
        raise ParamsError("params.yaml: data.csv_time_format must be auto or a strftime "
                          f"format such as '%d/%m/%Y', got {d.csv_time_format!r}")
    feats, tf = d.csv_feature_columns, pp.feature_transforms
    if feats and d.kind != "csv":
        raise ParamsError("params.yaml: data.csv_feature_columns needs data.kind csv, got "
                          f"{d.kind!r}; set data.csv_feature_columns to []")
    named = (d.csv_column, d.csv_time_column, d.csv_id_column)
    clash = [c for c in feats if feats.count(c) > 1 or c in named or not c.strip()]
    if clash:
        raise ParamsError(
            f"params.yaml: data.csv_feature_columns must name distinct columns other than "
            f"data.csv_column, data.csv_time_column and data.csv_id_column, got "
            f"{clash[0]!r} in {feats}")
    if d.csv_id_column and d.csv_id_column in (d.csv_column, d.csv_time_column):
        raise ParamsError("params.yaml: data.csv_id_column must differ from data.csv_column and "
                          f"data.csv_time_column, got {d.csv_id_column!r}")
    if tf and len(tf) != len(feats):
        raise ParamsError(
            f"params.yaml: prepare.feature_transforms must be [] or hold one transform per "
            f"data.csv_feature_columns entry ({len(feats)}), got {len(tf)}: {tf}")
    if feats and tokens and m.patch_len > 1:
        raise ParamsError("params.yaml: data.csv_feature_columns works with one token per step "
                          f"(model.patch_len 0 or 1), got model.patch_len {m.patch_len}")
    if d.kind == "csv" and not d.csv_path:
        raise ParamsError("params.yaml: data.csv_path must name a CSV file when data.kind is csv")
    if m.positional == "sinusoidal" and tokens and m.d_model % 2:
        raise ParamsError("params.yaml: model.d_model must be even with sinusoidal positions, "
                          f"got {m.d_model}")
    if m.patch_len and not tokens:
        raise ParamsError(f"params.yaml: model.patch_len needs model.kind "
                          f"{' or '.join(with_tokens())}, got {m.kind!r}; set model.patch_len 0")
    if m.patch_stride and not m.patch_len:
        raise ParamsError("params.yaml: model.patch_stride needs model.patch_len > 0")
    if m.patch_len and m.patch_stride > m.patch_len:
        raise ParamsError(f"params.yaml: model.patch_stride ({m.patch_stride}) must be <= "
                          f"model.patch_len ({m.patch_len}), or steps between patches are lost")
    if pp.window != "auto":
        check_patches(pp.window, m.patch_len, m.patch_stride)
        if m.lookbacks and max(m.lookbacks) > pp.window:
            raise ParamsError(f"params.yaml: model.lookbacks must be <= prepare.window "
                              f"({pp.window}), the store's context, got {m.lookbacks}")
        if pp.min_context > pp.window:
            raise ParamsError(f"params.yaml: prepare.min_context ({pp.min_context}) must be <= "
                              f"prepare.window ({pp.window})")
    if m.lookbacks and m.patch_len:
        for w in m.lookbacks:
            check_patches(w, m.patch_len, m.patch_stride)
    for loss in (p.train.loss, *p.train.losses):
        if loss in ("smape", "mape", "mase") and pp.transform != "none":
            key = "train.loss" if loss == p.train.loss else "train.losses"
            raise ParamsError(f"params.yaml: {key} {loss} is a score of the series' own values: "
                              f"it needs prepare.transform none, got {pp.transform!r}")
    if len(set(p.train.losses)) != len(p.train.losses):
        raise ParamsError(f"params.yaml: train.losses lists a loss twice: {p.train.losses}")
    check_prior(p)
    if d.kind == "competition" and d.subset == "other" and d.competition != "m3":
        raise ParamsError(f"params.yaml: data.subset other is M3's only; {d.competition} has "
                          "yearly, quarterly and monthly")
    known = {"model", *p.evaluate.baselines, "ridge_features"}
    for combo in p.evaluate.combinations:
        missing = [n for n in combo.split("+") if n not in known]
        if missing:
            raise ParamsError(f"params.yaml: evaluate.combinations {combo!r} names {missing[0]!r}, "
                              "which is neither model nor in evaluate.baselines")
    if d.kind in ("sine", "seasonal", "random_walk", "panel") and "auto" not in \
            (pp.window, pp.horizon):
        min_points = pp.window + pp.horizon + 1
        if d.n_points < min_points:
            raise ParamsError(
                f"params.yaml: data.n_points must be >= {min_points} for window "
                f"{pp.window} + horizon {pp.horizon}, got {d.n_points}")


def check_patches(window: int, patch_len: int, patch_stride: int,
                  window_key: str = "prepare.window", patch_key: str = "model.patch_len"
                  ) -> None:
    """Patches must tile the window: the last one ends at the newest step, the first starts at
    the oldest (so every step is in a patch)."""
    if not patch_len:
        return
    stride = patch_stride or patch_len
    if patch_len > window or (window - patch_len) % stride:
        raise ParamsError(
            f"params.yaml: patches of {patch_key} {patch_len} every {stride} steps must "
            f"cover {window_key} {window} exactly: (window - patch_len) must be a multiple of "
            "the stride")


def check_prior(p: Params) -> None:
    """The pretrain section's rules: a corpus whose series hold a window's shortest context
    and a horizon, the prior's model (attention, patches that tile its window, an even
    d_model divisible by the heads, quantile levels around 0.5)."""
    pp, m = p.pretrain, p.pretrain.model
    if pp.min_length < pp.min_context + pp.horizon or pp.max_length < pp.min_length:
        raise ParamsError(f"params.yaml: pretrain.min_length ({pp.min_length}) must be >= "
                          f"pretrain.min_context + pretrain.horizon "
                          f"({pp.min_context + pp.horizon}) and <= pretrain.max_length "
                          f"({pp.max_length})")
    if m.kind != "attention" or m.lookbacks or m.highway or m.instance_norm in ("none",
                                                                                "seasonal"):
        raise ParamsError("params.yaml: pretrain.model must be an attention model of one "
                          "window, without highway, with an instance norm of revin, last, "
                          "delta or mean")
    if not m.patch_len:
        raise ParamsError("params.yaml: pretrain.model.patch_len must be >= 1")
    check_patches(pp.window, m.patch_len, m.patch_stride, "pretrain.window",
                  "pretrain.model.patch_len")
    if m.d_model % m.n_heads or m.d_model % 2:
        raise ParamsError(f"params.yaml: pretrain.model.d_model ({m.d_model}) must be even and "
                          f"divisible by pretrain.model.n_heads ({m.n_heads})")
    q = m.quantiles
    if sorted(set(q)) != list(q) or 0.5 not in q or len(q) < 2:
        raise ParamsError("params.yaml: pretrain.model.quantiles must be increasing and hold "
                          f"0.5, got {list(q)}")
