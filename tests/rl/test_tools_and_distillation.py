"""Search-and-ask inside rollouts and self-distillation samples, with a
scripted actor (a stand-in sampler that answers from a script)."""
import numpy as np
import pytest

from crl_jax.envs.registry import make_env
from crl_jax.rl.episode_stats import self_distillation_samples, turn_advantages
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from crl_jax.training.config import AdvantageSpec
from tests.rl.scripted import ContinuesConversations


class CharTokenizer:
    eos_id, pad_id, eos_ids = 1, 0, frozenset({1})

    def encode(self, text):
        return [ord(c) % 250 + 2 for c in text]

    def decode(self, ids):
        return "".join(chr(i - 2) for i in ids if i >= 2)


class ScriptedSampler(ContinuesConversations):
    """Answers row i with script[i][turn] (as ids), log-prob -0.5 a token."""

    def __init__(self, tok, script):
        self.tok, self.script, self.calls = tok, script, 0

    def generate(self, prompts, config, rng=0, decode=None, state=None):
        prompts = self.whole(prompts, state)
        self.prompts = prompts
        rows = [self.tok.encode(s[min(self.calls, len(s) - 1)]) + [1] for s in self.script]
        self.calls += 1
        rows = rows[:len(prompts)]
        return self.result(prompts, rows, [np.full(len(r), -0.5) for r in rows],
                           ["eos"] * len(rows))


def test_search_and_ask_turn_does_not_step_the_world():
    tok = CharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    script = [["ask: where is it", "ask: again", "ask: third", "look"]]
    sampler = ScriptedSampler(tok, script)
    engine = RolloutEngine(sampler, tok, RolloutConfig(max_turns=4, history=2, max_asks=2))
    asked = []

    def ask(queries, keys):
        asked.extend(queries)
        return [("check the shelves", "ask-key-1") for _ in queries]

    ep = engine.play([env], [0], [False], ask=ask)[0]
    assert asked == ["where is it", "again"]  # at most max_asks calls
    assert [t.asked for t in ep.turns[:2]] == ["where is it", "again"]
    assert ep.turns[0].observation == "advice: check the shelves"
    assert ep.turns[2].asked is None and ep.turns[2].invalid  # "ask: third" went to the env
    assert ep.num_actions == 2 and ep.num_asks == 2 and ep.ask_keys == ["ask-key-1"] * 2
    # The advice is in the prompt of the next turn.
    assert "advice: check the shelves" in tok.decode(ep.turns[1].prompt_ids)
    # Every turn, asks included, gets an advantage and a training sample.
    adv = turn_advantages([ep, ep], AdvantageSpec(mode="grpo"))
    assert len(adv[0]) == len(ep.turns) == len(ep.samples(adv[0]))


def test_self_distillation_uses_winning_guided_turns_without_experience():
    tok = CharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    engine = RolloutEngine(ScriptedSampler(tok, [["look"], ["look"]]), tok,
                           RolloutConfig(max_turns=2, history=1))
    eps = engine.play([env, make_env("alfworld", split="generated", num_generated=2, seed=0)],
                      [0, 0], [True, False], retrieve=lambda q, k: [("EXPERIENCE TEXT", 7)])
    guided, free = eps
    assert guided.experience == "EXPERIENCE TEXT"
    assert "EXPERIENCE TEXT" in tok.decode(guided.turns[0].prompt_ids)
    assert self_distillation_samples(eps, engine.prompt_ids) == []  # no better than free
    guided.won = True  # pretend the guided episode won
    guided.turns[-1].reward = 1.0
    samples = self_distillation_samples(eps, engine.prompt_ids)
    assert len(samples) == len(guided.turns)
    for s, t in zip(samples, guided.turns):
        assert "EXPERIENCE TEXT" not in tok.decode(s.tokens)
        assert s.tokens[-len(t.action_ids):] == t.action_ids  # the answer as sampled
        assert s.loss_mask == [0] * (len(s.tokens) - len(t.action_ids)) + [1] * len(t.action_ids)


def _episode(task, guided, won, events_per_turn):
    from crl_jax.rl.rollout import Episode, Turn
    ep = Episode(task=task, task_key="alfworld", goal="g", guided=guided, won=won,
                 subtasks=("locate", "take", "place"), env_name="alfworld")
    for ev in events_per_turn:
        ep.turns.append(Turn([5], [6], np.zeros(1), "x", "x", "o", 0.0, tuple(ev), False))
    return ep


def test_sdae_gives_partial_progress_credit_per_turn():
    # Same task, one subgroup: a win, a failure that located the object at
    # turn 1, and a failure with no progress.
    eps = [_episode(0, False, True, [("locate",), ("take",), ("place",)]),
           _episode(0, False, False, [(), ("locate",), ()]),
           _episode(0, False, False, [(), (), ()])]
    plain = turn_advantages(eps, AdvantageSpec(mode="grpo"))
    sdae = turn_advantages(eps, AdvantageSpec(mode="grpo", sdae=True, sdae_mix=1.0))
    assert [len(a) for a in sdae] == [3, 3, 3]
    # Without SDAE every turn of an episode shares one value; the two failures tie.
    assert np.allclose(plain[1], plain[2]) and np.ptp(plain[0]) == 0
    # With SDAE the failure that located the object gets more credit on the
    # turns up to the locate event than the failure without progress.
    assert sdae[1][:2].sum() > sdae[2][:2].sum()
    assert np.isfinite(np.concatenate(sdae)).all()


def test_episode_weighting_gives_every_episode_the_same_total_weight():
    # A short win (2 turns) and a long failure (6 turns) of one task, GRPO with
    # the mean only: episode advantages +0.5 and -0.5 (hand-computed).
    eps = [_episode(0, False, True, [(), ("place",)]), _episode(0, False, False, [()] * 6)]
    spec = dict(mode="grpo", normalize_std=False)
    per_turn = turn_advantages(eps, AdvantageSpec(**spec, turn_weighting="turn"))
    balanced = turn_advantages(eps, AdvantageSpec(**spec, turn_weighting="episode"))
    assert np.allclose(per_turn[0], 0.5) and np.allclose(per_turn[1], -0.5)
    # Per turn, the failure outweighs the win 3:1; balanced (scale mean_len / T
    # with mean_len = 4), each episode's turns sum to +-2.
    assert np.isclose(per_turn[0].sum(), 1.0) and np.isclose(per_turn[1].sum(), -3.0)
    assert np.allclose(balanced[0], 1.0) and np.allclose(balanced[1], -1.0 / 3)
    assert np.isclose(balanced[0].sum(), 2.0) and np.isclose(balanced[1].sum(), -2.0)


def test_negative_weight_scales_only_negative_advantages():
    eps = [_episode(0, False, True, [(), ("place",)]), _episode(0, False, False, [()] * 2)]
    spec = dict(mode="grpo", normalize_std=False)
    full = turn_advantages(eps, AdvantageSpec(**spec))
    tenth = turn_advantages(eps, AdvantageSpec(**spec, negative_weight=0.1))
    assert np.allclose(full[0], 0.5) and np.allclose(full[1], -0.5)
    assert np.allclose(tenth[0], 0.5) and np.allclose(tenth[1], -0.05)


def test_rejected_turns_get_no_credit_from_a_win_and_the_penalty():
    from crl_jax.rl.rollout import Turn
    eps = [_episode(0, False, True, [(), (), ("place",)]), _episode(0, False, False, [()] * 3)]
    rejected = lambda: Turn([5], [6], np.zeros(1), "x", "x", "o", 0.0, (), True)
    eps[0].turns[0] = rejected()  # a rejected action inside the win
    eps[1].turns[1] = rejected()  # and inside the failure
    spec = dict(mode="grpo", normalize_std=False)  # hand-computed: win +0.5, failure -0.5
    base = turn_advantages(eps, AdvantageSpec(**spec))
    assert np.allclose(base[0], 0.5) and np.allclose(base[1], -0.5)
    nocredit = turn_advantages(eps, AdvantageSpec(**spec, rejected_turn_credit=False))
    assert np.allclose(nocredit[0], [0.0, 0.5, 0.5]) and np.allclose(nocredit[1], -0.5)
    both = turn_advantages(eps, AdvantageSpec(**spec, rejected_turn_credit=False,
                                              invalid_action_penalty=0.2))
    assert np.allclose(both[0], [-0.2, 0.5, 0.5]) and np.allclose(both[1], [-0.5, -0.7, -0.5])
    with pytest.raises(ValueError, match="invalid_action_penalty"):
        from crl_jax.training.config import RunConfig
        RunConfig(advantages=AdvantageSpec(invalid_action_penalty=-1.0))


def test_empty_answers_ablation_answers_nothing_without_touching_the_bank():
    """controls.ask_answers="nothing": the ask turn still costs a turn, its
    reply says nothing was found, and the bank is never searched."""
    from types import SimpleNamespace

    from crl_jax.training.config_io import apply_overrides

    from experiments.configs import load_preset
    from crl_jax.training.step import ask

    cfg = apply_overrides(load_preset("minihack_room_cpu"), ["experience.search_and_ask=true",
                                                             "controls.ask_answers=nothing"])

    class NoBank:
        def search_and_ask(self, *args):
            raise AssertionError("the bank was asked")

    fake = SimpleNamespace(cfg=cfg, manager=NoBank())
    tok = CharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    engine = RolloutEngine(ScriptedSampler(tok, [["ask: where is it", "look"]]), tok,
                           RolloutConfig(max_turns=2, history=2, max_asks=2))
    ep = engine.play([env], [0], [False], ask=lambda q, k: ask(fake, 0, q, k))[0]
    assert ep.turns[0].asked == "where is it" and ep.num_asks == 1 and ep.ask_keys == []
    assert ep.turns[0].observation == "advice: nothing found"
    assert "advice: nothing found" in tok.decode(ep.turns[1].prompt_ids)
    with pytest.raises(ValueError, match="ask_answers"):
        apply_overrides(cfg, ["controls.ask_answers=bank"])


def test_progress_counts_every_episode_once_when_it_ends():
    tok = CharTokenizer()
    envs = [make_env("alfworld", split="generated", num_generated=3, seed=0) for _ in range(3)]
    script = [["look at everything there is here"], ["look"], ["go"]]
    engine = RolloutEngine(ScriptedSampler(tok, script), tok,
                           RolloutConfig(max_turns=3, history=1, token_budget=10))
    calls = []
    episodes = engine.play(envs, [0, 1, 2], [False] * 3, progress=calls.append)
    ended_at = [len(ep.turns) for ep in episodes]
    assert ended_at == [1, 2, 3]  # the token budget ends the first two
    # An episode's end is reported when the next turn starts (every process's
    # ends are known then); the last turn's, with the cap's, at the end.
    assert calls == [1, 1, 1]


class ChatCharTokenizer(CharTokenizer):
    def apply_chat_template(self, messages, add_generation_prompt=True):
        return "\n".join(f"<{m['role']}>{m['content']}" for m in messages) + "\n<assistant>"


class StepLog:
    """An environment that records every action sent to it."""

    def __init__(self, env):
        self.env, self.sent = env, []

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, action):
        self.sent.append(action)
        return self.env.step(action)


@pytest.mark.parametrize("fmt, answers", [
    ("chat", ["I should look around first.", "<think>ok</think><action>look</action>"]),
    ("compact", ["", "look"]),
])
def test_an_answer_without_an_action_never_reaches_the_world(fmt, answers):
    """Both formats: the answer is a rejected turn whose observation says no
    action was found (the same text), nothing is sent to the environment, and
    the next prompt still shows the world as it was."""
    tok = ChatCharTokenizer()
    env = StepLog(make_env("alfworld", split="generated", num_generated=2, seed=0))
    first, _ = env.env.reset(0)
    engine = RolloutEngine(ScriptedSampler(tok, [answers]), tok,
                           RolloutConfig(max_turns=2, history=2, format=fmt, max_new_tokens=40))
    ep = engine.play([env], [0], [False])[0]
    assert env.sent == ["look"]
    bad = ep.turns[0]
    assert bad.action is None and bad.invalid and bad.reward == 0.0
    assert bad.observation == "No action found in the answer; nothing happened."
    assert ep.turns[1].view.observation == first  # the world did not move
    assert ep.turns[1].action == "look" and not ep.turns[1].invalid
