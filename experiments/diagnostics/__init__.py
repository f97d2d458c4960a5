"""Probe scripts: one-off measurements of a warm start, the extractor, the bank or an engine,
each runnable as `python experiments/diagnostics/NAME.py --help`."""
