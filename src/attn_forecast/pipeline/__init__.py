"""The stages' steps, one module per DVC stage, named after it (``step(...)``: params read,
work done through setup/ and the library, outputs written, its line printed), and what the
competition pipeline's steps share (competition.py: a subset's params and stores)."""
