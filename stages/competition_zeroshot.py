"""Stage zeroshot@<subset> of the competition pipeline (competitions/dvc.yaml): the prior
(models/pretrained.pt, never trained on the competition) forecasting every series of one
subset zero-shot, for the field's seat that needs torch.

out: its forecasts (a ForecastSet npz, committed).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import save
from attn_forecast.forecasters.zeroshot import ZeroShot
from attn_forecast.pipeline.competition import field_store, subset_params
from attn_forecast.pipeline.forecasting import check_data, parts, taus


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--holdout", choices=["test", "validation", "calibration"],
                    help="instead of the params file's holdout: calibration, the horizon before "
                    "the validation cut (where intervals are calibrated)")
    ap.add_argument("--out", required=True, help="the prior's forecasts (npz)")
    ap.add_argument("--pretrained", required=True, help="the prior")
    args = ap.parse_args(argv)
    p, prof = subset_params(args.params, args.subset, holdout=args.holdout)
    store = field_store(p, prof)
    season = check_data(p, store)
    named = "zeroshot" in p.evaluate.baselines
    fs = run(store, [ZeroShot(args.pretrained)] if named else [], parts(p, store), taus(p),
             season=season)
    save(args.out, fs, compressed=True)
    print(f"zeroshot@{args.subset}: {'the prior on' if named else 'not asked for:'} "
          f"{store.n_series} series -> {args.out}")


if __name__ == "__main__":
    stage.run(main)
