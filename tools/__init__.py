"""The project's own tooling, beside the package it serves and outside it: the docs' generated
blocks (docs.py, from the committed results; architectures.py, choices.py, serving.py make
theirs), params.yaml's "auto: ..." comments (annotate.py), the lecture's worked example as
`dvc exp run -S` arguments (worked_example.py) and the stages run in-process into a scratch
folder for the benchmarks and the tests (stages.py). Each imports attn_forecast; nothing in
attn_forecast imports them.

Run from the repository's root (``python -m tools.worked_example``); docs/refresh.py, bench/
and the tests put the root on the path.
"""
