"""Unit tests for attn_forecast.params: defaults and one-line error messages."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from attn_forecast.errors import UserInputError
from tools.worked_example import EXECUTION_KEYS, leaves, nested, source_settings
from attn_forecast.config.load import load_params, parse_params
from attn_forecast.config.schema import Params
from attn_forecast.errors import ParamsError

REPO = Path(__file__).resolve().parents[3]


def _msg(raw) -> str:
    with pytest.raises(ParamsError) as info:
        parse_params(raw)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("params.yaml: ")
    return msg


# The worked example of SEEDS.md, setting by setting (the keys it does not name keep the
# values its code implies: no validation part, no transform, no augmentation...).
SOURCE = {
    "data.kind": "sine", "data.n_points": 300, "data.noise_std": 0.15, "data.seed": 42,
    "prepare.window": 10, "prepare.horizon": 1, "prepare.test_frac": 0.2,
    "prepare.val_frac": 0.0, "prepare.scaler": "none", "prepare.transform": "none",
    "model.kind": "attention", "model.d_model": 32, "model.ffn_dim": 64, "model.n_heads": 1,
    "model.n_layers": 1, "model.positional": "sinusoidal", "model.residual": False,
    "model.pooling": "last", "model.dropout": 0.0,
    "train.seed": 42, "train.epochs": 300, "train.lr": 0.005, "train.batch_size": 0,
    "train.optimizer": "adam", "train.weight_decay": 0.0, "train.loss": "mse",
    "train.scheduler": "none", "train.warmup_epochs": 0, "train.grad_clip": 0.0,
    "train.patience": 0, "train.augment_noise": 0.0, "train.augment_scale": 0.0,
    "train.augment_shift": 0.0, "train.precision": "fp32", "train.compile": False,
    "train.nproc": 1, "train.ensemble": 1,
}


def test_the_schema_defaults_are_the_params_file_values():
    """One set of defaults: params.yaml's values are the schema's, or auto where a profile
    (or the data) may choose (whose value for the built-in sine is then the schema's own);
    deleting an auto key from params.yaml changes nothing, for any profile."""
    import yaml

    from attn_forecast.config.load import parse_params
    from attn_forecast.config.profiles import profiles
    in_file = yaml.safe_load((REPO / "params.yaml").read_text())
    defaults = Params().model_dump()
    from attn_forecast.config.profiles import COMPETITION_PARAMS, competition_settings
    chooses = {k for prof in profiles().values() for k in prof} | {
        k for s in ("yearly", "quarterly", "monthly", "other")
        for k in competition_settings(REPO / COMPETITION_PARAMS, s)}
    assert set(in_file) == set(defaults)
    for section, values in in_file.items():
        assert set(values) == set(defaults[section]), section
        for key, value in values.items():
            if value == "auto" and defaults[section][key] != "auto":
                assert f"{section}.{key}" in chooses, f"{section}.{key} is auto for no profile"
                continue
            if isinstance(value, dict):   # pretrain.model, pretrain.train: the keys given
                for k, v in value.items():
                    assert defaults[section][key][k] == v, f"{section}.{key}.{k}"
                continue
            assert defaults[section][key] == value, f"{section}.{key}"
    assert parse_params(in_file) == Params()       # the built-in sine: the schema's defaults
    for kind in ("sine", "csv", "competition"):
        raw = {**in_file, "data": {**in_file["data"], "kind": kind}}
        whole = parse_params(raw)
        for section, values in in_file.items():
            for key in [k for k, v in values.items() if v == "auto"]:
                less = {s: {k: v for k, v in vals.items() if (s, k) != (section, key)}
                        for s, vals in raw.items()}
                assert parse_params(less) == whole, (kind, f"{section}.{key}")


def test_source_baseline_sets_every_source_setting():
    got = source_settings()
    for key, value in SOURCE.items():
        assert got[key] == value, key
    # every key of every section, except how the run executes on this machine (and the
    # prior's, which the worked example does not use)
    assert set(got) == set(leaves({sec: vals for sec, vals in Params().model_dump().items()
                                   if sec != "pretrain"})) - set(EXECUTION_KEYS)
    assert "peers.nf_nhits.max_steps" in got     # a nested section, down to its own keys
    parse_params(nested(got))


def test_repo_params_file_is_valid():
    p = load_params(REPO / "params.yaml")
    assert isinstance(p, Params)


def test_sections_partially_given_keep_other_defaults():
    p = parse_params({"prepare": {"window": 24}, "train": {"lr": 0.01}})
    assert p.prepare.window == 24 and p.prepare.horizon == 1
    assert p.train.lr == 0.01 and p.train.epochs == 300


def test_params_are_frozen():
    p = parse_params({})
    with pytest.raises(Exception):
        p.prepare.window = 3


def test_params_error_is_user_input_error():
    assert issubclass(ParamsError, UserInputError)


@pytest.mark.parametrize("raw,parts", [
    ({"prepare": {"window": 0}}, ["prepare.window", ">= 1", "got 0", "integer"]),
    ({"prepare": {"horizon": -2}}, ["prepare.horizon", ">= 1", "got -2"]),
    ({"prepare": {"test_frac": 0}}, ["prepare.test_frac", "> 0", "got 0"]),
    ({"prepare": {"test_frac": 1.0}}, ["prepare.test_frac", "< 1", "got 1.0"]),
    ({"train": {"gamma": 1.5}}, ["train.gamma", "<= 1", "got 1.5"]),
    ({"render": {"dpi": 1000}}, ["render.dpi", "<= 600", "got 1000"]),
    ({"train": {"lr": -0.1}}, ["train.lr", "> 0", "got -0.1"]),
    ({"prepare": {"wndow": 5}}, ["unknown key prepare.wndow", "window", "horizon"]),
    ({"trian": {"lr": 0.1}}, ["unknown key trian", "train", "prepare"]),
    ({"model": {"kind": "gru"}}, ["model.kind", "'attention'", "'lstm'", "'gru'"]),
    ({"prepare": {"scaler": "robust"}}, ["prepare.scaler", "'zscore'", "'minmax'", "'none'",
                                         "'robust'"]),
    ({"model": {"d_model": 30, "n_heads": 4}}, ["model.d_model", "model.n_heads", "30", "4",
                                                "divisible"]),
    ({"prepare": {"test_frac": 0.5, "val_frac": 0.5}}, ["prepare.test_frac", "prepare.val_frac",
                                                        "< 1"]),
    ({"prepare": {"test_frac": 0.7, "val_frac": 0.4}}, ["prepare.test_frac", "prepare.val_frac"]),
    ({"prepare": {"window": True}}, ["prepare.window", "integer", "True"]),
    ({"train": {"epochs": False}}, ["train.epochs", "integer", "False"]),
    ({"train": {"lr": True}}, ["train.lr", "number", "True"]),
    ({"prepare": {"window": 2.5}}, ["prepare.window", "integer", "2.5"]),
    ({"prepare": {"window": "10"}}, ["prepare.window", "integer", "'10'"]),
    ({"train": {"lr": "fast"}}, ["train.lr", "number", "'fast'"]),
    ({"model": {"residual": 1}}, ["model.residual", "true or false", "1"]),
    ({"train": None}, ["train", "mapping"]),
    ({"data": {"kind": "csv", "csv_path": ""}}, ["data.csv_path"]),
    ({"model": {"d_model": 31}}, ["model.d_model", "even", "31"]),
    ({"data": {"n_points": 11}}, ["data.n_points", "62", "got 11"]),
    ({"prepare": {"test_frac": 0.5, "cal_frac": 0.5}}, ["prepare.cal_frac", "< 1"]),
    ({"evaluate": {"conformal": "split"}, "prepare": {"cal_frac": 0.0}},
     ["evaluate.conformal", "prepare.cal_frac", "neither trained on nor was selected on"]),
    ({"evaluate": {"quantiles": [0.9, 0.5, 0.1]}}, ["evaluate.quantiles", "increasing", "0.9"]),
    ({"evaluate": {"quantiles": [0.1, 0.5, 0.5, 0.9]}}, ["evaluate.quantiles", "repeated"]),
    ({"evaluate": {"quantiles": [0.1, 0.9]}}, ["evaluate.quantiles", "0.5"]),
    ({"evaluate": {"quantiles": [0, 0.5, 1]}}, ["evaluate.quantiles", "0"]),
    ({"evaluate": {"quantiles": [0.5, 1.5]}}, ["evaluate.quantiles", "1"]),
    ({"data": {"csv_sep": ";;"}}, ["data.csv_sep", "one character"]),
    ({"data": {"time_gaps": "fill"}}, ["data.time_gaps", "'error'", "'allow'"]),
])
def test_error_messages_are_one_line_naming_the_key(raw, parts):
    msg = _msg(raw)
    for part in parts:
        assert part in msg, (part, msg)


def test_odd_d_model_fine_without_sinusoidal_positions():
    p = parse_params({"model": {"d_model": 31, "positional": "learned"}})
    assert p.model.d_model == 31
    parse_params({"model": {"kind": "lstm", "d_model": 31}})


def test_top_level_not_a_mapping():
    msg = _msg([1, 2])
    assert "mapping" in msg


def test_load_params_missing_file(tmp_path):
    with pytest.raises(ParamsError, match="not found"):
        load_params(tmp_path / "nope.yaml")


def test_load_params_invalid_yaml(tmp_path):
    f = tmp_path / "params.yaml"
    f.write_text("prepare:\n  window: [1, 2\n  horizon: 3\n")
    with pytest.raises(ParamsError) as info:
        load_params(f)
    msg = str(info.value)
    assert "not valid YAML" in msg and "\n" not in msg and "line" in msg


def test_load_params_empty_file_gives_defaults(tmp_path):
    f = tmp_path / "params.yaml"
    f.write_text("")
    assert load_params(f) == Params()


def test_load_params_reads_values_and_errors(tmp_path):
    f = tmp_path / "params.yaml"
    f.write_text("prepare:\n  window: 20\n  horizon: 3\ntrain:\n  lr: 1e-3\n")
    p = load_params(f)
    assert (p.prepare.window, p.prepare.horizon, p.train.lr) == (20, 3, 0.001)
    f.write_text("model:\n  residual: yes\n  n_layers: 0\n")
    with pytest.raises(ParamsError, match="model.n_layers"):
        load_params(f)


@pytest.mark.parametrize("text", ["train:\n  lr: .inf\n", "data:\n  trend: .nan\n",
                                  "data:\n  noise_std: .inf\n"])
def test_non_finite_numbers_rejected(tmp_path, text):
    f = tmp_path / "params.yaml"
    f.write_text(text)
    with pytest.raises(ParamsError):
        load_params(f)


def test_interpolate_is_refused_with_the_reason():
    msg = _msg({"data": {"missing": "interpolate"}})
    assert "'error' | 'ffill' | 'drop'" in msg and "next value" in msg and "\n" not in msg


@pytest.mark.parametrize("typed", ["\\t", "tab"])
def test_a_tab_separator_may_be_typed_as_users_type_it(typed):
    """-S 'data.csv_sep="\\t"' delivers a backslash and a t: it means a tab."""
    assert parse_params({"data": {"csv_sep": typed}}).data.csv_sep == "\t"


def test_conformal_with_a_calibration_part_is_accepted():
    p = parse_params({"prepare": {"cal_frac": 0.1}, "evaluate": {"conformal": "split"}})
    assert p.prepare.cal_frac == 0.1


def test_params_resolved_shows_what_every_auto_became_and_why(tmp_path, capsys):
    from attn_forecast.commands.params import main as params_main
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"data": {"kind": "csv", "csv_path": "x.csv"},
                                    "train": {"lr": "auto", "epochs": 7},
                                    "prepare": {"window": "auto", "val_frac": "auto"},
                                    "model": {"d_model": "auto"}}))
    params_main(["--params", str(path), "--resolved"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"# {path}: data.kind csv, profile real")
    assert "train.lr: 0.0005 (auto: the real profile)" in out
    assert "train.epochs: 7" in out                                     # set: as given
    assert "model.d_model: 32 (auto: the schema's default)" in out
    assert "prepare.window: auto (two seasons of the training parts' season, at prepare)" \
        in out
    assert "prepare.val_frac: 0.1 (auto: the real profile)" in out


@pytest.mark.parametrize("name", ["other.yaml", "params.yaml"])
@pytest.mark.parametrize("values,rest", [
    ({"render": {"dpi": 10}}, "render.dpi must be an integer >= 50 and <= 600, got 10"),  # a key
    ({"model": {"d_model": 30, "n_heads": 4}},                                        # a rule
     "model.d_model (30) must be divisible by model.n_heads (4)")])
def test_a_refused_value_is_named_in_the_file_it_is_in(tmp_path, capsys, name, values, rest):
    """`attn-forecast params --params other.yaml` (and any reader of that file) names
    other.yaml, not params.yaml, in its one line."""
    from attn_forecast.commands.params import main as params_main
    from attn_forecast.config.load import load_params
    path = tmp_path / name
    path.write_text(yaml.safe_dump(values))
    where = str(path) if name != "params.yaml" else "params.yaml"
    for read in (lambda: load_params(path), lambda: params_main(["--params", str(path)])):
        with pytest.raises(ParamsError) as info:
            read()
        assert str(info.value).startswith(f"{where}: {rest}")


def test_every_competition_setting_is_auto_in_params_yaml_so_a_user_run_takes_it():
    """`dvc exp run -S data.kind=competition -S data.subset=monthly` on params.yaml runs what
    the competition pipeline runs: every key its settings name is auto in params.yaml."""
    from attn_forecast.config.load import parse_params
    from attn_forecast.config.profiles import COMPETITION_PARAMS, competition_settings
    from attn_forecast.pipeline.competition import subset_params
    in_file = yaml.safe_load((REPO / "params.yaml").read_text())
    for subset in ("yearly", "quarterly", "monthly", "other"):
        for key in competition_settings(REPO / COMPETITION_PARAMS, subset):
            section, name = key.split(".")
            assert in_file[section][name] == "auto", key
        user = parse_params({**in_file, "data": {**in_file["data"], "kind": "competition",
                                                 "subset": subset}}, REPO)
        pipeline, _ = subset_params(REPO / "competitions" / "params.yaml", subset)
        assert user.model_dump(exclude={"data"}) == pipeline.model_dump(exclude={"data"})
