"""The Actor-Critic variant (paper App. B): verdicts parsed from the actor's
answer, what a judged episode reads, the credit a verdict gives an entry
(hand-computed), the warm start's judging samples and the metrics."""
import dataclasses

import numpy as np
import pytest

from crl_jax.envs.registry import make_env
from crl_jax.experience import EpisodeRecord
from crl_jax.rl import critic
from crl_jax.rl.critic import CriticScores, Judgement, critic_credit, parse_judgement
from crl_jax.rl.episode_stats import batch_metrics
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from crl_jax.training import warmstart
from crl_jax.training.config import RunConfig
from tests.rl.scripted import ContinuesConversations
from tests.rl.test_reward_baseline import plan_writing_manager
from tests.rl.test_tools_and_distillation import CharTokenizer


@pytest.mark.parametrize("text, want", [
    ("accept", Judgement("accept")),
    (" reject\nmore", Judgement("reject")),
    ("refine: go to shelf 2 > take mug 1", Judgement("refine", "go to shelf 2 > take mug 1")),
    ("refine:", Judgement(None)),  # a rewrite with no text
    ("accept: yes", Judgement(None)),
    ("go to shelf 1", Judgement(None)),
    ("", Judgement(None)),
])
def test_compact_verdicts(text, want):
    assert parse_judgement(text, "compact") == want


@pytest.mark.parametrize("text, want", [
    ('<think>fits</think><answer>{"verdict": "accept"}</answer>', Judgement("accept")),
    ('<answer>{"verdict": "refine", "note": " use mug 2 "}</answer>', Judgement("refine", "use mug 2")),
    ('<answer>{"verdict": "refine"}</answer>', Judgement(None)),
    ('<answer>{"verdict": "maybe"}</answer>', Judgement(None)),
    ('<answer>not json</answer>', Judgement(None)),
    ('{"verdict": "accept"}', Judgement(None)),  # no answer tags
    ('<answer>{"verdict": "accept"}</answer><answer>{"verdict": "reject"}</answer>',
     Judgement("reject")),  # the last answer counts
])
def test_chat_verdicts(text, want):
    assert parse_judgement(text, "chat") == want


def test_what_a_judged_episode_reads():
    assert Judgement("accept").text_to_read("E") == "E"
    assert Judgement("refine", "R").text_to_read("E") == "R"
    assert Judgement("reject").text_to_read("E") is None
    assert Judgement(None).text_to_read("E") is None


def test_credit_by_hand():
    paper = CriticScores()
    assert critic_credit(1.0, "accept", paper) == 2.0
    assert critic_credit(1.0 + 1 / 3, "accept", paper) == pytest.approx(7 / 3)  # free baseline -1/3
    assert critic_credit(-1.0, "refine", paper) == -0.5
    assert critic_credit(1.0, "reject", paper) == 0.0  # the outcome does not touch a rejected entry
    assert critic_credit(-1.0, "reject", paper) == 0.0
    assert critic_credit(1.0, None, paper) is None
    released = CriticScores(reject=-1.0)
    assert critic_credit(1.0, "reject", released) == -1.0


class JudgingSampler(ContinuesConversations):
    """Answers a judging prompt with the verdict scripted for its goal, any
    other prompt with "look"; records what it was asked and how."""

    def __init__(self, tok, verdicts):
        self.tok, self.verdicts, self.calls = tok, verdicts, []

    def generate(self, prompts, config, rng=0, decode=None, state=None):
        prompts = self.whole(prompts, state)
        texts = [self.tok.decode(p) for p in prompts]
        self.calls.append((texts, config))
        rows = []
        for text in texts:
            if text.endswith("judge: "):
                goal = text.split("\n")[0][len("goal: "):]
                rows.append(self.tok.encode(self.verdicts[goal]) + [1])
            else:
                rows.append(self.tok.encode("look") + [1])
        return self.result(prompts, rows, [np.full(len(r), -0.5) for r in rows],
                           ["eos"] * len(rows))


def test_judged_rollout_reads_what_the_actor_kept():
    tok = CharTokenizer()
    envs = [make_env("alfworld", split="generated", num_generated=4, seed=0) for _ in range(5)]
    goals = [env.reset(t)[1].goal for env, t in zip(envs, [0, 1, 2, 3, 0])]
    assert len(set(goals[:4])) == 4, "the test needs four different goals"
    verdicts = {goals[0]: "accept", goals[1]: "refine: NOTE B", goals[2]: "reject",
                goals[3]: "maybe"}
    sampler = JudgingSampler(tok, verdicts)
    engine = RolloutEngine(sampler, tok, RolloutConfig(max_turns=1, history=1,
                                                       judge_max_new_tokens=33))
    entries = {goals[i]: f"ENTRY {i}" for i in range(4)}

    def retrieve(queries, keys):
        return [(entries[q.split(", observation: ")[0][len("goal: "):]], i)
                for i, q in enumerate(queries)]

    eps = engine.play(envs, [0, 1, 2, 3, 0], [True, True, True, True, False], retrieve, judge="actor")
    judged_texts, judged_config = sampler.calls[0]
    assert len(judged_texts) == 4 and judged_config.max_new_tokens == 33  # one call, guided only
    assert judged_texts[0] == critic.render_judge_compact(goals[0], eps[0].first_observation,
                                                          "ENTRY 0")
    assert [e.judgement for e in eps] == [Judgement("accept"), Judgement("refine", "NOTE B"),
                                         Judgement("reject"), Judgement(None), None]
    assert [e.experience for e in eps] == ["ENTRY 0", "NOTE B", None, None, None]
    assert [e.retrieved for e in eps] == ["ENTRY 0", "ENTRY 1", "ENTRY 2", "ENTRY 3", None]
    assert [e.experience_id for e in eps[:4]] == [0, 1, 2, 3]  # still credited to the entry
    turn_prompts = [tok.decode(e.turns[0].prompt_ids) for e in eps]
    assert "exp: ENTRY 0" in turn_prompts[0] and "exp: NOTE B" in turn_prompts[1]
    assert all("exp:" not in p for p in turn_prompts[2:])
    m = batch_metrics(eps)
    assert m["critic_accept"] == m["critic_refine"] == m["critic_reject"] == 0.25
    assert m["critic_unreadable"] == 0.25 and m["critic_s_per_entry"] >= 0
    assert m["experience_found"] == 1.0  # retrieval found all four; the actor kept two


def test_unjudged_rollout_is_unchanged_and_reports_no_verdicts():
    tok = CharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    sampler = JudgingSampler(tok, {})
    engine = RolloutEngine(sampler, tok, RolloutConfig(max_turns=1, history=1))
    ep = engine.play([env], [0], [True], lambda q, k: [("ENTRY", 5)])[0]
    assert ep.experience == ep.retrieved == "ENTRY" and ep.judgement is None
    assert len(sampler.calls) == 1 and "critic_accept" not in batch_metrics([ep])


def test_verdict_credits_reach_the_entry_that_was_judged():
    bank, manager = plan_writing_manager()
    with bank, manager:
        first = manager.submit_episode(EpisodeRecord("g", "t", True, "x")).result(5)
        entry = first.added_ids[0]
        for won, credit in ((True, 2.0), (False, 0.0), (True, None)):  # accept, reject, unreadable
            manager.submit_episode(EpisodeRecord("g", "t", won, "x", entry, 1, judged=True,
                                                 judged_credit=credit)).result(5)
        manager.submit_episode(EpisodeRecord("g", "t", False, "x", entry, 1)).result(5)  # unjudged
        assert manager.training_buffer.sample(first.sample_key).outcomes == [2.0, 0.0, -1.0]


def test_warm_start_teaches_accepting_own_plans_and_rejecting_others():
    tok = CharTokenizer()
    demo = warmstart.Demo("alfworld", 0, "put a mug in shelf", ["You see a shelf 1.", "ok"],
                          ["put mug 1 in/on shelf 1"], True, "pick")
    own = dataclasses.replace(demo, experience="put a mug in shelf: go to shelf 1",
                                        source="own")
    noisy = dataclasses.replace(own, source="noisy1")
    peer = dataclasses.replace(demo, experience="put a pen in desk: go to desk 2",
                                         source="peer")

    def judged(demos, fraction):
        samples = warmstart.actor_sft_samples(demos, tok, 1, np.random.default_rng(0),
                                              recovery_fraction=0.0, judge_fraction=fraction)
        return [tok.decode(s.tokens) for s in samples if "judge: " in tok.decode(s.tokens)]

    other = dataclasses.replace(demo, goal="put a pen in desk", actions=["put pen 1 in/on desk 2"])
    got = judged([own, noisy, peer, other], 1.0)
    # own and noisy: accepted, each with another game's plan rejected; peer: rejected
    assert [t.rsplit("judge: ", 1)[1] for t in got] == ["accept", "reject", "accept", "reject",
                                                        "reject"]
    assert got[4].startswith(critic.render_judge_compact(peer.goal, "You see a shelf 1.",
                                                         peer.experience))
    assert got[1].startswith(critic.render_judge_compact(
        own.goal, "You see a shelf 1.", "put a pen in desk: put pen 1 in/on desk 2"))
    # a line naming another object, or a seen peer's, is not the game's plan either
    for source in ("swap", "peerseen"):
        foreign = dataclasses.replace(peer, source=source)
        assert [t.rsplit("judge: ", 1)[1] for t in judged([foreign], 1.0)] == ["reject"]
    assert judged([own, noisy, peer, demo], 0.0) == []
    # At 0 no judging draw is made: the other samples are those of a warm start without it.
    plain = warmstart.actor_sft_samples([own, peer, demo], tok, 1, np.random.default_rng(3))
    zero = warmstart.actor_sft_samples([own, peer, demo], tok, 1, np.random.default_rng(3),
                                       judge_fraction=0.0)
    assert [s.tokens for s in plain] == [s.tokens for s in zero]


def test_config_checks_and_warm_start_key():
    from experiments.configs import load_preset
    from crl_jax.training.warm_cache import warm_start_key

    cfg = load_preset("alfworld_cpu")
    with pytest.raises(ValueError, match="judge_fraction"):
        dataclasses.replace(cfg, warm_start=dataclasses.replace(cfg.warm_start, judge_fraction=2.0))
    with pytest.raises(ValueError, match="actor_critic"):
        dataclasses.replace(cfg, experience=dataclasses.replace(cfg.experience, mode="none",
                                                                actor_critic=True))
    judging = dataclasses.replace(cfg, warm_start=dataclasses.replace(cfg.warm_start,
                                                                      judge_fraction=0.5))
    assert warm_start_key(judging) != warm_start_key(cfg)
    assert isinstance(cfg, RunConfig)


def test_a_run_with_the_actor_critic_logs_verdicts_and_their_latency(tmp_path):
    """alfworld_cpu, shrunk, with the oracle as retrieval (every guided
    episode finds an entry, so every step judges some)."""
    from crl_jax.training.loop import run_training
    from crl_jax.training.metrics import read_metrics
    from tests.training.test_runs import _config

    cfg = _config("alfworld_cpu", tmp_path, ["experience.mode=oracle", "experience.actor_critic=true",
                                            "warm_start.judge_fraction=1.0", "train.steps=1",
                                            "train.eval_every=1", "train.checkpoint_every=1"])
    run_training(cfg, str(tmp_path))
    rows = read_metrics(str(tmp_path / "metrics.jsonl"))
    train = [r for r in rows if "train/success" in r]
    assert train
    for row in train:
        shares = [row[f"train/critic_{v}"] for v in ("accept", "refine", "reject", "unreadable")]
        assert sum(shares) == pytest.approx(1.0)
        assert row["train/critic_s_per_entry"] > 0 and row["train/retrieval_s_per_query"] > 0
        assert 0 <= row["train/critic_kept_own_goal"] <= 1  # the oracle's entries are own plans
    assert rows[-1]["eval_with_exp/critic_s_per_entry"] > 0
    assert "eval_no_exp/critic_accept" not in rows[-1]


def test_chat_format_judging_prompt_and_stop():
    from tests.rl.test_tools_and_distillation import ChatCharTokenizer, ScriptedSampler

    tok = ChatCharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    sampler = ScriptedSampler(tok, [['<answer>{"verdict": "refine", "note": "NOTE"}</answer>',
                                     "<think>ok</think><action>look</action>"]])
    seen = []
    generate = sampler.generate
    sampler.generate = lambda p, c, **k: (seen.append((tok.decode(p[0]), c)), generate(p, c, **k))[1]
    engine = RolloutEngine(sampler, tok, RolloutConfig(max_turns=1, format="chat",
                                                       max_new_tokens=40, max_prompt_tokens=4000))
    ep = engine.play([env], [0], [True], lambda q, k: [("ENTRY", 3)], judge="actor")[0]
    prompt, config = seen[0]
    assert prompt.startswith(f"<system>{critic.JUDGE_SYSTEM}") and "Retrieved note:\nENTRY" in prompt
    assert config.stop_strings == ("</answer>",)
    assert ep.judgement == Judgement("refine", "NOTE") and ep.experience == "NOTE"
    assert "NOTE" in tok.decode(ep.turns[0].prompt_ids)


def test_goal_match_control_accepts_exactly_the_own_goal():
    assert critic.goal_verdict("put a mug in shelf", "put a mug in shelf: go to shelf 1") == \
        Judgement("accept")
    assert critic.goal_verdict("put a mug in shelf", "put a pen in desk: go to desk 1") == \
        Judgement("reject")
    assert critic.goal_verdict("put a mug in shelf", "put a mug in shelf") == Judgement("reject")
    tok = CharTokenizer()
    envs = [make_env("alfworld", split="generated", num_generated=4, seed=0) for _ in range(2)]
    goals = [env.reset(t)[1].goal for env, t in zip(envs, [0, 1])]
    sampler = JudgingSampler(tok, {})
    engine = RolloutEngine(sampler, tok, RolloutConfig(max_turns=1, history=1))
    entries = [f"{goals[0]}: go to shelf 1", f"{goals[0]}: go to shelf 1"]  # task 1 reads task 0's
    eps = engine.play(envs, [0, 1], [True, True], lambda q, k: [(e, i) for i, e in enumerate(entries)],
                      judge="goal")
    assert [e.judgement.verdict for e in eps] == ["accept", "reject"]
    assert [e.experience for e in eps] == [entries[0], None]
    assert len(sampler.calls) == 1  # no judging call: only the turn
    with pytest.raises(ValueError, match="valid: actor, goal"):
        engine.play(envs[:1], [0], [True], lambda q, k: [("x: y", 1)], judge="oracle")
