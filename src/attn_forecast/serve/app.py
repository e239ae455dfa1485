"""The forecast service's ASGI app (FastAPI): ``POST /forecast``, ``GET /model`` (what is
served: its DVC hashes, revision, params, horizon, levels and calibration), ``GET /health``,
and the OpenAPI page at ``/docs``.

The body is read as bytes and decoded by msgspec, the answer encoded by orjson (numpy arrays as
they are): the JSON, not the network, is most of a request's cost. A request for the model
alone runs on the event loop (a few onnxruntime calls); one for the blend or another member
(statistical refits, seconds) or for many recursive steps runs in a bounded thread pool, under
a time limit. Every refusal is a 4xx with one line of JSON naming the field: ``{"error":
"series[0].values: 3 values; this model needs at least 60 ..."}``.
"""
from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor

import orjson
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response

from .. import __version__
from .schemas import BadRequest, decode, openapi_components
from .session import Session

JSON = "application/json"
INLINE_CALLS = 4    # a model-only request of at most this many network calls runs inline


def _json(obj, status: int = 200) -> Response:
    return Response(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY), status_code=status,
                    media_type=JSON)


async def _body(request: Request, limit: int) -> bytes:
    """The body, refused (413) past ``limit`` bytes before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(f"body: {int(declared):,} bytes; the limit is {limit:,} "
                         "(serve --max-body-mb)", 413)
    if declared is not None:    # read whole (a body longer than declared is the server's error)
        return await request.body()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(f"body: more than {limit:,} bytes (serve --max-body-mb)", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(session: Session, *, max_body: int = 16_000_000, time_limit: float = 30.0,
               workers: int = 1) -> FastAPI:
    """The app serving ``session``: bodies up to ``max_body`` bytes; a request off the event
    loop answered within ``time_limit`` seconds (else 504), ``workers`` of them at once."""
    ident = session.identity
    app = FastAPI(title="attn-forecast", version=__version__,
                  description=f"Forecasts of the attention model at revision {ident['rev']} "
                  f"(horizon {ident['horizon']}, forecasters {', '.join(session.forecasters)}).")
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="forecast")
    app.state.pool = pool

    @app.exception_handler(BadRequest)
    async def refused(request: Request, err: BadRequest) -> Response:
        return _json({"error": str(err)}, err.status)

    @app.exception_handler(Exception)
    async def failed(request: Request, err: Exception) -> Response:    # a bug: one line
        line = (str(err).splitlines() or [""])[0]
        return _json({"error": f"internal error ({type(err).__name__}: {line})"}, 500)

    @app.get("/health")
    async def health() -> Response:
        return _json({"status": "ok"})

    @app.get("/model")
    async def model() -> Response:
        return _json(ident)

    req, answers, components = openapi_components()
    error = {"content": {JSON: {"schema": answers["error"]}}}
    extra = {"requestBody": {"required": True, "content": {JSON: {"schema": req}}},
             "responses": {"200": {"description": "every series' forecast",
                                   "content": {JSON: {"schema": answers["answer"]}}},
                           "400": {"description": "not JSON", **error},
                           "413": {"description": "body too large", **error},
                           "422": {"description": "a field the service cannot use", **error},
                           "504": {"description": "over the time limit", **error}}}

    @app.post("/forecast", openapi_extra=extra, response_class=Response)
    async def forecast(request: Request) -> Response:
        """Forecast every series of the request (see the schema)."""
        job = session.validate(decode(await _body(request, max_body)))
        if job.forecaster == "model" and math.ceil(job.h / session.H) <= INLINE_CALLS:
            return _json(session.answer(job))
        loop = asyncio.get_running_loop()
        try:
            answer = await asyncio.wait_for(loop.run_in_executor(pool, session.answer, job),
                                            time_limit)
        except TimeoutError:
            raise BadRequest(f"forecaster: {job.forecaster} took longer than the service's limit"
                             f" of {time_limit:g} s (serve --time-limit); send fewer series or "
                             "steps a request", 504) from None
        return _json(answer)

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(components)
            app.openapi_schema = schema
        return app.openapi_schema
    app.openapi = openapi
    return app
