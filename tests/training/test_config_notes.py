"""--print_config's notes: the keys a profile set, the keys a run ignores."""
from crl_jax.training.config_io import apply_overrides, format_config
from crl_jax.training.config_notes import profile_keys, unused_keys
from experiments.configs import PRESETS, load_preset


def test_the_profile_notes_name_exactly_the_keys_the_profiles_disagree_on():
    released, paper = load_preset("alfworld:released"), load_preset("alfworld:paper")
    notes = profile_keys(PRESETS, "alfworld", released)
    assert notes["experience.bank.diversity_score"] == "released profile (paper: 'similarity')"
    assert notes["rollout.max_turns"] == "released profile (paper: 40)"
    on_paper = profile_keys(PRESETS, "alfworld:paper", paper)
    assert on_paper.keys() == notes.keys()
    assert on_paper["rollout.max_turns"] == "paper profile (released: 30)"
    assert "train.steps" not in notes  # both profiles: 128
    changed = apply_overrides(released, ["rollout.max_turns=12"])
    assert "rollout.max_turns" not in profile_keys(PRESETS, "alfworld", changed)
    assert profile_keys(PRESETS, "alfworld_cpu", load_preset("alfworld_cpu")) == {}


def test_a_checkpoint_makes_the_tiny_sizes_unused():
    assert unused_keys(load_preset("alfworld_cpu")) == {}
    notes = unused_keys(load_preset("alfworld"))
    assert notes["actor.hidden_size"].startswith("unused: actor.checkpoint")
    assert "warm_start.vocab_size" in notes and "actor.checkpoint" not in notes
    grpo = unused_keys(apply_overrides(load_preset("alfworld_cpu"), ["experience.mode=none"]))
    assert set(grpo) == {f"extractor.{k}" for k in (
        "checkpoint", "tokenizer", "family", "hidden_size", "intermediate_size", "num_layers",
        "num_heads", "num_kv_heads", "head_dim")}
    listing = format_config(load_preset("alfworld"), notes).splitlines()
    line = next(x for x in listing if x.startswith("actor.hidden_size "))
    assert line.endswith("= 128  # " + notes["actor.hidden_size"])
