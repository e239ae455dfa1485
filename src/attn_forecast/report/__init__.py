"""The report: the figures (one function each, arrays in), which figures a run draws, and the
Markdown summary. No torch."""
