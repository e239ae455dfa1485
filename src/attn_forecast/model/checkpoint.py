"""The checkpoint, written and read in one place: ``state_dict`` + the model settings + the
prepared data's record, as plain data (``torch.load(..., weights_only=True)``; no pickled
objects)."""
from __future__ import annotations

import io
import pickle
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
    in the one-line error for anything else."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserInputError(f"{what}: file not found: {path}") from None
    except IsADirectoryError:
        raise UserInputError(f"{what}: {path} is a folder, not a checkpoint file") from None
    except OSError as err:
        raise UserInputError(f"{what}: cannot read {path} ({err.strerror})") from None
    except (RuntimeError, ValueError, KeyError, TypeError, EOFError,
            pickle.UnpicklingError) as err:  # what torch.load raises on a foreign file
        raise UserInputError(f"{what}: {path} is not a PyTorch checkpoint "
                             f"({type(err).__name__})") from None
    if not (isinstance(payload, dict) and {"settings", "state_dict", "prepare"} <= set(payload)):
        raise UserInputError(f"{what}: {path} is not a checkpoint of this project's train "
                             "stage (no settings, state_dict and prepare entries)")
    return payload


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
