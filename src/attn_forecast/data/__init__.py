"""Data: the sources (synthetic series, a user's CSV, the competitions), the long table the
generate stage writes, the prepared store (1..N series, memory-mapped) with its parts,
windows, scalers, transforms, calendar inputs and the season and window of ``auto``."""
