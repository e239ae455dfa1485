"""Reading params: the only reader of params.yaml (and, for a competition's ``auto``, of the
competition pipeline's params). A file is parsed with the safe loader, its ``auto`` values
resolved by the data's profile, every key validated, and the rules that span keys checked,
before any work; anything wrong is one :class:`ParamsError` line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import ParamsError
from .checks import check
from .messages import one_line
from .profiles import resolve, values
from .schema import DataParams, Params


def read_yaml(path: str | Path) -> Any:
    """A YAML file's content (safe loader), as one line for a missing or broken file."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None


def profile(raw: dict, root: str | Path = ".") -> dict:
    """The profile ``auto`` resolves by for raw params: ``{"profile": name, "values": {key:
    value}}`` (of the data section, validated first)."""
    data = raw.get("data", {})
    try:
        DataParams.model_validate(data if isinstance(data, dict) else {})
    except ValidationError as err:
        raise ParamsError(one_line(_located(err, "data"))) from None
    return values(data if isinstance(data, dict) else {}, root)


def _located(err: ValidationError, section: str) -> ValidationError:
    """A section's error as one of the whole params (its keys prefixed by the section)."""
    e = err.errors()[0]
    e = {**e, "loc": (section, *e["loc"])}
    return ValidationError.from_exception_data(err.title, [e])


def resolved(raw: Any, root: str | Path = ".", prof: dict | None = None
             ) -> tuple[Params, dict]:
    """Validate a parsed params mapping with its ``auto`` values resolved by ``prof`` (None:
    the profile of its own ``data`` section, reading competition settings under ``root``);
    returns the params and what ``auto`` became (``key -> value``)."""
    if not isinstance(raw, dict):
        raise ParamsError(f"params.yaml: must be a mapping of sections, got {type(raw).__name__}")
    prof = prof or profile(raw, root)
    resolved, chosen = resolve(raw, prof)
    try:
        p = Params.model_validate(resolved)
    except ValidationError as err:
        raise ParamsError(one_line(err)) from None
    check(p)
    return p, chosen


def parse_params(raw: Any, root: str | Path = ".", prof: dict | None = None) -> Params:
    """The params of a parsed mapping (see :func:`resolved`)."""
    return resolved(raw, root, prof)[0]


def load_params(path: str | Path = "params.yaml", prof: dict | None = None) -> Params:
    """Read and validate a params file, ``auto`` resolved by ``prof`` (a stage after prepare
    passes the profile prepare recorded, so that every stage resolves ``auto`` as prepare
    did; None: the file's own data's)."""
    raw = read_yaml(path) or {}
    return parse_params(raw, Path(path).parent, prof)


def load_with_choices(path: str | Path = "params.yaml") -> tuple[Params, dict, dict]:
    """A params file's params, what its ``auto`` values became and its profile."""
    raw = read_yaml(path) or {}
    prof = profile(raw, Path(path).parent) if isinstance(raw, dict) else None
    p, chosen = resolved(raw, Path(path).parent, prof)
    return p, chosen, prof
