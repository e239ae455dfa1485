"""The forecast service under load (issues 57 and 63), beside its floor, in one run on this
machine: a fresh clone of the project runs the README's CSV line (two years of daily demand,
the blend of the model, naive, seasonal naive, ETS, Theta and ARIMA), then

- `attn-forecast serve` on that run's export, and the floor (bench/serve_floor.py: one FastAPI
  route on the same ONNX model, msgspec in, orjson out, nothing else), both one uvicorn process
  with the same settings;
- locust (headless, serve/locustfile.py, on the same cores) posting the same bodies to both
  at 1, 8 and 32 users: (a) one series of 300 values, the model alone; (b) 100 such series in
  one request, the model alone; (c) one series, the blend (the service only: the floor has
  none). Requests per second, p50 / p95 / p99 latency (exact, the first seconds left out),
  failures; each case's ratio to the floor's;
- the bare onnxruntime call on the same batches, the blend's statistical members' own fit time
  on the same history, `attn-forecast forecast` on the same history (what a user does without
  the service), where one request's time goes (decoding, validation, scaling, inference,
  quantiles, encoding), and the service's peak RSS.

    python bench/serve_load.py                        # about 8 minutes on 2 cores
    python bench/serve_load.py --seconds 6 --users 1,8

Writes bench/results/serve_load.json (--out); bench/README.md's and docs/serve.md's figures are
generated from it. Traffic goes to 127.0.0.1 only, and every run stops by itself.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, clone, commit  # noqa: E402
from attn_forecast.serve import load  # noqa: E402

BIN = Path(sys.executable).parent
HISTORY = 300          # values a series
MANY = 100             # series of case (b)
CASES = {"a": ("one series, the model", 1, "model"), "b": ("100 series, the model", MANY,
                                                            "model"),
         "c": ("one series, the blend", 1, "blend")}
GOALS = {"a_rps": 0.7, "a_p95": 1.5, "b_p95": 1.5, "blend": 1.5, "rss_mb": 400}


def bodies(csv: Path) -> dict[str, bytes]:
    """The request of each case: the demand series' last 300 values (b: 100 windows of it,
    each its own id, so each is scaled by its own history), dated from a start with freq D."""
    df = pd.read_csv(csv)
    y, dates = df["demand"].to_numpy(float), pd.to_datetime(df["date"])
    n = len(y)

    def one(sid: str, end: int) -> dict:
        return {"id": sid, "values": y[end - HISTORY:end].tolist(),
                "start": dates[end - HISTORY].strftime("%Y-%m-%d"), "freq": "D"}
    ends = np.linspace(HISTORY, n, MANY).astype(int)
    out = {}
    for case, (_, k, name) in CASES.items():
        series = [one("demand", n)] if k == 1 else [one(f"s{i}", e) for i, e in enumerate(ends)]
        out[case] = json.dumps({"series": series, "forecaster": name}).encode()
    return out


def start(cmd: list[str], cwd: Path, env: dict) -> tuple[subprocess.Popen, int]:
    """A server process and the port it printed (it binds a free one)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {cmd}: {line}")
    return proc, int(line.split("http://")[1].split()[0].rsplit(":", 1)[1].rstrip("/"))


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(1000 * statistics.median(times), 3)


def in_process(work: Path, bodies_: dict[str, bytes]) -> dict:
    """The bare onnxruntime call, a request's time by part, and the blend's members' own fit
    time, timed in this process on the service's own bundle."""
    os.environ.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    import orjson
    from attn_forecast.forecasters.future import future
    from attn_forecast.evaluation.outlook import scaler_of
    from attn_forecast.serve.artifacts import load as load_bundle
    from attn_forecast.serve.schemas import decode
    from attn_forecast.serve.session import Session
    b = load_bundle("models/model.pt", repo=work)
    s = Session(b.manifest, b.onnx, b.identity, threads=1)
    s.warm()
    out = {}
    for case in ("a", "b"):
        body = bodies_[case]
        req = decode(body)
        job = s.validate(req)
        W = s.window
        z = np.stack([(y[-W:] - c) / k for y, (c, k) in
                      ((y, scaler_of(s.meta, i, y)) for i, y in zip(job.ids, job.histories))]
                     ).astype(np.float32)
        seen = np.ones(z.shape, dtype=bool) if "seen" in s.inputs else None
        feed = {"window": z, **({"seen": seen} if seen is not None else {})}
        values, head = s.network(job)
        answer = s.answer(job)
        parts = {"onnxruntime": median_ms(lambda: s.ort.run(s.outputs, feed), 200),
                 "decoding": median_ms(lambda: decode(body), 200),
                 "validation": median_ms(lambda: s.validate(req), 200),
                 "scaling and inference": median_ms(lambda: s.network(job), 200),
                 "quantiles": median_ms(lambda: s._model_quantiles(job, values.copy(), head),
                                        200),
                 "answer": median_ms(lambda: s._encode(job, values, *s._model_quantiles(
                     job, values.copy(), head), [""] * len(job.ids)), 200),
                 "encoding": median_ms(lambda: orjson.dumps(
                     answer, option=orjson.OPT_SERIALIZE_NUMPY), 200),
                 "whole request in process": median_ms(
                     lambda: orjson.dumps(s.answer(s.validate(decode(body))),
                                          option=orjson.OPT_SERIALIZE_NUMPY), 200)}
        parts["scaling"] = round(parts["scaling and inference"] - parts["onnxruntime"], 3)
        out[case] = parts
    job = s.validate(decode(bodies_["c"]))
    y = job.histories[0]
    members = [m for m in s.blend["members"] if m != "model"]
    fits = {m: median_ms(lambda m=m: future(m, s.season, y, job.h, s.levels), 3)
            for m in members}
    out["members_fit_ms"] = fits
    out["members_fit_total_ms"] = round(sum(fits.values()), 1)
    out["blend_in_process_ms"] = median_ms(lambda: s.answer(job), 3)
    return out


def command_time(work: Path, body: bytes) -> float:
    """`attn-forecast forecast` on case (a)'s history, as a process (median of 3)."""
    s = json.loads(body)["series"][0]
    dates = pd.date_range(s["start"], periods=len(s["values"]), freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"date": dates, "demand": s["values"]}).to_csv(work / "history.csv",
                                                                 index=False)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([str(BIN / "attn-forecast"), "forecast", "--model", "models/model.pt",
                        "--csv", "history.csv", "--out", "forecast_out.csv"], cwd=work,
                       check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return round(statistics.median(times), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=12.0, help="each load run's length")
    ap.add_argument("--skip", type=float, default=2.0, help="seconds left out at its start")
    ap.add_argument("--users", default="1,4,8,32", help="concurrent users, comma-separated")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "serve_load.json")
    args = ap.parse_args()
    users = [int(u) for u in args.users.split(",")]
    command = " ".join(["python bench/serve_load.py", *sys.argv[1:]])
    print(f"command: {command}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="attn-serve-load-"))
    # both servers: numpy's and onnxruntime's threads at 1 (the service sets its own too)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}:{os.environ['PATH']}",
           **{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    procs = []
    try:
        clone(work)
        subprocess.run(["dvc", "pull", "-q", "-r", "store", "--allow-missing"], cwd=work,
                       env=env, check=True)
        t = time.perf_counter()
        subprocess.run(["dvc", "exp", "run", "-S", "data.kind=csv", "-S",
                        "data.csv_column=demand", "-S", "data.csv_time_column=date"],
                       cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"the README's CSV run: {time.perf_counter() - t:.0f} s", flush=True)
        bodies_ = bodies(work / "data" / "external" / "example.csv")
        service, sport = start([str(BIN / "attn-forecast"), "serve", "--port", "0"], work, env)
        procs.append(service)
        floor, fport = start([sys.executable, str(ROOT / "bench" / "serve_floor.py"), "--onnx",
                              "models/model.onnx", "--port", "0"], work, env)
        procs.append(floor)
        runs: dict = {}
        for case, (what, _, _) in CASES.items():
            for name, port in (("service", sport), ("floor", fport)):
                if case == "c" and name == "floor":
                    continue
                for u in users:
                    r = load.run(port, bodies_[case], u, args.seconds, args.skip, work / "load")
                    runs.setdefault(case, {}).setdefault(name, []).append(r)
                    print(f"({case}) {what}, {name}, {u} users: {r}", flush=True)
        rss = peak_rss_mb(service.pid)
        parts = in_process(work, bodies_)
        cmd_s = command_time(work, bodies_["a"])
        result = {"command": command, "commit": commit(), "date": time.strftime("%Y-%m-%d"),
                  "machine": f"{os.cpu_count()} cores", "seconds": args.seconds,
                  "skip": args.skip, "history": HISTORY, "many": MANY, "runs": runs,
                  "service_peak_rss_mb": rss, "in_process": parts,
                  "forecast_command_s": cmd_s, "goals": GOALS}
        result["verdicts"] = verdicts(result)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        for line in result["verdicts"]:
            print(line)
        print(f"-> {args.out}")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def _at(rows: list[dict], users: int) -> dict:
    return next((r for r in rows if r["users"] == users), {})


def verdicts(r: dict) -> list[str]:
    """Each goal of issue 63 against the floor measured in the same run, met or missed."""
    runs, g, out = r["runs"], r["goals"], []

    def line(what: str, value: float, goal: float, le: bool) -> str:
        ok = value <= goal if le else value >= goal
        return f"{what}: {value:.2f} (goal {'<=' if le else '>='} {goal}): " \
            f"{'met' if ok else 'missed'}"
    a_s, a_f = _at(runs["a"]["service"], 8), _at(runs["a"]["floor"], 8)
    b_s, b_f = _at(runs["b"]["service"], 4) or _at(runs["b"]["service"], 8), \
        _at(runs["b"]["floor"], 4) or _at(runs["b"]["floor"], 8)
    if a_s and a_f:
        out.append(line("(a) 8 users, requests/s as a share of the floor's",
                        a_s["rps"] / a_f["rps"], g["a_rps"], False))
        out.append(line("(a) 8 users, p95 over the floor's", a_s["p95"] / a_f["p95"],
                        g["a_p95"], True))
    if b_s and b_f:
        out.append(line(f"(b) {b_s['users']} users, p95 over the floor's",
                        b_s["p95"] / b_f["p95"], g["b_p95"], True))
    c1 = _at(runs["c"]["service"], 1)
    if c1:
        out.append(line("(c) 1 user, p50 over the members' own fit time",
                        c1["p50"] / r["in_process"]["members_fit_total_ms"], g["blend"], True))
    out.append(line("peak RSS of the service (MB)", r["service_peak_rss_mb"], g["rss_mb"],
                    True))
    return out


if __name__ == "__main__":
    main()
