"""The forecast service's figures for the docs (tools/docs.py's ``serve-load`` block), made
from bench/results/serve_load.json: each load case beside its floor, the bare onnxruntime call,
the blend against its members' own fit time, where one request's time goes, the peak RSS and
each goal's verdict."""
from __future__ import annotations

import json
from pathlib import Path

RESULT = "bench/results/serve_load.json"


def _lat(r: dict) -> str:
    return f"{r['p50']:.2f} / {r['p95']:.2f} / {r['p99']:.2f}" if r.get("requests") else "n/a"


def serve_load(root: Path) -> str:
    r = json.loads((root / RESULT).read_text())
    lines = [f"`{r['command'].strip()}` at {r['commit']} ({r['date']}, {r['machine']}; "
             f"{r['seconds']:g} s a run, the first {r['skip']:g} s left out; "
             f"{r['history']} values a series):", "",
             "| case | users | service req/s | floor req/s | ratio | service p50 / p95 / p99 "
             "ms | floor p50 / p95 / p99 ms | p95 ratio | failures |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    names = {"a": "(a) one series, the model", "b": f"(b) {r['many']} series, the model",
             "c": "(c) one series, the blend"}
    for case, by in r["runs"].items():
        floor = {f["users"]: f for f in by.get("floor", [])}
        for s in by["service"]:
            f = floor.get(s["users"], {})
            ratio = f"{s['rps'] / f['rps']:.2f}" if f.get("rps") and s.get("rps") else ""
            p95 = f"{s['p95'] / f['p95']:.2f}" if f.get("p95") and s.get("p95") else ""
            failed = f"{s['failures']}" + (f" of {s['requests']:,}" if s["failures"] else "")
            lines.append(f"| {names[case]} | {s['users']} | {s.get('rps', 0):,.1f} | "
                         + (f"{f['rps']:,.1f}" if f else "no floor") + f" | {ratio} | "
                         f"{_lat(s)} | {_lat(f) if f else ''} | {p95} | {failed} |")
    p = r["in_process"]
    lines += ["", "Where one request's time goes, in process (ms, median; the service's own "
              "bundle):", "", "| part | (a) one series | (b) " + str(r["many"]) + " series |",
              "|---|---:|---:|"]
    for part in ("decoding", "validation", "scaling", "onnxruntime", "quantiles", "answer",
                 "encoding", "whole request in process"):
        lines.append(f"| {part} | {p['a'][part]:.3f} | {p['b'][part]:.3f} |")
    fits = ", ".join(f"{m} {v:,.0f}" for m, v in p["members_fit_ms"].items())
    c1 = next((s for s in r["runs"].get("c", {}).get("service", []) if s["users"] == 1), None)
    lines += ["", f"The bare onnxruntime call: {p['a']['onnxruntime']:.3f} ms for one series, "
              f"{p['b']['onnxruntime']:.3f} ms for {r['many']}. The blend's statistical "
              "members refitted on the same history, on their own: "
              f"{p['members_fit_total_ms']:,.0f} ms ({fits}); the blend in process "
              f"{p['blend_in_process_ms']:,.0f} ms"
              + (f", over HTTP at 1 user p50 {c1['p50']:,.0f} ms" if c1 else "") + ". "
              f"`attn-forecast forecast` on the same history (what a user does without the "
              f"service): {r['forecast_command_s']:.2f} s a call. Peak RSS of the service "
              f"process: {r['service_peak_rss_mb']:,.0f} MB.", ""]
    lines += [f"- {v}" for v in r["verdicts"]]
    return "\n".join(lines) + "\n"
