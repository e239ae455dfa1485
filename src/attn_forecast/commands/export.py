"""``attn-forecast export``: a trained model for serving, ONNX or a torch.export program, with
the JSON a service needs beside it (model/export.py: what the graph takes and returns)."""
from __future__ import annotations

import argparse

from ..errors import UserInputError


def main(argv: list[str] | None = None) -> None:
    from ..model import checkpoint, export
    ap = argparse.ArgumentParser(prog="attn-forecast export", description=export.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint written by the train stage")
    ap.add_argument("--format", choices=["onnx", "pt2"], default="onnx",
                    help="onnx (default) or pt2 (a torch.export program)")
    ap.add_argument("--out", required=True, help="file to write; its .json goes beside it")
    args = ap.parse_args(argv)
    payload = checkpoint.trained(args.model)
    if args.format == "onnx" and not args.out.endswith(".onnx"):
        raise UserInputError(f"--out must end in .onnx for --format onnx, got {args.out}")
    model = checkpoint.model_from(payload)
    meta_path = export.export(model, payload["prepare"], args.out, args.format)
    print(f"export: {model.settings.kind} model -> {args.out} and {meta_path}")
