"""Copy the default run's summary into docs/summary.md and README.md, make every generated
block of the docs anew from the committed files it quotes (tools/docs.py:
the M3 leaderboard's figures, the published ones beside), and params.yaml's "auto: ..."
comments from the profiles, competitions/params.yaml and the schema
(tools/annotate.py).

Run by `make docs` after `dvc repro` (the figures are committed where the pipeline writes them,
reports/figures/, and the README shows them from there).
"""
from __future__ import annotations

import re
from pathlib import Path

import sys

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]     # the package and the project's tools
from tools.annotate import annotated  # noqa: E402
from tools.docs import PAGES, refreshed  # noqa: E402
START, END = "<!-- summary:start -->", "<!-- summary:end -->"


def main() -> None:
    docs = ROOT / "docs"
    # the paths dvc.yaml declares (its vars)
    paths = next(v["p"] for v in yaml.safe_load((ROOT / "dvc.yaml").read_text())["vars"]
                 if "p" in v)
    summary = (ROOT / paths["summary"]).read_text()
    (docs / "summary.md").write_text(summary)
    readme = ROOT / "README.md"
    text = readme.read_text()
    block = f"{START}\n{summary.strip()}\n{END}"
    new, n = re.subn(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text,
                     flags=re.S)
    if n != 1:
        raise SystemExit(f"README.md needs one {START} ... {END} block")
    readme.write_text(new)
    for page in PAGES:
        path = ROOT / page
        path.write_text(refreshed(path.read_text(), ROOT))
    params = ROOT / "params.yaml"
    params.write_text(annotated(params.read_text(), ROOT))
    print(f"docs: summary copied; README summary, the generated blocks of "
          f"{', '.join(PAGES)} and params.yaml's auto comments refreshed")


if __name__ == "__main__":
    main()
