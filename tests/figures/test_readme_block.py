"""The README's result numbers are the generator's, from the committed records."""
import os

import pytest

from experiments.figures import readme_block


def test_readme_numbers_match_the_committed_records():
    with open(os.path.join(readme_block.REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert readme_block.readme_block(text) == readme_block.render_block(), (
        "README.md's results block is stale: run python experiments/figures/readme_block.py")


def test_headline_lines_read_the_results_table():
    doc = "\n".join([
        "## Headline: Comp. RL against the GRPO baseline", "",
        "| env | success ratio (train) | success ratio (eval) | paper | fewer actions (train) | paper |",
        "|---|---|---|---|---|---|",
        "| ALFWorld | 0.87x (seeds 0.87, 0.78) | 1.00x | ~1.3x | 0.95x | 2x |",
        "| WebShop | n/a | n/a | n/a | n/a | n/a |", "", "## Fig. 3", "| a | b | c | d | e | f |"])
    assert readme_block.headline_lines(doc) == [
        "- ALFWorld: Comp. RL / GRPO training success **0.87x (seeds 0.87, 0.78)**, held-out "
        "**1.00x** (paper ~1.3x); actions GRPO / Comp. RL **0.95x** (paper 2x).",
        "- WebShop: not run (see docs/RESULTS.md)."]


def test_the_window_mean_and_the_missing_cells():
    rows = {0: {"e": 0.5}, 4: {"t": 1.0}, 5: {"t": 0.0, "e": 0.25}}
    assert readme_block._window_mean(rows, "t", 5) == "0.500"  # steps 1-5, two of them logged
    assert readme_block._window_mean(rows, "t", 0) == ""
    assert readme_block._at(rows, "e", 5) == "0.250" and readme_block._at(rows, "e", 10) == ""


def test_a_readme_without_the_block_is_an_error():
    with pytest.raises(ValueError, match="no generated block"):
        readme_block.replace_block("# title\n", "x")
