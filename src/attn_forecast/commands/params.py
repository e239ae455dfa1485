"""``attn-forecast params``: a params file's keys, each ``auto`` with what it became and why."""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    """Print a params file's keys; with ``--resolved`` the values every stage uses, each
    ``auto`` with what it became and why (the data's profile, the schema's default, or the
    data itself at prepare)."""
    from ..config.load import load_with_choices, read_yaml
    from ..config.profiles import LATER
    ap = argparse.ArgumentParser(prog="attn-forecast params", description=main.__doc__)
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
