"""attn_forecast.stage: every stage script starts and ends the same way, the CPU pinned before
numpy loads, its errors one line."""
from __future__ import annotations

import ast
import sys

import pytest

from attn_forecast.errors import SettingError, UserInputError
from conftest import ROOT

STAGES = sorted((ROOT / "stages").glob("*.py"))


def _imports(path) -> list[str]:
    """The top-level modules a script imports, in order (``from x import y``: ``x``; ``from
    attn_forecast import stage``: ``attn_forecast.stage``)."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            out += [f"{node.module}.{a.name}" if node.module == "attn_forecast" else
                    node.module for a in node.names]
    return out


@pytest.mark.parametrize("path", STAGES, ids=[p.stem for p in STAGES])
def test_a_stage_imports_the_launcher_before_anything_that_loads_numpy(path):
    mods = _imports(path)
    assert "attn_forecast.stage" in mods, f"{path.name} does not import attn_forecast.stage"
    before = mods[:mods.index("attn_forecast.stage")]
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in before), \
        f"{path.name} imports {before} before attn_forecast.stage (the CPU pin)"


@pytest.mark.parametrize("path", STAGES, ids=[p.stem for p in STAGES])
def test_a_stage_starts_and_ends_through_the_launcher(path):
    text = path.read_text()
    assert "@stage.main\ndef main(" in text and 'if __name__ == "__main__":\n    stage.run(main)' \
        in text
    assert "noqa" not in text and "_cpu" not in text


def test_a_stages_errors_name_params_keys():
    from attn_forecast import stage    # (here, not at collection: it pins this process)

    @stage.main
    def main(argv=None):
        raise SettingError("<window> must be >= 2, got 1")
    with pytest.raises(SettingError, match=r"^prepare\.window must be >= 2, got 1$"):
        main()


@pytest.mark.parametrize("fail, code, line", [
    (UserInputError("data.csv_path: no such file x.csv"), 2,
     "error: data.csv_path: no such file x.csv"),
    (IsADirectoryError(21, "Is a directory", "reports/metrics.json"), 2,
     "error: cannot use reports/metrics.json: Is a directory"),
    (KeyboardInterrupt(), 130, "interrupted; nothing written"),
])
def test_a_stage_ends_in_one_line_and_its_exit_status(capsys, fail, code, line):
    from attn_forecast import stage

    def main(argv=None):
        raise fail
    with pytest.raises(SystemExit) as done:
        stage.run(main)
    assert done.value.code == code
    assert capsys.readouterr().err.strip() == line


def test_an_os_error_without_a_file_is_a_bug_and_keeps_its_traceback():
    from attn_forecast import stage

    def main(argv=None):
        raise OSError("the disk went away")
    with pytest.raises(OSError, match="the disk went away"):
        stage.run(main)
