"""Stage zeroshot@<subset> of the competition pipeline (competitions/dvc.yaml): the prior
(models/pretrained.pt, never trained on the competition) forecasting every series of one
subset zero-shot, for the field's seat that needs torch; and its calibration cut, where its
quantiles are calibrated.

out: its forecasts as the leaderboard scores them (a compact ForecastSet npz, committed).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import save
from attn_forecast.forecasters.zeroshot import ZeroShot
from attn_forecast.pipeline.competition import field_store, on_both_cuts
from attn_forecast.pipeline.forecasting import parts, taus


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the prior's forecasts (npz)")
    ap.add_argument("--pretrained", required=True, help="the prior")
    args = ap.parse_args(argv)

    def forecast(p, store, season):
        named = "zeroshot" in p.evaluate.baselines
        return run(store, [ZeroShot(args.pretrained)] if named else [], parts(p, store),
                   taus(p), season=season)
    fs, p, store = on_both_cuts(args.params, args.subset, field_store, forecast,
                                lambda p, fs: fs.names())
    save(args.out, fs, compact=True)
    print(f"zeroshot@{args.subset}: "
          f"{'the prior on' if fs.names() else 'not asked for:'} {store.n_series} series "
          f"({p.data.holdout}, calibrated on its calibration cut) -> {args.out}")


if __name__ == "__main__":
    stage.run(main)
