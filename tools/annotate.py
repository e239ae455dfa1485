"""params.yaml's "auto: ..." comments, generated from where the values live (the profiles,
competitions/params.yaml, the schema's defaults and what prepare chooses), so they cannot
drift from them: `make docs` rewrites them (docs/refresh.py) and a test holds params.yaml to
the result.

Each key whose value is ``auto`` ends its comment with ``auto: A | B | C``: what it becomes
for synthetic data (A), a CSV (B) and a competition (C, where every subset of
competitions/params.yaml agrees, else "the subset's"); one value where the three agree. The
comment's text before that is the key's description, kept as written; the whole comment is
wrapped again at :data:`WIDTH` columns, continuation lines at :data:`COLUMN`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from attn_forecast.forecasters.names import listed
from attn_forecast.config.profiles import COMPETITION_PARAMS, LATER, competition_settings, profiles
from attn_forecast.config.schema import default

SUBSETS = ("yearly", "quarterly", "monthly", "other")
WIDTH = 99          # the longest line
COLUMN = 24         # where a continuation line's "#" stands
_KEY = re.compile(r"^(?P<indent> *)(?P<name>\w+): (?P<value>\S+)(?P<gap> +)# ?(?P<text>.*)$")
# the keys whose description is generated too (from the registry of forecasters)
DESCRIBED = {"evaluate.baselines": lambda: f"a list of: {listed()}"}
_MORE = re.compile(r"^ {%d}# ?(?P<text>.*)$" % COLUMN)


def _shown(value: Any) -> str:
    """A value as params.yaml writes it (YAML flow style)."""
    return yaml.safe_dump([value], default_flow_style=True, width=10_000).strip()[1:-1]


def _one(key: str, values: dict) -> str:
    v = values.get(key, default(key))
    return LATER.get(key, "chosen from the data").split(", at ")[0] if v == "auto" \
        else _shown(v)


def meaning(key: str, root: str | Path = ".") -> str:
    """``auto: ...`` for ``section.key``: what auto becomes by the data's profile."""
    shown = [_one(key, profiles()["synthetic"]), _one(key, profiles()["real"])]
    subsets = {s: competition_settings(Path(root) / COMPETITION_PARAMS, s) for s in SUBSETS}
    if any(key in got for got in subsets.values()):
        each = {_shown(got.get(key, profiles()["competition"].get(key, default(key))))
                for got in subsets.values()}
        shown.append(each.pop() if len(each) == 1 else "the subset's")
    else:
        shown.append(_one(key, profiles()["competition"]))
    return "auto: " + (shown[0] if len(set(shown)) == 1 else " | ".join(shown))


def _description(text: str) -> str:
    """A comment's text without its generated tail (from its last "auto:" on)."""
    cut = text.rfind("auto:")
    return (text[:cut] if cut >= 0 else text).rstrip(" ;,")


def _wrapped(head: str, text: str) -> list[str]:
    """``head`` (the key and its value) and the comment ``text``: the first line's words up
    to :data:`WIDTH`, the rest on comment lines at :data:`COLUMN`."""
    out, line, width = [], "", WIDTH - len(head) - 2
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line, width = word, WIDTH - COLUMN - 2
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return [f"{head}# {out[0]}"] + [" " * COLUMN + f"# {ln}" for ln in out[1:]]


def annotated(text: str, root: str | Path = ".") -> str:
    """params.yaml's ``text`` with the comment of every key set to auto ending in its
    generated ``auto: ...`` (values and every other line as they were)."""
    lines, out, sections, i = text.split("\n"), [], [], 0
    while i < len(lines):
        line = lines[i]
        m = _KEY.match(line)
        bare = re.match(r"^(?P<indent> *)(?P<name>\w+):(\s|$)", line)
        if bare:
            depth = len(bare["indent"]) // 2
            sections[depth:] = [bare["name"]]
        if not (m and m["value"] == "auto" and len(sections) == 2):  # a section's own key
            out.append(line)
            i += 1
            continue
        parts = [m["text"]]
        i += 1
        while i < len(lines) and _MORE.match(lines[i]) and not _KEY.match(lines[i]):
            parts.append(_MORE.match(lines[i])["text"])
            i += 1
        key = ".".join(sections)
        desc = DESCRIBED[key]() if key in DESCRIBED else _description(" ".join(parts))
        head = f"{m['indent']}{m['name']}: auto"
        head += " " * max(1, COLUMN - len(head))
        out += _wrapped(head, f"{desc}; {meaning(key, root)}" if desc else meaning(key, root))
    return "\n".join(out)
