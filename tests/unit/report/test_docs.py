"""The figures the docs quote are the committed files' (report/docs.py): every generated block
of every page equals what its committed file makes now (run `make docs` after a change)."""
from __future__ import annotations

import pytest

from attn_forecast.report.docs import BLOCK, BLOCKS, PAGES, refreshed
from conftest import ROOT


@pytest.mark.parametrize("page", PAGES)
def test_every_generated_block_agrees_with_its_committed_file(page):
    text = (ROOT / page).read_text()
    assert refreshed(text, ROOT) == text, f"{page} is stale: run `make docs`"


def test_the_m3_figures_are_generated_where_the_docs_quote_them():
    used = {m.group(2) for page in PAGES for m in BLOCK.finditer((ROOT / page).read_text())}
    assert {"m3-points", "m3-intervals", "m3-targets"} <= used <= set(BLOCKS)


def test_a_block_of_an_unknown_name_is_refused():
    with pytest.raises(KeyError, match="no generated block named 'm3-typo'"):
        refreshed("<!-- generated: m3-typo -->\nold\n<!-- /generated -->\n", ROOT)


def test_a_changed_figure_in_a_block_is_found():
    name = next(iter(BLOCKS))
    text = f"<!-- generated: {name} -->\n| stale | 1.00 |\n<!-- /generated -->\n"
    assert refreshed(text, ROOT) != text
