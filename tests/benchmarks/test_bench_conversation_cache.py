"""The conversation-cache benchmark's workload: both modes play the same
episodes (the ratios it prints are a run's, not tested here)."""
from experiments.benchmarks import bench_conversation_cache as bench


def test_both_modes_play_the_same_rollout_and_continuing_prefills_less(tmp_path):
    tok, model, envs = bench.build(2, 32, 1, str(tmp_path))
    with bench.actions_read_by_hash():
        r = bench.measure(model, tok, envs, 3, 1, max_new_tokens=8, max_prompt_tokens=4096,
                          mean_answer=4)
    assert r["same_tokens"] == "2/2" and r["turns_played"] == [3, 3]
    re, co = r["re-encoded"], r["continued"]
    assert re["sampled"] == co["sampled"] > 0
    assert co["prefilled"] < re["prefilled"] and r["prefill_ratio"] > 1
    assert 0 < co["slot_use"] <= 1 and co["max_slots"] > 0
    assert r["answer_tokens"][0] < r["answer_tokens"][2]  # answers of varying length
