"""The floor the forecast service is measured against (bench/serve_load.py): the plainest
endpoint on the same exported model. FastAPI, one route, the body decoded by msgspec (the
fastest decoder measured for this shape), each series' last window standardized by its own
mean and spread, one onnxruntime call over the batch, the median forecast back in levels,
encoded by orjson. No validation past the decoder, no quantiles, no time stamps, no blend.
Served by the same uvicorn settings as `attn-forecast serve` (uvloop, httptools, no access
log, one process, onnxruntime and numpy at the same thread count).

    python bench/serve_floor.py --onnx models/model.onnx --port 8100
"""
from __future__ import annotations

import argparse
import json
import socket

from pathlib import Path

import msgspec
import numpy as np
import onnxruntime as ort
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response


class Series(msgspec.Struct):
    id: str
    values: list[float]


class Body(msgspec.Struct):
    series: list[Series]


def app_for(onnx: str, threads: int):
    meta = json.loads(Path(onnx).with_suffix(".json").read_text())
    W, levels = meta["window"], meta["quantiles"]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(onnx, opts, providers=["CPUExecutionProvider"])
    seen = "seen" in {i.name for i in sess.get_inputs()}
    decoder = msgspec.json.Decoder(Body)
    app = FastAPI()

    @app.post("/forecast")
    async def forecast(request: Request) -> Response:
        body = decoder.decode(await request.body())
        y = np.stack([np.asarray(s.values[-W:], dtype=np.float64) for s in body.series])
        mu, sd = y.mean(axis=1, keepdims=True), y.std(axis=1, keepdims=True) + 1e-12
        feed = {"window": ((y - mu) / sd).astype(np.float32)}
        if seen:
            feed["seen"] = np.ones(feed["window"].shape, dtype=bool)
        out = sess.run(["forecast"], feed)[0] * sd + mu
        return Response(orjson.dumps({"series": [{"id": s.id, "forecast": out[i]}
                                                 for i, s in enumerate(body.series)]},
                                     option=orjson.OPT_SERIALIZE_NUMPY),
                        media_type="application/json")
    return app, levels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", required=True, help="the exported model (its .json beside it)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8100)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import uvicorn
    app, _ = app_for(args.onnx, args.threads)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    print(f"floor: {args.onnx} on http://{args.host}:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                  lifespan="off")).run(sockets=[sock])


if __name__ == "__main__":
    main()
