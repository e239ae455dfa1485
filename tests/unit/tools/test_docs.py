"""The figures the docs quote are the committed files' (tools/docs.py): every generated block
of every page equals what its committed file makes now (run `make docs` after a change)."""
from __future__ import annotations

import pytest

from tools.docs import BLOCK, BLOCKS, PAGES, refreshed
from conftest import ROOT


@pytest.mark.parametrize("page", PAGES)
def test_every_generated_block_agrees_with_its_committed_file(page):
    text = (ROOT / page).read_text()
    assert refreshed(text, ROOT) == text, f"{page} is stale: run `make docs`"


def test_the_m3_figures_are_generated_where_the_docs_quote_them():
    used = {m.group(2) for page in PAGES for m in BLOCK.finditer((ROOT / page).read_text())}
    assert {"m3-points", "m3-intervals", "m3-targets"} <= used <= set(BLOCKS)


def test_a_block_of_an_unknown_name_is_refused():
    with pytest.raises(KeyError, match="no generated block named 'm3-typo'"):
        refreshed("<!-- generated: m3-typo -->\nold\n<!-- /generated -->\n", ROOT)


def test_a_changed_figure_in_a_block_is_found():
    name = next(iter(BLOCKS))
    text = f"<!-- generated: {name} -->\n| stale | 1.00 |\n<!-- /generated -->\n"
    assert refreshed(text, ROOT) != text


def test_the_field_scale_table_is_each_committed_row_sorted_a_missing_cell_blank(tmp_path):
    import json

    from tools.docs import field_scale
    (tmp_path / "bench" / "results").mkdir(parents=True)
    common = {"prepare_s": 1.2, "field_s": 3456.7, "evaluate_s": 5.0, "ms_per_series": 34.6,
              "peak_rss_main_mib": 1810, "peak_rss_worker_mib": 1661, "ets_mase": 1.04431,
              "date": "2026-12-03"}
    rows = [{"series": 100000, "engine": "dask", **common, "note": "a shared machine"},
            {"series": 10000, "engine": "local", **common, "field_peak_main_mib": 505,
             "field_peak_worker_mib": 495, "commit": "3dbfccd", "note": "a shared machine"}]
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(rows))
    lines = field_scale(tmp_path).splitlines()
    assert len(lines) == 8 and lines[0] == "Every step in one process (the earlier runs):"
    assert lines[2].startswith("| series | engine | prepare s |")
    assert lines[-2:] == ["", "(1) a shared machine"]
    assert lines[4] == ("| 10,000 (1) | local | 1 | 3,457 | 5 | 34.6 | 1,810 | 1,661 | 505 | 495 "
                        "| 1.044 | 2026-12-03 | 3dbfccd |")
    assert lines[5] == ("| 100,000 (1) | dask | 1 | 3,457 | 5 | 34.6 | 1,810 | 1,661 |  |  "
                        "| 1.044 | 2026-12-03 |  |")


def test_the_field_scale_rows_run_a_process_a_step_come_first_in_a_table_of_their_own(
        tmp_path):
    import json

    from tools.docs import field_scale
    (tmp_path / "bench" / "results").mkdir(parents=True)
    common = {"prepare_s": 1.2, "field_s": 3456.7, "evaluate_s": 5.0, "ms_per_series": 34.6,
              "ets_mase": 1.04431, "date": "2026-12-04"}
    rows = [{"series": 1000, "engine": "local", **common, "peak_rss_main_mib": 343,
             "peak_rss_worker_mib": 337, "note": "typed"},
            {"series": 1000, "engine": "dask", **common, "prepare_peak_mib": 1200,
             "field_peak_mib": 640, "field_peak_worker_mib": 410, "evaluate_peak_mib": 900,
             "commit": "abc1234", "note": "idle"}]
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(rows))
    lines = field_scale(tmp_path).splitlines()
    assert lines[0] == "Each step in its own process, as `dvc repro` runs them:"
    assert lines[2] == ("| series | engine | prepare s | field s | evaluate s | ms per series "
                        "(field) | prepare MiB | field MiB | field's worker MiB | evaluate MiB "
                        "| ETS mean MASE | date | commit |")
    assert lines[4] == ("| 1,000 (1) | dask | 1 | 3,457 | 5 | 34.6 | 1,200 | 640 | 410 | 900 "
                        "| 1.044 | 2026-12-04 | abc1234 |")
    assert lines[6] == "Every step in one process (the earlier runs):"
    assert lines[10].startswith("| 1,000 (2) | local |")
    assert lines[-3:] == ["", "(1) idle", "(2) typed"]


def test_the_field_scale_targets_read_the_latest_row_of_each_size_and_engine(tmp_path):
    import json

    from tools.docs import field_scale_targets

    def row(n, engine, ms, main, worker=500):
        return {"series": n, "engine": engine, "ms_per_series": ms, "date": "2026-12-03",
                "peak_rss_main_mib": main, "peak_rss_worker_mib": worker}
    rows = [row(100000, "dask", 50.0, 2812),             # an earlier run, superseded below
            row(10000, "local", 30.0, 500), row(10000, "dask", 36.0, 600),
            row(100000, "local", 33.0, 1810), row(100000, "dask", 34.0, 1900, 2100)]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(rows))
    lines = field_scale_targets(tmp_path).splitlines()[2:]
    assert lines == [
        "| local: ms per series at 100,000 within 1.2x of 10,000 | 33.0 / 30.0 = 1.10x | yes |",
        "| dask: ms per series at 100,000 within 1.2x of 10,000 | 34.0 / 36.0 = 0.94x | yes |",
        "| 10,000 series: dask within 1.3x of local | 36.0 / 30.0 = 1.20x | yes |",
        "| 100,000 series: dask within 1.3x of local | 34.0 / 33.0 = 1.03x | yes |",
        "| 10,000 series, local: every process under 2 GiB | main 500 MiB, largest worker "
        "500 MiB | yes |",
        "| 10,000 series, dask: every process under 2 GiB | main 600 MiB, largest worker "
        "500 MiB | yes |",
        "| 100,000 series, local: every process under 2 GiB | main 1,810 MiB, largest worker "
        "500 MiB | yes |",
        "| 100,000 series, dask: every process under 2 GiB | main 1,900 MiB, largest worker "
        "2,100 MiB | **no** |"]


def test_a_row_run_a_process_a_step_meets_the_memory_target_only_if_every_process_does(
        tmp_path):
    import json

    from tools.docs import field_scale_targets

    def row(n, worker):
        return {"series": n, "engine": "dask", "ms_per_series": 30.0, "date": "2026-12-04",
                "peak_rss_main_mib": 4000, "prepare_peak_mib": 1500, "field_peak_mib": 900,
                "field_peak_worker_mib": worker, "evaluate_peak_mib": 1000}
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(
        [row(10000, 400), row(100000, 2048)]))
    lines = field_scale_targets(tmp_path).splitlines()[2:]
    assert lines[-2:] == [
        "| 10,000 series, dask: every process under 2 GiB | prepare 1,500 MiB, field 900 MiB, "
        "field's worker 400 MiB, evaluate 1,000 MiB | yes |",
        "| 100,000 series, dask: every process under 2 GiB | prepare 1,500 MiB, field 900 MiB, "
        "field's worker 2,048 MiB, evaluate 1,000 MiB | **no** |"]


def test_a_field_scale_target_without_its_rows_says_so_and_a_ratio_is_judged_as_printed(
        tmp_path):
    import json

    from tools.docs import field_scale_targets
    rows = [{"series": 9998, "engine": "local", "ms_per_series": 30.0, "date": "2026-12-03",
             "peak_rss_main_mib": 500, "peak_rss_worker_mib": 400},
            {"series": 100001, "engine": "local", "ms_per_series": 36.14, "date": "2026-12-03"},
            {"series": 100001, "engine": "dask", "ms_per_series": 40.0, "date": "2026-12-03",
             "peak_rss_main_mib": 2047, "peak_rss_worker_mib": 2048}]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(rows))
    lines = field_scale_targets(tmp_path).splitlines()[2:]
    assert lines[:2] == [
        "| local: ms per series at 100,000 within 1.2x of 10,000 | 36.1 / 30.0 = 1.20x | yes |",
        "| dask: ms per series at 100,000 within 1.2x of 10,000 | not measured | |"]
    assert "| 100,001 series, local: every process under 2 GiB | not recorded | |" in lines
    assert lines[-1].endswith("largest worker 2,048 MiB | **no** |")


def test_the_engines_agree_table_says_no_where_a_value_or_an_array_differs(tmp_path):
    import json

    from tools.docs import engines_agree
    (tmp_path / "bench" / "results").mkdir(parents=True)
    row = {"command": "python bench/engines_agree.py", "date": "2026-12-04", "commit": "abc1234",
           "subset": "other", "values": 217163, "largest_difference": 0.0,
           "differing_arrays": 0, "tol": 1e-9, "seconds": 33.6}
    rows = [row, {**row, "largest_difference": 2e-6}, {**row, "differing_arrays": 1}]
    (tmp_path / "bench/results/engines_agree.json").write_text(json.dumps(rows))
    lines = engines_agree(tmp_path).splitlines()
    assert lines[0].startswith("| M3 subset | values compared | largest difference |")
    assert lines[2] == "| other | 217,163 | 0 | 0 | 1e-09 | yes | 34 | 2026-12-04 | abc1234 |"
    assert "| 2e-06 | 0 | 1e-09 | **no** |" in lines[3]
    assert "| 0 | 1 | 1e-09 | **no** |" in lines[4]


def test_a_field_scale_ratio_compares_rows_of_one_run_and_says_when_it_cannot(tmp_path):
    import json

    from tools.docs import field_scale_targets

    def row(n, engine, ms, commit):
        return {"series": n, "engine": engine, "ms_per_series": ms, "date": "2026-12-04",
                "commit": commit, "peak_rss_main_mib": 500, "peak_rss_worker_mib": 400}
    # run a: both engines at 10,000 and dask at 100,000; run b (a slower machine): local at
    # 10,000 and 100,000; the latest local row at 10,000 is run b's
    rows = [row(10000, "dask", 29.0, "a"), row(10000, "local", 28.7, "a"),
            row(100000, "dask", 31.2, "a"), row(100000, "local", 37.9, "b"),
            row(10000, "local", 40.5, "b"), row(30000, "dask", 30.0, "c"),
            row(30000, "local", 31.0, "d")]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench/results/field_scale.json").write_text(json.dumps(rows))
    lines = field_scale_targets(tmp_path).splitlines()[2:7]
    assert lines == [
        "| local: ms per series at 100,000 within 1.2x of 10,000 | 37.9 / 40.5 = 0.94x | yes |",
        "| dask: ms per series at 100,000 within 1.2x of 10,000 | 31.2 / 29.0 = 1.08x | yes |",
        "| 10,000 series: dask within 1.3x of local | 29.0 / 28.7 = 1.01x | yes |",
        "| 30,000 series: dask within 1.3x of local | 30.0 / 31.0 = 0.97x (rows of different "
        "runs) | yes |",
        "| 100,000 series: dask within 1.3x of local | 31.2 / 37.9 = 0.82x (rows of different "
        "runs) | yes |"]


def test_the_global_m3_table_bolds_the_lowest_of_each_column(tmp_path):
    import json

    from tools.docs import global_m3
    row = {"yearly": 20.0, "quarterly": 10.0, "monthly": 15.0, "other": 5.0, "all": 14.0,
           "series": 3003, "seconds": 300.0}
    rows = {"per subset": row,
            "global, 4000 steps": {**row, "yearly": 20.004, "monthly": 14.5, "all": 13.9}}
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "global_m3.json").write_text(
        json.dumps({"command": "python bench/global_m3.py", "rows": rows}))
    table = global_m3(tmp_path)
    per, glob = (next(x for x in table.splitlines() if x.startswith(f"| {n} "))
                 for n in rows)
    assert "| **15.00** |" not in per and "| **14.50** |" in glob
    assert "| **20.00** |" in per and "| **20.00** |" in glob     # a tie as shown: both bold
    assert table.rstrip().endswith("`python bench/global_m3.py`")


def test_the_real_series_verdicts_compare_the_blend_with_the_best_statistical_mean(tmp_path):
    import json

    from tools.docs import quantile_verdicts, real_quantiles

    def q(mase, wql, c80, c95):
        return {"mase": mase, "wql": wql, "coverage_80": c80, "coverage_95": c95}
    rows = [{"series": "a", "horizon": 18, "blend_quantiles": q(0.5, 0.05, 0.78, 0.94),
             "ets_quantiles": q(0.6, 0.04, 0.9, 0.99), "theta_quantiles": q(0.7, 0.06, 0.8, 0.95),
             "arima_quantiles": q(0.1, 0.01, 0.8, 0.95)},
            {"series": "b", "horizon": 8, "blend_quantiles": q(0.9, 0.10, 0.60, 0.93),
             "ets_quantiles": q(0.8, 0.12, 0.8, 0.95), "theta_quantiles": q(0.7, 0.13, 0.8, 0.9),
             "arima_quantiles": None}]
    lines = quantile_verdicts(rows, "blend", ("ets", "theta", "arima"))
    assert lines[0] == "- horizons: a 18, b 8"
    # MASE: blend 0.70, ets 0.70, theta 0.70 -> the first best (ets), at or below: met
    assert "MASE averaged over the 2 series 0.7000" in lines[1] and "(ets)" in lines[1]
    assert lines[1].endswith("met)")
    # WQL: blend 0.075, ets 0.080, theta 0.095 -> met; arima left out (not on every series)
    assert "0.0750" in lines[2] and "(ets) 0.0800" in lines[2] and "met" in lines[2]
    # 80 %: 69.0 on average (missed), b 20 points off; 95 %: 93.5 (met), both within 10
    assert "69.0 (target: within 4 points: missed); 1 of 2 series within 10 points (not: b)" \
        in lines[3]
    assert "93.5 (target: within 4 points: met); 2 of 2" in lines[4]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "real.json").write_text(json.dumps(
        {"command": "python bench/real.py", "date": "2026-12-05", "commit": "abc1234",
         "stats": ["ets", "theta", "arima"], "rows": rows}))
    block = real_quantiles(tmp_path)
    assert "| a | 18 | 0.500 / 0.0500 / 78 / 94 | 0.600 / 0.0400 / 90 / 99 |" in block
    assert "| b | 8 |" in block and block.count("n/a") == 1   # arima on b
    assert block.rstrip().endswith("`python bench/real.py` (2026-12-05, abc1234)")
