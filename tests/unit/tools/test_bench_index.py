"""bench/README.md's index says what each benchmark holds: every script of bench/ has a row,
and every committed result, generated block and section a row names is there."""
from __future__ import annotations

import re
import subprocess

from conftest import ROOT

BENCH = ROOT / "bench"
LINK = re.compile(r"\[[^\]]*\]\(([^)#]*)#([^)]+)\)")
BLOCK = re.compile(r"block `([\w-]+)`(?: in \[[^\]]*\]\(([^)]+)\))?")


def _rows() -> list[list[str]]:
    lines = (BENCH / "README.md").read_text().splitlines()
    start = lines.index("| script | what it prints | compared against | committed result | "
                        "shown in |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def _slug(heading: str) -> str:
    """A Markdown heading's anchor, as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in path.read_text().splitlines()
            if line.startswith("#")}


def test_every_script_has_a_row_and_every_row_a_script():
    scripts = {p.name for p in BENCH.glob("*.py")} - {"common.py"}
    listed = {re.match(r"`([\w]+\.py)", r[0]).group(1) for r in _rows()}
    assert listed == scripts


def test_every_result_block_and_section_named_is_there():
    tracked = set(subprocess.run(["git", "ls-files", "bench/results"], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split())
    missing = []
    for row in _rows():
        assert len(row) == 5, row
        for path in re.findall(r"`(bench/results/[^`]+)`", row[3]):
            if not any(t == path or t.startswith(path.rstrip("/") + "/") for t in tracked):
                missing.append(path)
        assert row[4], f"{row[0]}: shown nowhere"
        for page, anchor in LINK.findall(row[4]):
            if anchor not in _anchors((BENCH / page) if page else BENCH / "README.md"):
                missing.append(f"{page or 'bench/README.md'}#{anchor}")
        for name, page in BLOCK.findall(row[4]):
            text = ((BENCH / page) if page else BENCH / "README.md").read_text()
            if f"<!-- generated: {name} -->" not in text:
                missing.append(f"{page or 'bench/README.md'}: block {name}")
    assert missing == []


def test_the_check_sees_a_missing_section():
    assert "no-such-section" not in _anchors(BENCH / "README.md")
    assert _slug("Threads and CPU pins (`python bench/threads.py`, 2-core AMD EPYC)") == \
        "threads-and-cpu-pins-python-benchthreadspy-2-core-amd-epyc"
