"""The README's headline is the generator's, from the committed records and
the presets' configs."""
import os
import re

import pytest

from experiments.configs import load_preset
from experiments.figures import readme_block
from experiments.figures.results_doc import HEADLINE


def _readme() -> str:
    with open(os.path.join(readme_block.REPO, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_readme_numbers_match_the_committed_records():
    assert readme_block.readme_block(_readme()) == readme_block.render_block(), (
        "README.md's results block is stale: run python experiments/figures/readme_block.py")


def test_the_readme_setup_lines_state_the_presets_values():
    """Every setup line in the README's block names its preset's model sizes,
    steps, pool and held-out games, read here from the preset itself."""
    block = readme_block.readme_block(_readme())
    shown = 0
    for preset, _, _, _ in HEADLINE:
        lines = [ln for ln in block.splitlines() if f"`--config={preset}`" in ln]
        if not lines:
            continue
        shown += 1
        (line,) = lines
        cfg = load_preset(preset)
        for want in (f"actor {cfg.actor.num_layers} layers x width {cfg.actor.hidden_size}",
                     f"extractor {cfg.extractor.num_layers} layers x width {cfg.extractor.hidden_size}",
                     f"warm-started on {cfg.warm_start.demos:,} expert games",
                     f"{cfg.train.steps} RL steps of {cfg.train.tasks_per_step} tasks x "
                     f"{cfg.train.group_size} rollouts",
                     f"pool of {cfg.train.task_pool} games",
                     f"{cfg.env.num_eval_tasks} held-out games"):
            assert want in line, (preset, want, line)
        seeds = re.search(r"(\d+) seeds?\.", line)
        assert seeds and int(seeds.group(1)) >= 1, line
    assert shown >= 2, "the block shows no setup for ALFWorld and MiniHack Room"


def test_the_window_line_names_the_figures_windows():
    from experiments.figures.fig6_success import EVAL_LAST_K, TRAIN_LAST_K
    assert EVAL_LAST_K == 1  # the line below says "last evaluation"
    block = readme_block.readme_block(_readme())
    assert f"last {TRAIN_LAST_K} RL steps" in block and "its last evaluation" in block


def test_headline_lines_read_the_results_table():
    doc = "\n".join([
        "## Headline: Comp. RL against the GRPO baseline", "",
        "| env | success ratio (train) | success ratio (eval) | paper | fewer actions (train) | paper |",
        "|---|---|---|---|---|---|",
        "| ALFWorld | 0.87x (seeds 0.87, 0.78) | 1.00x | ~1.3x | 0.95x | 2x |",
        "| WebShop | n/a | n/a | n/a | n/a | n/a |", "", "## Fig. 3", "| a | b | c | d | e | f |"])
    assert readme_block.headline_lines(doc) == [
        "- **ALFWorld**: Comp. RL / GRPO training success **0.87x (seeds 0.87, 0.78)**, held-out "
        "**1.00x** (paper ~1.3x); actions GRPO / Comp. RL **0.95x** (paper 2x).",
        "- WebShop: not run (see docs/RESULTS.md)."]
    assert [readme_block.seed_count(r["train"]) for r in readme_block.headline_rows(doc)] == [2, 1]


def test_a_readme_without_the_block_is_an_error():
    with pytest.raises(ValueError, match="no generated block"):
        readme_block.replace_block("# title\n", "x")
