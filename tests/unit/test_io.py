"""Unit tests for attn_forecast.io: committed JSON is always valid JSON (a score that does not
exist is null, never NaN), and an error writing a file names that file, never the temporary
one it is written through."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attn_forecast.io import atomic_path, write_json


def test_a_non_finite_number_is_written_as_null(tmp_path):
    out = tmp_path / "m.json"
    write_json(out, {"crps": float("nan"), "w": [1.0, float("inf"), np.float64("nan")],
                     "ok": 0.5, "n": {"deep": -float("inf")}})
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"crps": None, "w": [1.0, None, None], "ok": 0.5,
                                "n": {"deep": None}}


def test_a_write_error_names_the_file_asked_for(tmp_path):
    folder = tmp_path / "out.csv"
    folder.mkdir()                    # a folder where a file is asked for
    with pytest.raises(OSError) as err:
        with atomic_path(folder) as tmp:
            tmp.write_text("x")
    assert err.value.filename == str(folder)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.csv.")]


def test_sha256_tree_sees_an_edit_a_new_file_and_a_rename_but_not_other_files(tmp_path):
    from attn_forecast.io import sha256_tree
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "notes.txt").write_text("not code")
    key = sha256_tree(tmp_path / "pkg")
    assert key == sha256_tree(tmp_path / "pkg")
    (tmp_path / "pkg" / "notes.txt").write_text("other notes")
    assert sha256_tree(tmp_path / "pkg") == key
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    edited = sha256_tree(tmp_path / "pkg")
    assert edited != key
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "sub" / "b.py").write_text("")
    added = sha256_tree(tmp_path / "pkg")
    assert added != edited
    (tmp_path / "pkg" / "sub" / "b.py").rename(tmp_path / "pkg" / "sub" / "c.py")
    assert sha256_tree(tmp_path / "pkg") != added
