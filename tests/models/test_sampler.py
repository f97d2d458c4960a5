"""KV-cache sampler against full recomputation with the same model."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from models.checkpoint import load_checkpoint, save_checkpoint
from models.config import tiny_config
from models.decoder import init_decoder
from models.sampler import Sampler, batch_bucket
from models.sampling_ops import SamplingConfig, first_argmax, sample_tokens


@pytest.fixture(scope="module")
def model():
    # Bigger init scale so greedy choices are far from ties.
    cfg = tiny_config("qwen3", vocab_size=64, num_layers=2)
    return init_decoder(cfg, seed=3)


@pytest.fixture(scope="module")
def sampler(model):
    return Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8)


def _greedy_reference(model, prompt, n):
    """Full recomputation each step; right padding to a fixed length keeps one
    compiled shape and cannot change earlier positions (causal mask)."""
    graphdef, state = nnx.split(model)
    forward = jax.jit(lambda st, x: nnx.merge(graphdef, st)(x)[0])
    ids = list(prompt)
    out, lps = [], []
    for _ in range(n):
        padded = np.zeros((1, 32), np.int32)
        padded[0, :len(ids)] = ids
        logits = forward(state, jnp.asarray(padded))
        row = np.asarray(jax.nn.log_softmax(logits[0, len(ids) - 1]))
        tok = int(np.argmax(row))
        out.append(tok)
        lps.append(row[tok])
        ids.append(tok)
    return out, np.array(lps)


PROMPTS = [[5, 9, 2, 33, 17], [40], [7, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15]]


def test_greedy_cache_equals_full_recompute(model, sampler):
    res = sampler.generate(
        PROMPTS, SamplingConfig(temperature=0.0, max_new_tokens=12, check_every=5))
    for prompt, toks, lps in zip(PROMPTS, res.tokens, res.logprobs):
        want, want_lp = _greedy_reference(model, prompt, 12)
        assert toks == want
        np.testing.assert_allclose(lps, want_lp, atol=1e-4)
    assert res.stop_reason == ["length"] * 3


@pytest.mark.parametrize("scan,prompt_bucket", [(True, 8), (False, 1), (True, 1)])
def test_cache_layouts_and_one_token_blocks_equal_full_recompute(model, scan, prompt_bucket,
                                                                 tmp_path):
    """Scanned layers (stacked cache, the block written after the scan) and
    prompt blocks of a single token (a fresh cache's block attends within
    itself; a one-token continuation over the cache) decode as the unrolled
    model recomputed whole does."""
    if scan:  # the same weights, stacked
        save_checkpoint(model, str(tmp_path))
        layout = load_checkpoint(str(tmp_path), scan_layers=True)
    else:
        layout = model
    sampler = Sampler(layout, prompt_bucket=prompt_bucket, cache_bucket=16, new_tokens_bucket=8)
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=5, check_every=2)
    prompts, replies = [[40], [7]], [[], []]  # blocks of one token (the pending one)
    if prompt_bucket > 1:
        prompts, replies = [[40], [5, 9]], [[11], [12, 13]]
    first = sampler.generate(prompts, cfg)
    for prompt, toks in zip(prompts, first.tokens):
        assert toks == _greedy_reference(model, prompt, 5)[0]
    second = sampler.generate(replies, cfg, state=first.state)
    for i, prompt in enumerate(prompts):
        whole = prompt + first.tokens[i] + replies[i]
        want, want_lp = _greedy_reference(model, whole, 5)
        assert second.tokens[i] == want
        np.testing.assert_allclose(second.logprobs[i], want_lp, atol=1e-4)


def test_the_decode_loop_never_copies_the_cache(sampler):
    """Each layer writes the decoded token into its cache before reading it:
    read first, XLA's CPU backend copied every cache array twice a step."""
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=6, check_every=6)
    hlo = sampler.decode_program(PROMPTS, cfg).as_text()
    c = sampler.cfg
    values = rf"f32\[4,{c.num_kv_heads},\d+,{c.head_dim}\]"  # 3 rows in a bucket of 4
    keys = rf"f32\[4,{c.num_kv_heads},{c.head_dim},\d+\]"  # keys keep the slots last
    for cache in (keys, values):
        assert re.search(cache + r"\S* (dynamic-update-slice|fusion)\(", hlo)  # the pattern matches
        assert not re.search(cache + r"\S* copy\(", hlo)


def test_first_argmax_is_numpys_argmax_ties_included():
    rng = np.random.default_rng(0)
    logits = rng.integers(0, 4, size=(50, 9)).astype(np.float32)  # many ties
    assert (np.asarray(first_argmax(jnp.asarray(logits))) == logits.argmax(-1)).all()


def test_continuation_equals_decoding_from_scratch(sampler):
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=6, stop_token_ids=(3,))
    first = sampler.generate(PROMPTS, cfg)
    replies = [[20, 21], [22, 23, 24, 25, 26, 27, 28, 29, 30], [31]]
    second = sampler.generate(replies, cfg, state=first.state)  # cache grows here
    for i, prompt in enumerate(PROMPTS):
        whole = prompt + first.tokens[i] + replies[i]
        scratch = sampler.generate([whole], cfg)
        assert second.tokens[i] == scratch.tokens[0]
        np.testing.assert_allclose(second.logprobs[i], scratch.logprobs[0], atol=1e-4)


def test_stop_token_ends_row_and_is_kept(sampler):
    free = sampler.generate(PROMPTS, SamplingConfig(temperature=0.0, max_new_tokens=10))
    stop = free.tokens[0][3]
    res = sampler.generate(PROMPTS, SamplingConfig(temperature=0.0, max_new_tokens=10,
                                                   stop_token_ids=(stop,)))
    k = free.tokens[0].index(stop)
    assert res.tokens[0] == free.tokens[0][:k + 1]
    assert res.stop_reason[0] == "eos"


def test_stop_string_cut_and_continuation(sampler):

    def decode(ids):
        return "".join(chr(ord("a") + (t % 26)) for t in ids)

    free = sampler.generate(PROMPTS, SamplingConfig(temperature=0.0, max_new_tokens=12))
    target = decode(free.tokens[2][4:6])
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=12, stop_strings=(target,),
                         check_every=8)
    res = sampler.generate(PROMPTS, cfg, decode=decode)
    text = decode(res.tokens[2])
    assert res.stop_reason[2] == "stop_string"
    assert text.endswith(target) and target not in text[:-1]
    # After a cut the cache must hold exactly the kept tokens.
    more = sampler.generate([[1], [2], [9]], SamplingConfig(temperature=0.0, max_new_tokens=4),
                            state=res.state)
    scratch = sampler.generate([PROMPTS[2] + res.tokens[2] + [9]],
                               SamplingConfig(temperature=0.0, max_new_tokens=4))
    assert more.tokens[2] == scratch.tokens[0]


def test_padded_row_equals_row_alone(sampler):
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=8)
    batch = sampler.generate(PROMPTS, cfg)
    alone = sampler.generate([PROMPTS[1]], cfg)
    assert batch.tokens[1] == alone.tokens[0]


def test_sampling_frequencies_follow_softmax():
    logits = jnp.log(jnp.array([[0.5, 0.3, 0.15, 0.05]] * 20000))
    toks, lps = sample_tokens(logits, jax.random.PRNGKey(0), 1.0, 0, 1.0)
    freq = np.bincount(np.asarray(toks), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.015)
    np.testing.assert_allclose(np.asarray(lps), np.log(np.array([0.5, 0.3, 0.15, 0.05]))[
        np.asarray(toks)], atol=1e-5)
    # Temperature 0.5 squares the probabilities (renormalised).
    toks, _ = sample_tokens(logits, jax.random.PRNGKey(1), 0.5, 0, 1.0)
    p = np.array([0.5, 0.3, 0.15, 0.05]) ** 2
    np.testing.assert_allclose(np.bincount(np.asarray(toks), minlength=4) / 20000, p / p.sum(),
                               atol=0.015)


def test_top_k_and_top_p_filters():
    logits = jnp.log(jnp.array([[0.05, 0.5, 0.3, 0.15]] * 4000))
    toks, _ = sample_tokens(logits, jax.random.PRNGKey(0), 1.0, 2, 1.0)
    assert set(np.unique(np.asarray(toks))) == {1, 2}
    # Nucleus 0.7: {0.5, 0.3} (mass before 0.3 is 0.5 < 0.7; before 0.15 is 0.8).
    toks, _ = sample_tokens(logits, jax.random.PRNGKey(1), 1.0, 0, 0.7)
    freq = np.bincount(np.asarray(toks), minlength=4) / 4000
    assert set(np.unique(np.asarray(toks))) == {1, 2}
    np.testing.assert_allclose(freq[[1, 2]], [0.625, 0.375], atol=0.03)
    toks, _ = sample_tokens(logits, jax.random.PRNGKey(2), 1.0, 1, 1.0)
    assert (np.asarray(toks) == 1).all()


def test_bad_input_is_rejected(model):
    sampler = Sampler(model)
    with pytest.raises(ValueError, match="outside"):
        sampler.generate([[1, 999]], SamplingConfig())
    with pytest.raises(ValueError, match="decode"):
        sampler.generate([[1]], SamplingConfig(stop_strings=("x",)))
    with pytest.raises(ValueError, match="top_p"):
        SamplingConfig(top_p=0.0)


def test_batch_sizes_share_compiled_programs_through_buckets(model):
    assert [batch_bucket(b) for b in (1, 2, 3, 5, 8, 9, 17, 30, 32, 33)] == \
        [1, 2, 4, 8, 8, 16, 24, 32, 32, 40]
    sampler = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8)
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=4)
    prompts = [[5, 9, 2], [40, 3], [7, 8, 9], [1, 2, 3], [4, 5, 6]]
    first = sampler.generate(prompts, cfg)  # 5 rows -> bucket 8
    compiled = (sampler._prefill._cache_size(), sampler._decode._cache_size())
    second = sampler.generate(prompts[:3] + [[11, 12]] * 4, cfg)  # 7 rows -> bucket 8 again
    assert (sampler._prefill._cache_size(), sampler._decode._cache_size()) == compiled
    assert len(first.tokens) == 5 and len(second.tokens) == 7  # padding rows are not returned
    assert second.tokens[:3] == first.tokens[:3]
    with pytest.raises(ValueError, match="state holds 5 rows"):
        sampler.generate([[1]] * 8, cfg, state=first.state)


def test_batch_split_over_a_data_mesh_equals_full_recompute_and_continues(model):
    # bench_sampler.py's x2 column: weights replicated over a 'data' mesh of
    # host devices, the rows (and so the cache) split over it.
    from models.sharding import MeshConfig, make_mesh, shard_state
    mesh = make_mesh(MeshConfig(data=2, fsdp=1, tp=1), jax.devices()[:2])
    graphdef, state = nnx.split(model)
    on_mesh = Sampler(nnx.merge(graphdef, shard_state(state, mesh)), prompt_bucket=8,
                      cache_bucket=16, new_tokens_bucket=8)
    prompts = PROMPTS + [[12, 13]]  # four rows: two per device
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=7, check_every=3)
    res = on_mesh.generate(prompts, cfg)
    k = res.state.cache.k[0]  # layer 0's keys, [batch, kv_heads, head_dim, slots]
    assert k.sharding.shard_shape(k.shape)[0] == k.shape[0] // 2  # the rows are split
    for prompt, toks, lps in zip(prompts, res.tokens, res.logprobs):
        want, want_lp = _greedy_reference(model, prompt, 7)
        assert toks == want
        np.testing.assert_allclose(lps, want_lp, atol=1e-4)
    replies = [[20, 21], [22], [23, 24, 25], [26]]
    second = on_mesh.generate(replies, cfg, state=res.state)
    for i, prompt in enumerate(prompts):
        want, _ = _greedy_reference(model, prompt + res.tokens[i] + replies[i], 7)
        assert second.tokens[i] == want
