"""The locust user of a load run on the forecast service (serve/load.py; the load extra):
each user posts one body to /forecast again and again, no wait between; every request's time,
exact latency (ms) and success go to the JSON file SERVE_LOAD_OUT when the run ends (locust's
own percentiles round to whole milliseconds). The body comes from the file SERVE_LOAD_BODY.
Run by locust only (``locust -f``): importing it loads gevent.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from locust import FastHttpUser, constant, events, task

BODY = Path(os.environ["SERVE_LOAD_BODY"]).read_bytes()
SAMPLES: list[tuple[float, float, int]] = []     # (time, latency ms, ok)


@events.request.add_listener
def _record(request_type, name, response_time, response_length, exception, **kw) -> None:
    SAMPLES.append((time.perf_counter(), float(response_time), int(exception is None)))


@events.quitting.add_listener
def _write(environment, **kw) -> None:
    Path(os.environ["SERVE_LOAD_OUT"]).write_text(json.dumps(SAMPLES))


class Client(FastHttpUser):
    wait_time = constant(0)

    @task
    def forecast(self) -> None:
        with self.client.post("/forecast", data=BODY, catch_response=True,
                              headers={"content-type": "application/json"}) as r:
            if r.status_code != 200:
                r.failure(f"{r.status_code}: {r.text[:200]}")
