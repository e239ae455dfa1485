"""The ``attn-forecast`` command: ``forecast`` (the default), ``export``, ``params`` and ``tune``.

    attn-forecast forecast --model models/model.pt --csv data/raw/series.csv --steps 20
    attn-forecast export --model models/model.pt --format onnx --out model.onnx
    attn-forecast params --resolved     # every key of params.yaml, with what each auto became
    attn-forecast tune                  # the search of competitions/tune/space.yaml (Optuna)
"""
from __future__ import annotations

import argparse
import sys

from .errors import run_cli

COMMANDS = ("forecast", "export", "params", "tune")


def params_main(argv: list[str] | None = None) -> None:
    """Print a params file's keys; with ``--resolved`` the values every stage uses, each
    ``auto`` with what it became and why (the data's profile, the schema's default, or the
    data itself at prepare)."""
    from .config.load import load_with_choices, read_yaml
    from .config.profiles import LATER
    ap = argparse.ArgumentParser(prog="attn-forecast params", description=params_main.__doc__)
    ap.add_argument("--params", default="params.yaml", help="the params file (params.yaml)")
    ap.add_argument("--resolved", action="store_true", help="auto resolved, with the reason")
    args = ap.parse_args(argv)
    raw = read_yaml(args.params) or {}
    p, chosen, prof = load_with_choices(args.params)
    named = prof["values"]
    print(f"# {args.params}: data.kind {p.data.kind}, profile {prof['profile']} "
          "(src/attn_forecast/config/profiles.yaml)")
    for section, values in p.model_dump().items():
        for key, value in values.items():
            dotted = f"{section}.{key}"
            given = (raw.get(section) or {}).get(key, "auto") if isinstance(raw, dict) else None
            if not args.resolved or given != "auto":
                print(f"{dotted}: {value}")
            elif value == "auto":
                print(f"{dotted}: auto ({LATER.get(dotted, 'chosen when it is used')})")
            elif dotted in named:
                print(f"{dotted}: {value} (auto: the {prof['profile']} profile)")
            elif dotted in chosen:
                print(f"{dotted}: {value} (auto: the schema's default)")
            else:
                print(f"{dotted}: {value}")


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return
    command, rest = (argv[0], argv[1:]) if argv and argv[0] in COMMANDS else ("forecast", argv)
    from .cpu import pin
    pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
    if command == "params":
        run_cli(params_main, rest)
        return
    if command == "tune":
        from .search import main as tune_main
        run_cli(tune_main, rest)
        return
    if command == "export":
        from .model.export import main
        run_cli(main, rest)
        return
    from .inference import main
    run_cli(main, rest)


if __name__ == "__main__":
    cli()
