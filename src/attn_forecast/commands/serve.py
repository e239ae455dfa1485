"""``attn-forecast serve``: the forecast service over HTTP (serve/; docs/serve.md).

    attn-forecast serve                                  # models/model.pt's export, 127.0.0.1:8000
    attn-forecast serve --rev my-experiment --port 8001  # a DVC experiment's, or a commit's

It serves the export stage's artifacts beside the checkpoint (models/serve.json and the ONNX
model it names), each checked against its dvc.lock entry, on uvicorn; loopback only unless
``--host`` says otherwise. SIGTERM or Ctrl-C stops it after the requests in flight (exit 0).
Needs the serve extra: ``pip install -c constraints.txt -e '.[serve]'``.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import sys

from ..errors import UserInputError


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="attn-forecast serve", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/model.pt",
                    help="the checkpoint whose export to serve (its serve.json beside it; "
                    "default models/model.pt)")
    ap.add_argument("--rev", help="a git revision or DVC experiment to serve it at (dvc.api; "
                    "default: the workspace)")
    ap.add_argument("--repo", default=".", help="the repository (default: here)")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: "
                    "this machine only)")
    ap.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: a free one, "
                    "printed)")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime's and numpy's threads "
                    "(default 1)")
    ap.add_argument("--workers", type=int, default=1, help="requests computed off the event "
                    "loop at once: the blend's refits (default 1)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds a request off the "
                    "event loop may take before it is answered 504 (default 30)")
    ap.add_argument("--max-body-mb", type=float, default=16.0,
                    help="largest request body in MB (default 16; larger: 413)")
    ap.add_argument("--max-h", type=int, default=1000, help="most steps a request may ask for "
                    "(default 1,000)")
    ap.add_argument("--access-log", action="store_true", help="log every request")
    return ap


def _check(args) -> None:
    for name, low in (("threads", 1), ("workers", 1), ("max_h", 1)):
        if getattr(args, name) < low:
            raise UserInputError(f"--{name.replace('_', '-')} must be >= {low}, got "
                                 f"{getattr(args, name)}")
    if not 0 <= args.port <= 65535:
        raise UserInputError(f"--port must be from 0 to 65535, got {args.port}")
    if not args.time_limit > 0 or not args.max_body_mb > 0:
        raise UserInputError("--time-limit and --max-body-mb must be > 0")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise UserInputError(f"cannot listen on {host}:{port} ({err.strerror}); pass another "
                             "--port (0: any free one) or --host") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    _check(args)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):      # before numpy loads: one process, bounded threads
        os.environ[var] = str(args.threads)
    try:
        import uvicorn
        from ..serve.app import create_app
    except ImportError as err:
        raise UserInputError(f"serve needs the serve extra ({err.name} is missing): pip install "
                             "-c constraints.txt -e '.[serve]'") from None
    from ..serve.artifacts import load
    from ..serve.session import Session
    bundle = load(args.model, args.rev, args.repo)
    session = Session(bundle.manifest, bundle.onnx, bundle.identity, args.threads, args.max_h)
    session.warm()
    app = create_app(session, max_body=int(args.max_body_mb * 1e6), time_limit=args.time_limit,
                     workers=args.workers)
    sock = _bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, log_level="warning", access_log=args.access_log,
                            timeout_graceful_shutdown=args.time_limit + 5, lifespan="off")
    server = uvicorn.Server(config)

    def stop(*_) -> None:    # uvicorn re-raises the signal once it has drained: exit 0
        app.state.pool.shutdown(wait=False, cancel_futures=True)
        print("serve: stopped", flush=True)
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    i = bundle.identity
    print(f"serve: {i['artifacts'] and next(iter(i['artifacts']))} at {i['rev']} "
          f"({(i['commit'] or 'no commit')[:7]}): horizon {i['horizon']}, forecasters "
          f"{', '.join(i['forecasters'])} (default {i['default']}) on http://{host}:{port} "
          "(OpenAPI: /docs)", flush=True)
    server.run(sockets=[sock])
