"""The files the forecast command reads beside the checkpoint: the evaluate stage's blend
(models/blend.json) and intervals (models/intervals.json); what it does with them is
evaluation/outlook.py's."""
from __future__ import annotations

from pathlib import Path

from ..errors import UserInputError
from ..io import read_json


# what each file the evaluate stage writes beside the checkpoint holds at least
KEYS = {"blend.json": ("members", "season", "mean", "series"),
        "intervals.json": ("levels", "calibrated_on", "forecasters")}


def read_beside(path: str | None, model_path: str, name: str, flag: str) -> dict | None:
    """A file the evaluate stage wrote beside the checkpoint (``name``), or ``path``; None
    where there is none ('' asks for none)."""
    if path == "":
        return None
    file = Path(path) if path else Path(model_path).with_name(name)
    if not file.is_file():
        if path:
            raise UserInputError(f"{flag}: file not found: {path}")
        return None
    try:
        got = read_json(file)
    except ValueError as err:
        raise UserInputError(f"{flag}: {file} is not the evaluate stage's JSON ({err}); run "
                             "`dvc repro` to write it again, or pass another") from None
    need = KEYS[name]
    if not isinstance(got, dict) or not set(need) <= set(got):
        other = next((n for n, keys in KEYS.items() if n != name and isinstance(got, dict)
                      and set(keys) <= set(got)), None)
        holds = f"the evaluate stage's {other}" if other else \
            f"a JSON file without {', '.join(k for k in need if k not in (got or {}))}"
        raise UserInputError(f"{flag}: {file} is {holds}, not its {name} ({', '.join(need)}); "
                             f"pass the {name} file, or '' for none")
    return got


def read_blend(path: str | None, model_path: str) -> dict | None:
    """The blend file (None: forecast with the model alone): ``path``, or blend.json beside
    the checkpoint when there is one; a file without members (evaluate.blend []) is none."""
    blend = read_beside(path, model_path, "blend.json", "--blend")
    if blend is not None and not isinstance(blend.get("members", []), list):
        raise UserInputError("--blend: the file's members must be a list")
    return blend if blend and blend.get("members") else None
