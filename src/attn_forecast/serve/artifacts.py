"""What the service serves: the export stage's manifest and the ONNX model it names, read from
the workspace or from a git revision or DVC experiment (``dvc.api``), each file's bytes checked
against its dvc.lock entry at that revision, so what is served is always a versioned artifact;
and the model's identity (``GET /model``).

    models/model.pt       the checkpoint (--model)          train stage
    models/model.onnx     the network, for onnxruntime      train stage
    models/serve.json     the manifest beside the checkpoint export stage

A file whose MD5 differs from its lock entry (a run not committed with ``dvc commit``, an edit
by hand, a file that is not the pipeline's) is refused, as is one without an entry.
"""
from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from ..errors import UserInputError
from ..io import dotted

MANIFEST = "serve.json"   # the export stage's manifest, beside the checkpoint
FORMAT = 1                # the manifest layout this service reads (pipeline/export.py)


@dataclass
class Bundle:
    manifest: dict
    onnx: bytes
    identity: dict


def _reader(repo: Path, rev: str | None):
    """A function reading a path of the repository (relative to its root) as bytes: from the
    workspace, or at ``rev`` through dvc.api (git-tracked files and DVC outputs alike)."""
    if rev is None:
        def read(path: str) -> bytes:
            try:
                return (repo / path).read_bytes()
            except FileNotFoundError:
                raise UserInputError(f"{path}: file not found in {repo}") from None
        return read
    import dvc.api
    from dvc.exceptions import DvcException

    def read_rev(path: str) -> bytes:
        try:
            return dvc.api.read(path, repo=str(repo), rev=rev, mode="rb")
        except (DvcException, FileNotFoundError) as err:   # an unknown revision, a missing path
            line = (str(err).splitlines() or [type(err).__name__])[0]
            raise UserInputError(f"--rev {rev}: cannot read {path} ({line})") from None
    return read_rev


def _lock_entries(lock: dict) -> dict[str, tuple[str, str]]:
    """Every output of the lock file: path -> (md5, the stage that writes it)."""
    out = {}
    for name, stage in (lock.get("stages") or {}).items():
        for o in stage.get("outs") or []:
            out[o["path"]] = (o.get("md5"), name)
    return out


def _check(path: str, data: bytes, entries: dict, where: str) -> str:
    md5 = hashlib.md5(data).hexdigest()
    if path not in entries:
        raise UserInputError(f"{path} has no entry in {where}'s dvc.lock: the service serves only "
                             "the pipeline's versioned artifacts (run `dvc repro export`)")
    want, stage = entries[path]
    if md5 != want:
        raise UserInputError(f"{path} does not match its dvc.lock entry at {where} (md5 {md5}, "
                             f"the {stage} stage's lock: {want}): run `dvc repro` (or "
                             "`dvc checkout`) first, so that what is served is versioned")
    return md5


def ancestors_params(lock: dict, stage: str) -> dict:
    """The params of ``stage`` and of every stage upstream of it in the lock (a dependency on
    another stage's output, or on a folder holding one): the settings that made it."""
    stages = lock.get("stages") or {}
    writer = {o["path"]: name for name, s in stages.items() for o in s.get("outs") or []}

    def upstream(path: str) -> list[str]:   # the stages writing it, or inside or above it
        p = PurePosixPath(path)
        return [w for o, w in writer.items()
                if (q := PurePosixPath(o)) == p or p in q.parents or q in p.parents]
    seen, todo, params = set(), [stage], {}
    while todo:
        name = todo.pop()
        if name in seen or name not in stages:
            continue
        seen.add(name)
        for file, values in (stages[name].get("params") or {}).items():
            prefix = "" if file == "params.yaml" else f"{file}:"
            params.update({prefix + k: v for k, v in dotted(values).items()})
        for d in stages[name].get("deps") or []:
            todo += upstream(d["path"])
    return dict(sorted(params.items()))


def _commit(repo: Path, rev: str | None) -> tuple[str | None, bool | None]:
    """The git commit served (HEAD for the workspace) and, for the workspace, whether its
    dvc.lock is the one HEAD holds (False: a run not committed yet)."""
    if rev is not None:
        from dvc.repo import Repo
        from dvc.scm import resolve_rev
        r = Repo(str(repo))
        try:
            return resolve_rev(r.scm, rev), None
        finally:
            r.close()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                              text=True, check=True).stdout.strip()
        same = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "dvc.lock"], cwd=repo,
                              capture_output=True).returncode == 0
        return head, same
    except (OSError, subprocess.CalledProcessError):
        return None, None


def manifest_path(model: str) -> str:
    """The manifest of checkpoint ``model`` (serve.json beside it), or ``model`` itself where
    it names a manifest."""
    p = PurePosixPath(Path(model).as_posix())
    return str(p) if p.suffix == ".json" else str(p.with_name(MANIFEST))


def load(model: str, rev: str | None = None, repo: str | Path = ".") -> Bundle:
    """The served bundle of checkpoint ``model`` (a path relative to the repository ``repo``)
    in the workspace, or at ``rev`` (a commit, branch, tag or DVC experiment), checked against
    the lock at the same place."""
    repo = Path(repo).resolve()
    read = _reader(repo, rev)
    where = f"revision {rev}" if rev else "the workspace"
    try:
        lock = yaml.safe_load(read("dvc.lock")) or {}
    except UserInputError:
        raise UserInputError(f"no dvc.lock in {where} of {repo}: serve a model the pipeline "
                             "made (run `dvc repro` there)") from None
    entries = _lock_entries(lock)
    path = manifest_path(model)
    try:
        raw = read(path)
    except UserInputError:
        raise UserInputError(f"--model {model}: no {path} in {where}: the export stage writes "
                             "it beside the checkpoint (run `dvc repro export`)") from None
    md5s = {path: _check(path, raw, entries, where)}
    import json
    try:
        manifest = json.loads(raw)
    except ValueError as err:
        raise UserInputError(f"{path} is not the export stage's JSON ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise UserInputError(f"{path} is not a manifest of format {FORMAT} (the export stage's)"
                             "; run `dvc repro export` with this version")
    onnx_path = manifest["onnx"]["path"]
    onnx = read(onnx_path)
    md5s[onnx_path] = _check(onnx_path, onnx, entries, where)
    if md5s[onnx_path] != manifest["onnx"]["md5"]:
        raise UserInputError(f"{onnx_path} is not the model {path} was made from (md5 "
                             f"{md5s[onnx_path]}, the manifest's {manifest['onnx']['md5']}): "
                             "run `dvc repro export`")
    commit, committed = _commit(repo, rev)
    ckpt = entries.get(str(PurePosixPath(Path(model).as_posix())))
    m, iv = manifest["model"], manifest.get("intervals") or {}
    identity = {
        "rev": rev or "workspace", "commit": commit,
        **({"lock_committed": committed} if rev is None else {}),
        "artifacts": md5s, **({"checkpoint": {model: ckpt[0]}} if ckpt else {}),
        "params": ancestors_params(lock, entries[path][1]),
        "window": m["window"], "context": m["context"], "horizon": m["horizon"],
        "transform": m["transform"], "series": len(m["series_scalers"]["ids"]),
        "levels": iv.get("levels") or [], "calibrated_on": iv.get("calibrated_on"),
        "calibration": {n: e.get("how") for n, e in (iv.get("forecasters") or {}).items()},
        "forecasters": manifest["forecasters"], "default": manifest["default"],
    }
    return Bundle(manifest, onnx, identity)
