"""End-to-end: the forecast service as a user runs it. A tiny project's `dvc repro` (its
export stage included) is committed, then `attn-forecast serve` runs as a real uvicorn process
on a free loopback port and answers over HTTP: its numbers are `attn-forecast forecast`'s for
the same history (to 1e-6 of the series' scale), every bad input is a one-line 4xx, concurrent
requests get the serial answers, a failing request changes nothing, SIGTERM drains a request in
flight and exits 0, `--rev` serves a committed run's artifacts and a tampered one is refused,
and a bounded locust run of a few seconds sees no failure. Traffic goes to 127.0.0.1 only."""
from __future__ import annotations

import http.client
import importlib.util
import json
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
import yaml

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("onnxruntime")


class Server:
    """`attn-forecast serve` in the project, on a port it picked; stopped by the test."""

    def __init__(self, project, *args: str, timeout: float = 120) -> None:
        self.proc = project.popen(["attn-forecast", "serve", "--port", "0", *args],
                                  stdout=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        deadline = time.monotonic() + timeout
        self.port = None
        while time.monotonic() < deadline and self.port is None:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if "http://" in line:
                self.port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
        if self.port is None:
            self.proc.kill()
            raise AssertionError("serve did not start:\n" + "".join(self.lines)
                                 + self.proc.stdout.read())
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def call(self, path: str, body: bytes | None = None, timeout: float = 60
             ) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body,
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def repo(project_factory):
    proj = project_factory("serve")
    proj.run(["dvc", "repro"], timeout=600, check=True)
    proj.git_commit("a run")
    return proj


@pytest.fixture(scope="module")
def server(repo):
    s = Server(repo, "--max-body-mb", "1")
    yield s
    assert s.stop() == 0


def _history(repo) -> pd.DataFrame:
    return pd.read_csv(repo.path / "data" / "raw" / "series.csv")


def _body(values, **kw) -> bytes:
    return json.dumps({"series": [{"id": "sine", "values": list(values), "start": 0,
                                   "freq": 1}], **kw}).encode()


def test_what_is_served_is_the_locked_run(repo, server):
    status, ident = server.call("/model")
    assert status == 200 and server.call("/health") == (200, {"status": "ok"})
    lock = yaml.safe_load((repo.path / "dvc.lock").read_text())
    outs = {o["path"]: o["md5"] for s in lock["stages"].values() for o in s.get("outs", [])}
    assert ident["artifacts"] == {p: outs[p] for p in ("models/serve.json", "models/model.onnx")}
    head = repo.run(["git", "rev-parse", "HEAD"], check=True).stdout.strip()
    assert ident["commit"] == head and ident["lock_committed"] is True
    assert ident["params"]["train.epochs"] == 3 and ident["horizon"] == 1
    assert 0.975 in ident["levels"] and ident["calibration"]["model"] == "calibrated"
    status, page = server.call("/openapi.json")
    assert status == 200 and "ForecastRequest" in page["components"]["schemas"]


def test_the_answer_is_the_forecast_commands(repo, server):
    values = _history(repo)["value"].to_numpy()
    repo.run(["attn-forecast", "forecast", "--model", "models/model.pt", "--csv",
              "data/raw/series.csv", "--steps", "3", "--out", "f.csv"], check=True)
    want = pd.read_csv(repo.path / "f.csv")
    status, got = server.call("/forecast", _body(values.tolist(), h=3))
    assert status == 200, got
    one = got["series"][0]
    tol = 1e-6 * values.std()
    np.testing.assert_allclose(one["forecast"], want["forecast"], rtol=0, atol=tol)
    for tau, col in ((0.025, "q2.5"), (0.1, "q10"), (0.9, "q90"), (0.975, "q97.5")):
        np.testing.assert_allclose(one["quantiles"][f"{tau:g}"], want[col], rtol=0, atol=tol)
    assert one["timestamps"] == want["time"].tolist()
    assert one["calibrated"] == [c == "true" or c is True for c in want["calibrated"]]


BAD = [
    (b'{"series": [', 400, "body: not valid JSON"),
    (b'{"series": []}', 422, "series: empty"),
    (json.dumps({"series": [{"id": "sine", "values": [1.0, None]}]}).encode(), 422,
     "series[0].values[1]: Expected `float`, got `null`"),
    (_body([1.0] * 5), 422, "series[0].values: 5 values; this model needs at least"),
    (_body([0.1] * 100, h=0), 422, "h: must be from 1"),
    (_body([0.1] * 100, h=10**6), 422, "h: must be from 1"),
    (_body([0.1] * 100, forecaster="blend"), 422, "forecaster: 'blend' is not served"),
    (_body([0.1] * 100, quantiles=[0.42]), 422, "quantiles[0]: 0.42 is not a calibrated"),
    (json.dumps({"series": [{"id": "sine", "values": [0.1] * 100,
                             "timestamps": list(range(99)) + [5]}]}).encode(), 422,
     "series[0].timestamps[99]: 5 is not after 98"),
    (b'{"series": [{"id": "sine", "values": [1e999]}]}', 422,
     "series[0].values[0]: Number out of range"),
]


@pytest.mark.parametrize("body,status,start", BAD)
def test_every_bad_input_is_a_one_line_4xx(server, body, status, start):
    got_status, got = server.call("/forecast", body)
    assert got_status == status and list(got) == ["error"], got
    assert got["error"].startswith(start) and "\n" not in got["error"], got["error"]


def test_a_body_over_the_limit_is_a_413_and_the_server_goes_on(repo, server):
    """Refused on its declared length, before it is sent (a client still sending when the
    server answers and closes sees a broken pipe, as from any server)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("POST", "/forecast")
    conn.putheader("content-type", "application/json")
    conn.putheader("content-length", "1100000")
    conn.endheaders()
    r = conn.getresponse()
    got = json.loads(r.read())
    conn.close()
    assert r.status == 413 and got["error"].startswith("body: 1,100,000 bytes; the limit is")
    assert server.call("/health")[0] == 200


def test_concurrent_requests_get_the_serial_answers_and_a_failure_changes_nothing(repo,
                                                                                   server):
    values = _history(repo)["value"].to_numpy()
    bodies = [_body((values + k).tolist(), h=2) for k in range(12)]
    serial = [server.call("/forecast", b)[1] for b in bodies]
    for body, *_ in BAD:                           # failures in between change nothing
        server.call("/forecast", body)
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(lambda b: server.call("/forecast", b)[1], bodies))
    for a, b in zip(serial, together):
        assert a["series"][0]["forecast"] == b["series"][0]["forecast"]
        assert a["series"][0]["quantiles"] == b["series"][0]["quantiles"]


def test_sigterm_answers_the_request_in_flight_then_exits_0(repo):
    s = Server(repo)
    values = _history(repo)["value"].tolist()
    body = json.dumps({"series": [{"id": f"s{k}", "values": values, "start": 0, "freq": 1}
                                  for k in range(200)], "h": 1000}).encode()
    with ThreadPoolExecutor(1) as pool:
        t0 = time.monotonic()
        pending = pool.submit(s.call, "/forecast", body)
        time.sleep(0.3)
        assert not pending.done(), "the request ended before SIGTERM: make it longer"
        s.proc.send_signal(signal.SIGTERM)
        status, got = pending.result(timeout=120)
    assert status == 200 and len(got["series"]) == 200 and len(got["series"][0]["forecast"]) \
        == 1000, (status, time.monotonic() - t0)
    assert s.proc.wait(timeout=60) == 0
    assert "serve: stopped" in "".join(s.lines)


def test_rev_serves_a_committed_run_and_a_tampered_artifact_is_refused(repo, tmp_path):
    manifest = repo.path / "models" / "serve.json"
    kept = tmp_path / "serve.json"
    shutil.copy2(manifest, kept)
    head = repo.run(["git", "rev-parse", "HEAD"], check=True).stdout.strip()
    try:
        manifest.write_text(manifest.read_text().replace('"default"', '"default" ', 1))
        res = repo.run(["attn-forecast", "serve", "--port", "0"], timeout=120)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "models/serve.json does not match its dvc.lock entry" in res.stderr
        s = Server(repo, "--rev", "HEAD")            # the committed run, from DVC's cache
        try:
            status, ident = s.call("/model")
            assert status == 200 and ident["rev"] == "HEAD" and ident["commit"] == head
        finally:
            assert s.stop() == 0
    finally:
        shutil.copy2(kept, manifest)


def test_a_bounded_load_run_sees_no_failure(repo, server, tmp_path):
    if importlib.util.find_spec("locust") is None:   # not imported here: it patches threads
        pytest.skip("no locust (the load extra)")
    from attn_forecast.serve import load
    values = _history(repo)["value"].tolist()
    got = load.run(server.port, _body(values), users=2, seconds=3, skip=0, work=tmp_path)
    assert got["requests"] > 10 and got["failures"] == 0, got
