"""The ``attn-forecast`` command: ``forecast`` (the default), ``serve``, ``export``, ``params``
and ``tune``.

    attn-forecast forecast --model models/model.pt --csv data/raw/series.csv --steps 20
    attn-forecast serve --model models/model.pt         # the forecast service, 127.0.0.1:8000
    attn-forecast export --model models/model.pt --format onnx --out model.onnx
    attn-forecast params --resolved     # every key of params.yaml, with what each auto became
    attn-forecast tune                  # the search of competitions/tune/space.yaml (Optuna)
"""
from __future__ import annotations

import importlib
import sys

from .errors import run_cli

# each subcommand: the module whose ``main(argv)`` runs it
COMMANDS = {"forecast": "commands.forecast", "serve": "commands.serve",
            "export": "commands.export",
            "params": "commands.params", "tune": "commands.tune"}


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return
    command, rest = (argv[0], argv[1:]) if argv and argv[0] in COMMANDS else ("forecast", argv)
    from .cpu import pin
    pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
    run_cli(importlib.import_module(f".{COMMANDS[command]}", __package__).main, rest)


if __name__ == "__main__":
    cli()
