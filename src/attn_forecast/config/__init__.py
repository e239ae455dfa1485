"""Settings: the schema of params.yaml (the one set of defaults), what ``auto`` means for each
kind of data (profiles.yaml), the rules that span keys, and reading a file. The only package
that reads params; the library packages take plain arguments."""
