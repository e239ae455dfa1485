"""The ``attn-forecast`` command: ``forecast`` (the default) and ``export``.

    attn-forecast forecast --model models/model.pt --csv data/raw/series.csv --steps 20
    attn-forecast export --model models/model.pt --format onnx --out model.onnx
"""
from __future__ import annotations

import sys

from .errors import run_cli

COMMANDS = ("forecast", "export")


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return
    command, rest = (argv[0], argv[1:]) if argv and argv[0] in COMMANDS else ("forecast", argv)
    from .cpu import pin
    pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
    if command == "export":
        from .export import main
    else:
        from .inference import main
    run_cli(main, rest)


if __name__ == "__main__":
    cli()
