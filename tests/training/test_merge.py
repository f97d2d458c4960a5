"""The periodic-merge deciders: the extractor's answer format and dedup."""
from crl_jax.rl import prompts
from crl_jax.training.setup import dedup_merger


def test_parse_merge_accepts_only_a_list_of_texts():
    assert prompts.parse_merge('keep these: ["take mug", "heat it"] thanks') == ["take mug", "heat it"]
    for bad in ("no list here", "[1, 2]", '["ok", ""]', "[unclosed", '{"a": 1}'):
        assert prompts.parse_merge(bad) is None, bad


def test_render_merge_numbers_the_window():
    text = prompts.render_merge(["a b", "c"], "compact")
    assert text == "merge:\n[0] a b\n[1] c\nkeep: "
    chat = prompts.render_merge(["a b"], "chat")
    assert chat[0]["role"] == "system" and "[0] a b" in chat[1]["content"]


def test_dedup_merger_keeps_first_of_equal_texts():
    texts = ["Take the mug", "take  the MUG", "open fridge", "Take the mug"]
    assert dedup_merger(texts) == ["Take the mug", "open fridge"]


def test_periodic_merge_uses_the_task_key_entries_carry_in_a_shared_bank():
    """Consolidated entries carry their episode's task key even in a shared bank
    (bank.per_task false), and merge_task merges the entries of one key: the
    trainer must merge per episode key (it merged key "", which holds no entry,
    so no merge ever ran)."""
    from types import SimpleNamespace

    from experiments.configs import load_preset
    from crl_jax.training.step import feed_manager

    class Recorder:
        def __init__(self):
            self.merged, self.records = [], []

        def submit_episode(self, record):
            self.records.append(record)

        def merge(self, key, step):
            self.merged.append((key, step))

    cfg = load_preset("alfworld_cpu")
    assert not cfg.experience.bank.per_task and cfg.experience.merge_every == 5
    episodes = [SimpleNamespace(goal="g", trajectory_text=lambda obs_chars=40, answers="action", focus="", places=False: "t", won=True,
                                task_key=key, experience_id=None, ask_keys=[], guided=False,
                                judgement=None) for key in ("alfworld", "x")]
    rec = Recorder()
    for step in range(10):
        feed_manager(SimpleNamespace(cfg=cfg, manager=rec), step, episodes)
    assert rec.merged == [("alfworld", 4), ("x", 4), ("alfworld", 9), ("x", 9)]
    assert {r.task_key for r in rec.records} == {"alfworld", "x"}  # the keys entries get
