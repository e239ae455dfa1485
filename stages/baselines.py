"""Stage baselines: fit every baseline on each series' training part and forecast the test
(and calibration) windows, in levels, with their intervals when intervals are scored.

out: a ForecastSet npz (no pickles), the same kind of file the train stage writes for the
model. The baselines do not depend on the model: an experiment that changes only ``model``
or ``train`` settings reuses this stage's output. No torch here.
"""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
import sys  # noqa: E402

from attn_forecast import forecasters, wiring  # noqa: E402
from attn_forecast.baselines import baselines  # noqa: E402
from attn_forecast.cpu import cores  # noqa: E402
from attn_forecast import store as S  # noqa: E402
from attn_forecast.errors import run_cli  # noqa: E402
from attn_forecast.params import load_params  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--out", required=True, help="baselines' forecasts (npz) to write")
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    args = ap.parse_args(argv)
    params = load_params(args.params, S.profile(args.prepared))
    e = params.evaluate
    store = S.load(args.prepared)
    season = wiring.check_data(params, store)
    chosen, unavailable = baselines(
        e.baselines, season=season, ridge_alpha=e.ridge_alpha, features=store.n_features > 0,
        jobs=cores(), prior=args.pretrained)
    unavailable = {k: f"{v} (evaluate.season is {e.season}; set a period or auto)"
                   for k, v in unavailable.items()}
    fs = forecasters.run(store, chosen, wiring.parts(params), wiring.taus(params),
                         {**wiring.baselines_record(params, store, season),
                          "unavailable": unavailable}, fallback=forecasters.Naive2(season))
    for line in fs.warnings:
        print(line, file=sys.stderr)
    found = (store.auto.get("season") or {}).get("season") or 0
    if e.season == 0 and found > 1:
        print(f"baselines: note: evaluate.season is 0, so they fit no season; the training "
              f"parts' season is {found} (prepare): set evaluate.season to auto to use it",
              file=sys.stderr)
    forecasters.save(args.out, fs)
    fitted = [n for n, parts in fs.forecasts.items() if parts.get("test") is not None]
    print(f"baselines: {', '.join(fitted) or 'none'} on {len(fs.ends['test'])} test windows of "
          f"{store.n_series} series{' with intervals' if fs.taus else ''} -> {args.out}")


if __name__ == "__main__":
    run_cli(main)
