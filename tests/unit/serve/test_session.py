"""Unit tests for attn_forecast.serve.session: the service's answer is the forecast command's
(the same history through PyTorch and evaluation/outlook.py) to 1e-6 of the
series' scale, for the model, the blend and a member, within and past the horizon, for a batch
as for each series alone, dated by time stamps or by a start and a frequency, and for a model
that takes histories shorter than its window; every bad request is refused naming its
field."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from attn_forecast.commands.forecast import forecast_series
from attn_forecast.evaluation.outlook import lag_of, outlook, scaler_of
from attn_forecast.model.export import export
from attn_forecast.pipeline.export import manifest
from unit.commands.helpers import H, W, _build, _tiny

pytest.importorskip("onnxruntime")
pytest.importorskip("msgspec")
from attn_forecast.serve.schemas import BadRequest, decode  # noqa: E402
from attn_forecast.serve.session import Session  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LEVELS = [0.025, 0.1, 0.5, 0.9, 0.975]
START = pd.Timestamp("2024-01-01")


def _series(n: int, seed: int) -> np.ndarray:
    t = np.arange(n)
    rs = np.random.default_rng(seed)
    return 50 + 10 * np.sin(2 * np.pi * t / 4) + np.cumsum(rs.normal(0, 1, n))


def _intervals() -> dict:
    margins = [[0.8, 0.3], [1.1, 0.5]]                      # (H, P): 95 % and 80 % per step
    return {"levels": LEVELS, "pairs": [95, 80], "calibrated_on": "the calibration part",
            "unit_key": "naive_error", "season": 4, "lags": {"a": 4},
            "forecasters": {"model": {"how": "calibrated", "margins": margins},
                            "blend": {"how": "calibrated", "margins": margins},
                            "naive": {"how": "calibrated", "margins": margins}}}


BLEND = {"members": ["model", "naive", "seasonal_naive"], "season": 4,
         "series": {"a": [0.5, 0.3, 0.2]}, "mean": {"model": 0.4, "naive": 0.4,
                                                     "seasonal_naive": 0.2}}


def _bundle(tmp_path, model, store, blend=BLEND):
    export(model, store.meta(), tmp_path / "m.onnx", "onnx", tmp_path / "m.json")
    man = manifest(str(tmp_path / "m.onnx"), json.loads((tmp_path / "m.json").read_text()),
                   blend, _intervals())
    return Session(man, (tmp_path / "m.onnx").read_bytes(), {"rev": "test", "commit": None})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small model with a quantile head on two daily series (ids a, b), its session."""
    store = _build([_series(120, 0), _series(90, 1)], ["a", "b"],
                   t=np.concatenate([pd.date_range(START, periods=n, freq="D").to_numpy()
                                     for n in (120, 90)]).astype("datetime64[s]"))
    model = _tiny(quantiles=(0.1, 0.5, 0.9))
    return model, store, _bundle(tmp_path_factory.mktemp("served"), model, store)


def _body(series: list[tuple[str, np.ndarray]], **kw) -> bytes:
    return json.dumps({"series": [{"id": sid, "values": y.tolist(),
                                   "start": str(START.date()), "freq": "D"}
                                  for sid, y in series], **kw}).encode()


def _command(model, store, sid, y, steps, name):
    """What the forecast command makes of history ``y`` (PyTorch, series by series)."""
    meta = store.meta()
    t = pd.date_range(START, periods=len(y), freq="D").to_numpy()
    values, head = forecast_series(model, meta, y, steps, scaler_of(meta, sid, y), t)
    v, q, _, _ = outlook(name, model.settings.quantiles, H, values, head, BLEND, _intervals(),
                         sid, y, steps, lag_of(_intervals(), sid))
    return v, q


@pytest.mark.parametrize("name", ["model", "blend", "naive"])
@pytest.mark.parametrize("steps", [H, 3 * H + 1])
def test_the_answer_is_the_forecast_commands(served, name, steps):
    model, store, session = served
    y = _series(100, 7)
    for sid in ("a", "new"):                    # a training series, and one scaled by itself
        got = session.answer(session.validate(decode(_body([(sid, y)], h=steps,
                                                           forecaster=name))))
        v, q = _command(model, store, sid, y, steps, name)
        one = got["series"][0]
        tol = 1e-6 * np.std(y)
        np.testing.assert_allclose(one["forecast"], v, rtol=0, atol=tol)
        for j, tau in enumerate(LEVELS):
            np.testing.assert_allclose(one["quantiles"][f"{tau:g}"], q[:, j], rtol=0, atol=tol)
        assert list(one["calibrated"]) == [k < H for k in range(steps)]
        assert one["timestamps"][0] == str((START + pd.Timedelta(days=100)).date())


def test_a_batch_answers_each_series_as_alone(served):
    _, _, session = served
    series = [("a", _series(100, 1)), ("b", _series(64, 2)), ("c", _series(81, 3))]
    batch = session.answer(session.validate(decode(_body(series, h=5))))["series"]
    for (sid, y), got in zip(series, batch):
        alone = session.answer(session.validate(decode(_body([(sid, y)], h=5))))["series"][0]
        assert got["id"] == sid
        np.testing.assert_allclose(got["forecast"], alone["forecast"], rtol=1e-6)
        np.testing.assert_allclose(got["quantiles"]["0.9"], alone["quantiles"]["0.9"],
                                   rtol=1e-6)


def test_time_stamps_and_a_start_with_freq_date_the_future_alike(served):
    _, _, session = served
    y = _series(50, 4)
    stamps = pd.date_range("2024-03-01", periods=50, freq="MS").strftime("%Y-%m-%d").tolist()
    a = session.answer(session.validate(decode(json.dumps(
        {"series": [{"id": "x", "values": y.tolist(), "timestamps": stamps}], "h": 3}).encode())))
    b = session.answer(session.validate(decode(json.dumps(
        {"series": [{"id": "x", "values": y.tolist(), "start": "2024-03-01", "freq": "MS"}],
         "h": 3}).encode())))
    assert a["series"][0]["timestamps"] == b["series"][0]["timestamps"] == \
        ["2028-05-01", "2028-06-01", "2028-07-01"]
    np.testing.assert_array_equal(a["series"][0]["forecast"], b["series"][0]["forecast"])
    c = session.answer(session.validate(decode(json.dumps(
        {"series": [{"id": "x", "values": y.tolist(), "start": 10, "freq": 0.5}],
         "h": 2}).encode())))
    assert c["series"][0]["timestamps"] == [35.0, 35.5]


def test_only_the_asked_levels_come_back(served):
    _, _, session = served
    got = session.answer(session.validate(decode(_body([("a", _series(60, 5))],
                                                       quantiles=[0.9, 0.1]))))
    assert got["quantiles"] == [0.1, 0.9] and list(got["series"][0]["quantiles"]) == ["0.1",
                                                                                      "0.9"]


def test_a_model_of_short_contexts_forecasts_a_short_history_as_pytorch_does(tmp_path):
    """A network whose window is longer than the context it needs (the fine-tuned prior's
    case) is exported with ``seen``; a history between the two is padded and masked."""
    store = _build([_series(120, 0)], ["a"], t=pd.date_range(START, periods=120, freq="D")
                   .to_numpy().astype("datetime64[s]"))
    model = _tiny(seed=3, window=2 * W)               # its window: twice the data's
    session = _bundle(tmp_path, model, store, blend=None)
    assert "seen" in session.inputs and session.need == W
    y = _series(W + 3, 9)                             # longer than W, shorter than 2 W
    got = session.answer(session.validate(decode(_body([("a", y)], h=H))))["series"][0]
    v, q = _command(model, store, "a", y, H, "model")
    np.testing.assert_allclose(got["forecast"], v, rtol=0, atol=1e-6 * np.std(y))
    assert session.forecasters == ("model",)


def _refused(session, body) -> BadRequest:
    with pytest.raises(BadRequest) as err:
        session.answer(session.validate(decode(body)))
    return err.value


BAD = {
    "empty series": ({"series": []}, "series: empty"),
    "no id": ({"series": [{"values": [1.0]}]}, "series[0]: Object missing required field `id`"),
    "a null value": ({"series": [{"id": "a", "values": [1.0, None]}]},
                     "series[0].values[1]: Expected `float`, got `null`"),
    "too short": ({"series": [{"id": "a", "values": [1.0] * 5, "start": 0, "freq": 1}]},
                  "series[0].values: 5 values; this model needs at least 10"),
    "no dates": ({"series": [{"id": "a", "values": [1.0] * 20}]}, "series[0]: give timestamps"),
    "stamps out of order": ({"series": [{"id": "a", "values": [1.0] * 12,
                                         "timestamps": list(range(11)) + [3]}]},
                            "series[0].timestamps[11]: 3 is not after 10"),
    "stamps too few": ({"series": [{"id": "a", "values": [1.0] * 12, "timestamps": [1, 2]}]},
                       "series[0].timestamps: 2 stamps for 12 values"),
    "bad freq": ({"series": [{"id": "a", "values": [1.0] * 12, "start": "2024-01-01",
                              "freq": "fortnightly"}]}, "series[0].freq: 'fortnightly'"),
    "start off the freq": ({"series": [{"id": "a", "values": [1.0] * 12, "start": "2024-01-15",
                                        "freq": "MS"}]}, "series[0].start: 2024-01-15 is not"),
    "twice the id": ({"series": [{"id": "a", "values": [1.0] * 12, "start": 0, "freq": 1}] * 2},
                     "series[1].id: 'a' appears twice"),
    "h 0": ({"series": [{"id": "a", "values": [1.0] * 12, "start": 0, "freq": 1}], "h": 0},
            "h: must be from 1 to 1,000"),
    "h too far": ({"series": [{"id": "a", "values": [1.0] * 12, "start": 0, "freq": 1}],
                   "h": 5000}, "h: must be from 1 to 1,000"),
    "unknown level": ({"series": [{"id": "a", "values": [1.0] * 12, "start": 0, "freq": 1}],
                       "quantiles": [0.33]}, "quantiles[0]: 0.33 is not a calibrated level"),
    "unknown forecaster": ({"series": [{"id": "a", "values": [1.0] * 12, "start": 0,
                                        "freq": 1}], "forecaster": "prophet"},
                           "forecaster: 'prophet' is not served; one of blend, model, naive"),
    "unknown field": ({"series": [], "horizon": 3}, "body: Object contains unknown field"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_request_is_refused_naming_its_field(served, case):
    body, start = BAD[case]
    err = _refused(served[2], json.dumps(body).encode())
    assert str(err).startswith(start), str(err)
    assert err.status == 422 and "\n" not in str(err)


def test_a_body_that_is_no_json_is_a_400(served):
    err = _refused(served[2], b'{"series": [')
    assert err.status == 400 and str(err).startswith("body: not valid JSON")


def test_a_refused_request_changes_nothing_the_next_one_gets(served):
    _, _, session = served
    body = _body([("a", _series(70, 6))], h=4)
    before = session.answer(session.validate(decode(body)))
    for case in BAD.values():
        with pytest.raises(BadRequest):
            session.answer(session.validate(decode(json.dumps(case[0]).encode())))
    after = session.answer(session.validate(decode(body)))
    np.testing.assert_array_equal(before["series"][0]["forecast"],
                                  after["series"][0]["forecast"])
