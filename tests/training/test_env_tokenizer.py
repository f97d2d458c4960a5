"""warm_start.split_digits reaches the tokenizer a run trains on its demos."""
from crl_jax.training import setup
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from crl_jax.envs.webshop.env import WebShopEnv
from crl_jax.training.warmstart import collect_demos


def test_split_digits_setting_shapes_the_run_tokenizer(tmp_path):
    demos = collect_demos("webshop", WebShopEnv, list(range(6)), 20)
    clicks = [a for d in demos for a in d.actions if a.startswith("click[b")]
    assert clicks
    pieces = {}
    for flag in ("false", "true"):
        cfg = apply_overrides(load_preset("webshop_cpu"), [f"warm_start.split_digits={flag}",
                                                            "warm_start.vocab_size=400"])
        tok = setup.env_tokenizer(cfg, demos, str(tmp_path / flag))
        pieces[flag] = [[tok.decode([i]) for i in tok.encode(c)] for c in clicks]
        assert all(tok.decode(tok.encode(c)) == c for c in clicks)
    assert all(sum(ch.isdigit() for ch in p) <= 1 for ps in pieces["true"] for p in ps)
    assert any(sum(ch.isdigit() for ch in p) > 1 for ps in pieces["false"] for p in ps)
