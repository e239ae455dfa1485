"""The checkpoint, written and read in one place: ``state_dict`` + the model settings + the
prepared data's record, as plain data (``torch.load(..., weights_only=True)``; no pickled
objects)."""
from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import torch
from torch import nn

from ..errors import UserInputError
from ..io import atomic_path
from .networks import Ensemble, build_model
from .settings import ModelSettings


def save(path: str | Path, model: nn.Module, extra: dict) -> None:
    """Write the checkpoint atomically; ``extra``: plain data (the prepared data's record,
    the history...)."""
    members = list(model.members) if isinstance(model, Ensemble) else [model]
    payload = {"settings": model.settings.to_dict(), "members": len(members),
               "combine": getattr(model, "combine", "mean"),
               # an ensemble over lookbacks: each member's own settings (its window)
               **({"member_settings": [m.settings.to_dict() for m in members]}
                  if any(m.settings != members[0].settings for m in members) else {}),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               **extra}
    buf = io.BytesIO()  # a buffer names the zip's inner folder "archive", not the temp file
    torch.save(payload, buf)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buf.getvalue())


def read(path: str | Path, what: str = "--model") -> dict:
    """The payload of a checkpoint of this project's train stage; ``what`` names the setting
    in the one-line error for anything else: a file cut short, a file that is no PyTorch
    checkpoint at all, a PyTorch file without this project's entries."""
    try:
        damage = _damage(Path(path))
        payload = None if damage else torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserInputError(f"{what}: file not found: {path}") from None
    except IsADirectoryError:
        raise UserInputError(f"{what}: {path} is a folder, not a checkpoint file") from None
    except OSError as err:
        raise UserInputError(f"{what}: cannot read {path} ({err.strerror})") from None
    except pickle.UnpicklingError as err:  # pickled objects, which weights_only refuses
        raise UserInputError(f"{what}: {path} is not a PyTorch checkpoint "
                             f"({type(err).__name__}: it holds pickled objects, not plain "
                             "data)") from None
    except (RuntimeError, ValueError, KeyError, TypeError, EOFError, IndexError) as err:
        # a whole zip whose inside is damaged (what torch.load raises on one varies)
        raise UserInputError(f"{what}: {path} is damaged ({type(err).__name__}: "
                             f"{str(err).split('.')[0]}); {_AGAIN}") from None
    if damage:
        raise UserInputError(f"{what}: {path} {damage}")
    if not (isinstance(payload, dict) and {"settings", "state_dict", "prepare"} <= set(payload)):
        holds = (f"a dict with keys {', '.join(map(str, payload)) or 'nothing'}"
                 if isinstance(payload, dict) else f"a {type(payload).__name__}")
        raise UserInputError(f"{what}: {path} is not a checkpoint of this project's train "
                             f"stage (no settings, state_dict and prepare entries; it holds "
                             f"{holds})")
    return payload


# what the train stage's record of the prepared data holds, which forecasting reads
TRAINED = ("window", "horizon", "transform", "scaler", "series", "time_features", "features")


def trained(path: str | Path, what: str = "--model") -> dict:
    """The payload of a checkpoint the train stage wrote (one that can forecast a CSV or be
    exported); the prior (the pretrain stage's) and any other checkpoint get one line naming
    what it is."""
    payload = read(path, what)
    prep = payload.get("prepare") or {}
    missing = [k for k in TRAINED if k not in prep]
    if missing:
        kind = ("the pretrain stage's prior (a starting point the train stage fine-tunes, not "
                "a forecaster of your data)" if "pretrain" in payload else
                f"a checkpoint without the train stage's record of its data (no "
                f"{', '.join(missing)})")
        raise UserInputError(f"{what}: {path} is {kind}; pass the train stage's checkpoint, "
                             "e.g. models/model.pt")
    return payload


_ZIP = b"PK\x03\x04"                       # what torch.save writes: a zip archive
_LEGACY = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19"  # torch.save before 1.6: a pickle
_END, _END_SEARCH = b"PK\x05\x06", 22 + 65535   # end record, within its longest comment
_AGAIN = "copy it again, or `dvc checkout` (or `dvc repro`) it"


def _damage(path: Path) -> str | None:
    """What is wrong with the file at ``path`` as a PyTorch checkpoint, read from its first
    bytes and its zip directory (cheap: no weights are read), or None when torch should
    load it."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(64)
    if not head:
        return f"is empty (0 bytes), not a PyTorch checkpoint; {_AGAIN}"
    if head.startswith(_LEGACY):
        return None
    if not head.startswith(_ZIP[:len(head)]):
        kind = "text" if _is_text(head) else "binary data"
        return (f"is not a PyTorch checkpoint (a checkpoint is a zip archive; this is {kind}, "
                f"{size:,} bytes)")
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except zipfile.BadZipFile as err:
        with path.open("rb") as f:     # a zip ends with its directory's 22-byte end record
            f.seek(max(0, size - _END_SEARCH))
            tail = f.read()
        if tail.rfind(_END) not in range(len(tail) - 21):  # none whole: cut short
            return f"is truncated ({size:,} bytes, the end of its zip archive missing); {_AGAIN}"
        return f"is damaged (its zip directory: {err}); {_AGAIN}"
    if not any(n.endswith("/data.pkl") for n in names):
        return "is a zip archive but not a PyTorch checkpoint (no data.pkl inside)"
    return None


def _is_text(head: bytes) -> bool:
    """Whether a file's first bytes read as UTF-8 text (its last character may be cut)."""
    text = head.decode("utf-8", errors="replace")[:-1]
    return "\ufffd" not in text and all(ch.isprintable() or ch.isspace() for ch in text)


def model_from(payload: dict, device: str | torch.device = "cpu") -> nn.Module:
    """The model a checkpoint's payload describes, with its weights, in eval mode."""
    def settings(d: dict) -> ModelSettings:
        return ModelSettings(**{**d, "quantiles": tuple(d.get("quantiles", ()))})
    combine = payload.get("combine", "mean")
    if "member_settings" in payload:
        model = build_model([settings(d) for d in payload["member_settings"]], combine=combine)
    else:
        model = build_model(settings(payload["settings"]), payload.get("members", 1), combine)
    model.load_state_dict(payload["state_dict"])
    return model.to(device).eval()


def load(path: str | Path, device: str | torch.device = "cpu") -> tuple[nn.Module, dict]:
    payload = read(path)
    return model_from(payload, device), payload
