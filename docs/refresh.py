"""Copy the default run's figures and summary into docs/ and the summary into README.md.

Run by `make docs` after `dvc repro`; the DVC outputs themselves stay out of git.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- summary:start -->", "<!-- summary:end -->"


def main() -> None:
    docs = ROOT / "docs"
    for png in sorted((ROOT / "reports" / "figures").glob("*.png")):
        shutil.copy(png, docs / png.name)
    summary = (ROOT / "reports" / "summary.md").read_text()
    (docs / "summary.md").write_text(summary)
    readme = ROOT / "README.md"
    text = readme.read_text()
    block = f"{START}\n{summary.strip()}\n{END}"
    new, n = re.subn(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text,
                     flags=re.S)
    if n != 1:
        raise SystemExit(f"README.md needs one {START} ... {END} block")
    readme.write_text(new)
    print(f"docs: figures and summary copied; README summary refreshed")


if __name__ == "__main__":
    main()
