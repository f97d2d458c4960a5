"""Continued conversations whose batch shrinks and whose slots are packed
(models/cache_rows.py) decode exactly as the same conversations recomputed
from scratch; the packing plan against one worked out by hand."""
import numpy as np
import pytest

from models.cache_rows import continued_cache_slots, pack_plan, slot_use
from models.config import tiny_config
from models.decoder import init_decoder
from models.sampler import Sampler
from models.sampling_ops import SamplingConfig

PROMPTS = [[5, 9, 2, 33, 17], [40], [7, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15], [3, 4], [60, 61, 62]]
CFG = SamplingConfig(temperature=0.0, max_new_tokens=7, stop_token_ids=(3,))


@pytest.fixture(scope="module")
def model():
    return init_decoder(tiny_config("qwen3", vocab_size=64, num_layers=2), seed=3)


def test_pack_plan_by_hand():
    valid = np.array([[0, 1, 1, 0, 1, 0],    # 3 tokens: slots 1, 2, 4
                      [1, 0, 0, 0, 0, 1],    # 2 tokens: slots 0, 5
                      [0, 0, 0, 0, 0, 0]], bool)  # a padding row
    index, keep, width = pack_plan(valid, 2, 5)  # 3 tokens + 2 free slots, buckets of 5
    assert width == 3 and keep.shape == (3, 5)
    np.testing.assert_array_equal(keep, [[1, 1, 1, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(index[keep], [1, 2, 4, 0, 5])  # each row's tokens, in order
    assert slot_use(valid, 2, 6) == pytest.approx(5 / 12)
    assert pack_plan(valid, 3, 4)[1].shape == (3, 8)  # 3 + 3 slots, rounded up to 8


def test_the_continued_cache_size_by_hand():
    # the limit + one block's padding (32) + the answer (4,096), in buckets of 128
    assert continued_cache_slots(32768, 4096) == 36992
    assert continued_cache_slots(100, 12, prompt_bucket=16, cache_bucket=64,
                                 new_tokens_bucket=8) == 192  # 100 + 16 + 16 = 132 -> 192


def _three_turns(sampler, keep_after):
    """Turn 1 on every prompt; turns 2 and 3 continue the rows ``keep_after[t]``."""
    first = sampler.generate(PROMPTS, CFG)
    whole = [p + t for p, t in zip(PROMPTS, first.tokens)]
    rows, state = list(range(len(PROMPTS))), first.state
    got = {}
    for turn, keep in enumerate(keep_after):
        state = sampler.select_rows(state, [rows.index(r) for r in keep])
        rows = list(keep)
        reply = [[20 + turn, (r * 7 + turn) % 50 + 5] * (1 + r % 3) for r in rows]
        res = sampler.generate(reply, CFG, state=state)
        assert res.state.rows == len(rows) and len(res.tokens) == len(rows)
        for j, r in enumerate(rows):
            got[turn, r] = (whole[r] + reply[j], res.tokens[j], res.logprobs[j])
            whole[r] = whole[r] + reply[j] + res.tokens[j]
        state = res.state
    return got, state


@pytest.mark.parametrize("min_slot_use", [0.0, 0.7, 1.0])  # never, sometimes, always pack
def test_rows_that_leave_and_packed_slots_decode_as_from_scratch(model, min_slot_use):
    sampler = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8,
                      min_slot_use=min_slot_use)
    # Row 1 ends after turn 1, rows 0 and 3 after turn 2; the order changes too.
    got, state = _three_turns(sampler, [[4, 0, 2, 3], [2, 4]])
    scratch = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8)
    for (turn, r), (prompt, tokens, logprobs) in got.items():
        want = scratch.generate([prompt], CFG)
        assert tokens == want.tokens[0], (turn, r)
        np.testing.assert_allclose(logprobs, want.logprobs[0], atol=1e-4)
    # Two rows are left, in a batch bucket of 2: the others never come back.
    assert state.rows == 2 and len(state.pending) == 2 and state.cache.rows == 2
    valid = state.valid
    assert slot_use(valid, 2, state.offset) >= (min_slot_use if min_slot_use < 1 else 0)


def test_packing_keeps_slots_near_the_tokens(model):
    loose = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8, min_slot_use=0)
    tight = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8, min_slot_use=1)
    _, a = _three_turns(loose, [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]])
    _, b = _three_turns(tight, [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]])
    use = [slot_use(s.valid, 5, s.offset) for s in (a, b)]
    assert use[1] > use[0]  # the packed cache wastes less
    assert b.offset < a.offset


def test_select_rows_refuses_rows_it_does_not_hold(model):
    sampler = Sampler(model, prompt_bucket=8, cache_bucket=16, new_tokens_bucket=8)
    state = sampler.generate(PROMPTS[:2], CFG).state
    for rows in ([2], [0, 0], [-1]):
        with pytest.raises(ValueError, match="not distinct rows"):
            sampler.select_rows(state, rows)
