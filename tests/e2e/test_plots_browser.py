"""End-to-end: the ``dvc plots show`` page renders in a real browser.

Runs where Debian's headless ``chromium`` is installed (``/usr/bin/chromium``) and a local
copy of the three scripts the page loads from the web (vega, vega-lite, vega-embed at DVC's
versions) is found: the folder named by ``VEGA_JS_DIR``, holding ``vega.min.js``,
``vega-lite.min.js`` and ``vega-embed.min.js``, or a ``node_modules`` tree there (``npm
install --legacy-peer-deps vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2``: DVC's page pins
vega 5.20.2, below the others' declared peer range). ``.ci/run`` installs both where it can.
The page's CDN addresses are pointed at that copy (the test machines have no web access), then
Chromium loads it, must report no script error, must draw every plot, and a screenshot is
taken. Each start of Chromium is headless, without the sandbox, the GPU or any background
connection (the machine's network is closed), with a new empty profile. Without a browser or
the scripts it is skipped.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPTS = {"vega": "vega", "vega-lite": "vega-lite", "vega-embed": "vega-embed"}


def _local_script(name: str) -> Path | None:
    root = Path(os.environ.get("VEGA_JS_DIR", "/nonexistent"))
    for cand in (root / f"{name}.min.js", root / "node_modules" / name / "build" /
                 f"{name}.min.js"):
        if cand.is_file():
            return cand
    return None


BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
LOCAL = {name: _local_script(name) for name in SCRIPTS}
pytestmark = [
    pytest.mark.skipif(BROWSER is None, reason="no headless chromium installed"),
    pytest.mark.skipif(not all(LOCAL.values()),
                       reason="no local vega scripts (set VEGA_JS_DIR)"),
]


def _new_profile(tmp_path: Path, name: str) -> str:
    """The flag of a new empty profile folder for one start of Chromium."""
    folder = tmp_path / f"profile-{name}"
    folder.mkdir()
    return f"--user-data-dir={folder}"


def test_plots_page_renders_every_plot_without_script_errors(project, tmp_path):
    proj = project
    proj.run(["dvc", "repro"], timeout=300, check=True)
    proj.run(["dvc", "plots", "show"], timeout=120, check=True)
    page = (proj.path / "dvc_plots" / "index.html").read_text()
    cdn = re.findall(r'<script src="(https://cdn\.jsdelivr\.net/npm/([a-z-]+)@[\d.]+)">', page)
    assert sorted(name for _, name in cdn) == sorted(SCRIPTS), cdn
    for url, name in cdn:
        page = page.replace(url, LOCAL[name].as_uri())
    local = proj.path / "dvc_plots" / "local.html"
    local.write_text(page)
    n_plots = page.count("vegaEmbed(")
    shot = tmp_path / "plots.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=15000"]
    dom = subprocess.run([BROWSER, *flags, _new_profile(tmp_path, "dom"), "--dump-dom",
                          local.as_uri()], capture_output=True, text=True, timeout=120)
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln]
    errors = [ln for ln in console if "Uncaught" in ln or "Error" in ln]
    assert not errors, "\n".join(errors)
    # vega-embed draws each plot into a canvas (or an svg) inside its div
    drawn = dom.stdout.count("<canvas") + dom.stdout.count('class="marks"')
    assert drawn >= n_plots > 0, (drawn, n_plots)
    subprocess.run([BROWSER, *flags, _new_profile(tmp_path, "shot"), f"--screenshot={shot}",
                    "--window-size=1200,2400", local.as_uri()], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000
