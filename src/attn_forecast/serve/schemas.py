"""The service's request and answer, as msgspec structs (decoded straight from the body's
bytes, the fastest validating decoder measured for this shape: bench/serve_load.py), and their
JSON Schemas for the OpenAPI page.

    POST /forecast
    {"series": [{"id": "store_1", "values": [12.0, 13.5, ...],
                 "timestamps": ["2024-01-01", ...]}                 # or
                {"id": "store_2", "values": [...], "start": "2024-01-01", "freq": "D"}],
     "h": 14,                       # optional: steps (default: the model's horizon)
     "quantiles": [0.1, 0.9],       # optional: a subset of the calibrated levels
     "forecaster": "blend"}         # optional: blend (default where learned), model, a member

    200 {"model": {...}, "forecaster": "blend", "h": 14, "quantiles": [0.1, 0.9],
         "series": [{"id": "store_1", "timestamps": [...], "forecast": [...],
                     "quantiles": {"0.1": [...], "0.9": [...]}, "calibrated": [true, ...]}]}
    4xx {"error": "series[0].values[3]: Expected `float`, got `null`"}
"""
from __future__ import annotations

import msgspec


class Series(msgspec.Struct, forbid_unknown_fields=True):
    """One series: its id, its values (oldest first) and either every value's time stamp
    (ISO 8601 dates or numbers) or the first one's with the step between them."""
    id: str
    values: list[float]
    timestamps: list[str | float] | None = None
    start: str | float | None = None
    freq: str | float | None = None     # a pandas frequency (D, h, W-SUN, MS, QS, YS...),
    #                                     or the step between numeric time stamps


class ForecastRequest(msgspec.Struct, forbid_unknown_fields=True):
    series: list[Series]
    h: int | None = None
    quantiles: list[float] | None = None
    forecaster: str | None = None


class SeriesForecast(msgspec.Struct):
    id: str
    timestamps: list[str | float]
    forecast: list[float]
    quantiles: dict[str, list[float]]
    calibrated: list[bool]
    blend: str | None = None            # the blend's members and weights used for this series
    warnings: list[str] | None = None


class ForecastAnswer(msgspec.Struct):
    model: dict
    forecaster: str
    h: int
    quantiles: list[float]
    how: str                            # how the quantiles were made
    series: list[SeriesForecast]


class Error(msgspec.Struct):
    error: str


DECODER = msgspec.json.Decoder(ForecastRequest)


class BadRequest(Exception):
    """A request the service cannot answer: its status and one line naming the field."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def decode(body: bytes) -> ForecastRequest:
    """The request in ``body``; a :class:`BadRequest` naming the field for anything else."""
    try:
        return DECODER.decode(body)
    except msgspec.ValidationError as err:
        text = str(err)
        what, _, where = text.partition(" - at `$")
        where = where.rstrip("`").lstrip(".")
        raise BadRequest(f"{where or 'body'}: {what}") from None
    except msgspec.DecodeError as err:
        raise BadRequest(f"body: not valid JSON ({err})", 400) from None


def openapi_components() -> tuple[dict, dict, dict]:
    """The request's and answer's schemas as OpenAPI references, and every component."""
    (req, ans, err), components = msgspec.json.schema_components(
        [ForecastRequest, ForecastAnswer, Error], ref_template="#/components/schemas/{name}")
    return req, {"answer": ans, "error": err}, components
