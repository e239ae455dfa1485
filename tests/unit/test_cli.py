"""The attn-forecast command: each subcommand's module in its table, and the one-line error
rule for files it cannot read or write."""
from __future__ import annotations

import pytest

from attn_forecast.cli import COMMANDS, cli, run_cli


def _writes(path):
    def main(argv):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return main


def test_a_file_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as ended:
        run_cli(_writes(blocker / "out" / "model.onnx"), [])
    err = capsys.readouterr().err
    assert ended.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: cannot use ")
    assert str(blocker) in err and "Traceback" not in err


def test_a_file_that_can_be_written_is_written(tmp_path):
    run_cli(_writes(tmp_path / "out" / "model.onnx"), [])
    assert (tmp_path / "out" / "model.onnx").read_text() == "x"


def test_an_os_error_without_a_file_is_not_hidden():
    def main(argv):
        raise OSError("no file named")
    with pytest.raises(OSError, match="no file named"):
        run_cli(main, [])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_in_the_table_has_its_main(command):
    import importlib
    module = importlib.import_module(f"attn_forecast.{COMMANDS[command]}")
    assert callable(module.main)


def test_the_params_subcommand_runs_through_the_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTN_FORECAST_NATIVE_CPU", "1")   # cli() pins: this process is pytest
    path = tmp_path / "params.yaml"
    path.write_text("data: {kind: sine}\ntrain: {lr: 0.002}\n")
    cli(["params", "--params", str(path)])
    out = capsys.readouterr().out
    assert f"# {path}: data.kind sine" in out and "train.lr: 0.002" in out.splitlines()


def test_a_wrong_flag_of_a_subcommand_is_its_own_error(capsys, monkeypatch):
    monkeypatch.setenv("ATTN_FORECAST_NATIVE_CPU", "1")
    with pytest.raises(SystemExit) as ended:
        cli(["tune", "--trials", "0"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip() == "error: --trials must be >= 1, got 0"
