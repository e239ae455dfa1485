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
from attn_forecast.config.load import load_params  # noqa: E402
from attn_forecast.data.store_io import load, profile  # noqa: E402
from attn_forecast.errors import naming, run_cli  # noqa: E402
from attn_forecast.forecasters.saved import save  # noqa: E402
from attn_forecast.pipeline.keys import PARAMS_KEYS  # noqa: E402
from attn_forecast.pipeline.field import field  # noqa: E402
from attn_forecast.pipeline.forecasting import check_data  # noqa: E402


@naming(PARAMS_KEYS)
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--out", required=True, help="baselines' forecasts (npz) to write")
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    store = load(args.prepared)
    season = check_data(params, store)
    fs = field(params, store, season, args.pretrained)
    for line in fs.warnings:
        print(line, file=sys.stderr)
    found = (store.auto.get("season") or {}).get("season") or 0
    if params.evaluate.season == 0 and found > 1:
        print(f"baselines: note: evaluate.season is 0, so they fit no season; the training "
              f"parts' season is {found} (prepare): set evaluate.season to auto to use it",
              file=sys.stderr)
    save(args.out, fs)
    fitted = [n for n, parts in fs.forecasts.items() if parts.get("test") is not None]
    print(f"baselines: {', '.join(fitted) or 'none'} on {len(fs.ends['test'])} test windows of "
          f"{store.n_series} series{' with intervals' if fs.taus else ''} -> {args.out}")


if __name__ == "__main__":
    run_cli(main)
