"""The project's own investigations at CPU scale (controls, ladders, sweeps): each module
defines arms and draws a figure with the machinery of experiments/figures/; reproduce.py runs and
draws them beside the paper's figures. Findings: docs/FINDINGS.md."""
