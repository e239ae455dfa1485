"""The ``attn-forecast`` command's subcommands (cli.py dispatches to them): forecast (with
outlook: what it adds to the model's forecast), export (model/export.py does the work),
params and tune (an Optuna study, every trial a DVC experiment: its work is the search
package's)."""
