"""The command's one-line error rule for files it cannot read or write."""
from __future__ import annotations

import pytest

from attn_forecast.cli import run_cli


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
