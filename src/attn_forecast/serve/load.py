"""A bounded load run on the forecast service: locust, headless, on loopback, stopped by its
run time (serve/locustfile.py), and the figures of its requests. bench/serve_load.py measures
the service with it; the tests run it for seconds and check only that nothing failed.

    run(port=8000, body=b'{"series": [...]}', users=8, seconds=12, skip=2, work=Path("/tmp/x"))
    -> {"users": 8, "requests": 11000, "failures": 0, "rps": 1000.0, "p50": 6.9, ...}
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

LOCUSTFILE = Path(__file__).with_name("locustfile.py")


def run(port: int, body: bytes, users: int, seconds: float, skip: float, work: Path,
        host: str = "127.0.0.1") -> dict:
    """``users`` posting ``body`` to the service at ``host``:``port`` for ``seconds`` (whole
    seconds, as locust takes them): the requests, the failures, requests per second and
    latency percentiles (ms) after the first ``skip`` seconds."""
    work.mkdir(parents=True, exist_ok=True)
    bf, out = work / "body.json", work / "samples.json"
    bf.write_bytes(body)
    locust = shutil.which("locust", path=str(Path(sys.executable).parent)) or "locust"
    env = {**os.environ, "SERVE_LOAD_BODY": str(bf), "SERVE_LOAD_OUT": str(out)}
    out.unlink(missing_ok=True)
    # locust exits 1 when a request failed: the failures are counted below, not raised
    res = subprocess.run([locust, "-f", str(LOCUSTFILE), "--headless", "-u", str(users), "-r",
                          str(users), "-t", f"{max(1, round(seconds))}s", "--host",
                          f"http://{host}:{port}", "--only-summary", "--loglevel", "ERROR",
                          "--stop-timeout", "60"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=seconds + 120)
    if not out.is_file():
        raise RuntimeError(f"locust wrote no samples (exit {res.returncode}): "
                           f"{res.stderr.strip()[-300:]}")
    return summary(np.array(json.loads(out.read_text())).reshape(-1, 3), users, skip)


def summary(samples: np.ndarray, users: int, skip: float) -> dict:
    """The figures of samples (time s, latency ms, ok) after the first ``skip`` seconds."""
    if not len(samples):
        return {"users": users, "requests": 0, "failures": 0}
    t0 = samples[0, 0] + skip
    kept = samples[samples[:, 0] >= t0]
    ok = kept[kept[:, 2] == 1]
    span = max(kept[-1, 0] - t0, 1e-9) if len(kept) else 1.0
    lat = ok[:, 1] if len(ok) else np.array([np.nan])
    return {"users": users, "requests": int(len(kept)),
            "failures": int((kept[:, 2] == 0).sum()), "rps": round(float(len(ok) / span), 1),
            **{f"p{q}": round(float(np.percentile(lat, q)), 2) for q in (50, 95, 99)}}
