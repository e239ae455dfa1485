"""End-to-end: docs/your-data.md's first example, as written, on a new CSV (in a copy of the
project with the tiny config): a new file git does not hold is refused by a --temp experiment
with the reason, and the example's own lines (copy, commit, run) work."""
from __future__ import annotations

import re

from conftest import ROOT


def first_example() -> list[str]:
    text = (ROOT / "docs" / "your-data.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    lines = [ln.split(" #")[0].strip() for ln in block.replace("\\\n", " ").splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("source ")]


def test_the_first_example_works_on_a_new_file_and_an_uncommitted_one_says_why(
        project_factory):
    proj = project_factory("yourdata")
    lines = first_example()
    copy, commit, run = lines[0], lines[1], lines[2]
    assert copy.startswith("cp ") and commit.startswith("git add") and "--temp" in run
    assert proj.run(copy).returncode == 0
    res = proj.run(run, timeout=300)            # before the commit: refused, with the reason
    assert res.returncode != 0
    err = res.stdout + res.stderr
    assert "data.csv_path: data/external/my_sales.csv is in your workspace but not in git" \
        in err and "Traceback" not in err, err
    for line in (commit, run):                  # the example as written
        res = proj.run(line, timeout=300)
        assert res.returncode == 0, f"{line}\n{res.stdout}\n{res.stderr}"
    shown = proj.run(["dvc", "exp", "show", "--json"], check=True).stdout
    assert "my_sales.csv" in shown
