"""Stage train's step: the model fitted on every series' training windows (the setup of
setup/training.py), its checkpoint, its ONNX export and history, its forecasts of the
windows evaluate scores, and what it looks at (its attention weights, the weight by lag).
Needs torch."""
from __future__ import annotations

from ..config.load import load_params
from ..cpu import unpin_torch
from ..data.store_io import load, profile
from ..forecasters.neural import ModelForecaster
from ..forecasters.run import run
from ..forecasters.saved import CUT, save, with_part
from ..io import CSV_DIGITS, write_columns, write_npz
from ..model import checkpoint, explain, export
from ..training.distributed import distributed
from ..setup.forecasting import check_data, parts, levels_of
from .prepare import cut_of
from ..setup.training import device, fit, run_record


def step(params: str, prepared: str, model: str, onnx: str, onnx_meta: str, history: str,
         forecasts: str, attention: str, lags: str, pretrained: str | None,
         relaunch: tuple[str, list[str]]):
    """train: ``relaunch``, the stage's script and arguments, runs again under torchrun when
    ``train.nproc`` > 1. Returns the first member's FitResult (in every process)."""
    p = load_params(params, profile(prepared))
    t = p.train
    if t.compile:  # before torch's first operation
        unpin_torch()
    store = load(prepared)
    season = check_data(p, store)
    dist = distributed(t.nproc, device(t), *relaunch)
    fitted = fit(p, store, season, pretrained, dist)
    cut_store = cut_of(p, store)    # a competition's: trained again up to its calibration cut
    if cut_store is not None:
        cut_season = check_data(p, cut_store)
        again = fit(p, cut_store, cut_season, pretrained, dist)
    net, results = fitted.model, fitted.results
    if dist.rank != 0:
        return results[0]
    res = results[0]
    checkpoint.save(model, net, {"prepare": store.meta(), "init": t.init,
                                 "best_epoch": res.best_epoch, "history": res.history,
                                 "member_histories": [r.history for r in results]})
    export.export(net, store.meta(), onnx, "onnx", onnx_meta)   # what the export stage serves
    write_columns(history, {k: [row[k] for row in res.history]
                            for k in ("epoch", "train_loss", "val_loss", "lr")}, CSV_DIGITS)
    ran = run_record(fitted.settings, net, results, p, int(store.counts("train").sum()), t.init)
    fs = run(store, [ModelForecaster(net, dist.device)], parts(p, store), levels_of(p),
             record={"data": store.key(), "model": ran}, season=season)
    if cut_store is not None:   # its forecasts of the cut, which evaluate calibrates on
        fs = with_part(fs, CUT, run(cut_store, [ModelForecaster(again.model, dist.device)],
                                    ("test",), levels_of(p), season=cut_season))
        print(f"train: the calibration cut: {again.line(cut_store, t.init)}")
    save(forecasts, fs)
    weights = explain.explain(net, store, fs.ends["test"], fs.forecasts["model"]["test"].point,
                              dist.device)
    write_npz(attention, **weights)
    write_columns(lags, explain.lags_table(weights["mean"] if weights["mean"].size else None,
                                           net.settings), CSV_DIGITS)
    print(f"train: {fitted.line(store, t.init)} -> {model}")
    return res
