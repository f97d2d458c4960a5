"""Whole-episode training (rollout.conversation, train.sample_unit=episode):
each turn's prompt extends the last prompt and answer token for token, the
conversation reads back as the chat template renders it, and the episode's
one sample trains exactly the sampled tokens with their turn's advantage."""
import numpy as np
import pytest

from crl_jax.envs.registry import make_env
from crl_jax.rl import prompts
from crl_jax.rl.batch import pack_samples
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from crl_jax.training.step import actor_samples
from tests.rl.scripted import ContinuesConversations
from models.tokenizer import load_tokenizer
from models.tokenizer_training import train_lossless_tokenizer

ANSWERS = ["<think>first look</think><action>look</action>",
           "I am not sure what to do",  # no action: the turn is rejected, the episode goes on
           "<action>inventory</action>"]


@pytest.fixture(scope="module", params=["bpe", "sentencepiece"])
def chat_tok(request, tmp_path_factory):
    corpus = [prompts.ACTOR_SYSTEM, *ANSWERS, "You are in the middle of a room. Observation: "
              "You arrive at countertop 1. Valid actions: go to, take, look, inventory"] * 30
    out = tmp_path_factory.mktemp(request.param)
    return load_tokenizer(train_lossless_tokenizer(corpus, 500, out, kind=request.param))


class Scripted(ContinuesConversations):
    """Answers every row with ANSWERS[turn] + the end-of-turn token; log-prob
    -(k + 1) / 100 for the k-th token of a call, so each turn's are distinct."""

    def __init__(self, tok, end_id):
        self.tok, self.end_id, self.calls, self.prompts = tok, end_id, 0, []

    def generate(self, prompts, config, rng=0, decode=None, state=None):
        prompts = self.whole(prompts, state)
        self.prompts.append(prompts)
        ids = self.tok.encode(ANSWERS[min(self.calls, len(ANSWERS) - 1)]) + [self.end_id]
        self.calls += 1
        lp = -(np.arange(len(ids)) + 1 + 100 * self.calls) / 100
        return self.result(prompts, [list(ids) for _ in prompts], [lp.copy() for _ in prompts],
                           ["eos"] * len(prompts))


def _play(tok, max_prompt_tokens=4096, turns=3):
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    end = tok.encode("<|im_end|>")[0]
    engine = RolloutEngine(Scripted(tok, end), tok,
                           RolloutConfig(max_turns=turns, format="chat", conversation=True,
                                         max_new_tokens=64, max_prompt_tokens=max_prompt_tokens))
    return engine, engine.play([env], [0], [False])[0]


def test_each_prompt_extends_the_last_and_reads_as_the_template_renders_it(chat_tok):
    engine, ep = _play(chat_tok)
    assert len(ep.turns) == 3 and ep.turns[1].invalid and ep.turns[1].observation == prompts.NO_ACTION
    for before, after in zip(ep.turns, ep.turns[1:]):
        n = len(before.prompt_ids) + len(before.action_ids)
        assert after.prompt_ids[:n] == before.prompt_ids + before.action_ids
        assert len(after.prompt_ids) > n
    # The token-exact conversation is the template's rendering of the chat
    # (system, first user message, then answer / observation pairs).
    assert ep.messages[2] == {"role": "assistant", "content": ANSWERS[0]}
    assert ep.messages[3]["content"].startswith(f"Observation:\n{ep.turns[0].observation}")
    assert ep.messages[5]["content"].startswith(f"Observation:\n{prompts.NO_ACTION}")
    want = chat_tok.apply_chat_template(ep.messages, add_generation_prompt=True)
    assert chat_tok.decode(ep.turns[2].prompt_ids) == want
    assert engine.sampler.prompts[2][0] == ep.turns[2].prompt_ids  # what the actor was given


def test_one_sample_trains_exactly_the_sampled_tokens_with_their_turn_advantage(chat_tok):
    _, ep = _play(chat_tok)
    sample = ep.trajectory_sample([0.5, -1.0, 2.0])
    last = ep.turns[-1]
    assert sample.tokens == last.prompt_ids + last.action_ids
    mask, adv = np.asarray(sample.loss_mask), np.asarray(sample.advantage)
    want_mask, want_adv, want_lp = np.zeros(len(mask)), np.zeros(len(mask)), np.zeros(len(mask))
    for turn, a in zip(ep.turns, [0.5, -1.0, 2.0]):
        s = len(turn.prompt_ids)
        want_mask[s:s + len(turn.action_ids)] = 1
        want_adv[s:s + len(turn.action_ids)] = a
        want_lp[s:s + len(turn.action_ids)] = turn.logprobs
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_allclose(adv, want_adv)
    np.testing.assert_allclose(sample.old_logprobs, want_lp, rtol=1e-6)
    assert mask.sum() == sum(len(t.action_ids) for t in ep.turns)
    packed = pack_samples([sample], chat_tok.pad_id, 1)
    assert packed.loss_mask.sum() == mask.sum()  # shifted for next-token prediction, none lost


def test_per_turn_episodes_cannot_make_a_whole_episode_sample(chat_tok):
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    engine = RolloutEngine(Scripted(chat_tok, 5), chat_tok,
                           RolloutConfig(max_turns=2, format="chat", max_new_tokens=64))
    ep = engine.play([env], [0], [False])[0]
    with pytest.raises(ValueError, match="rollout.conversation"):
        ep.trajectory_sample([1.0, 1.0])


def test_a_conversation_that_outgrows_the_prompt_ends_there(chat_tok):
    _, full = _play(chat_tok)
    limit = len(full.turns[1].prompt_ids)  # turn 1 fits, turn 2 would not
    _, ep = _play(chat_tok, max_prompt_tokens=limit)
    assert len(ep.turns) == 2 and ep.done and not ep.won


def test_a_template_that_rewrites_earlier_turns_is_refused(chat_tok):
    class Forgetful:  # drops earlier answers from the chat, as some templates do
        def __getattr__(self, name):
            return getattr(chat_tok, name)

        def apply_chat_template(self, messages, add_generation_prompt=True):
            kept = [m for m in messages if m["role"] != "assistant" or m is messages[-1]]
            return chat_tok.apply_chat_template(kept, add_generation_prompt)

    with pytest.raises(ValueError, match="rewrites earlier turns"):
        _play(Forgetful())


def test_settings_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="format=chat"):
        RolloutConfig(conversation=True)
    cfg = load_preset("alfworld_cpu")
    with pytest.raises(ValueError, match="rollout.conversation"):
        apply_overrides(cfg, ["train.sample_unit=episode"])
    # Checks across sections see every override, in either order.
    both = ["train.sample_unit=episode", "rollout.conversation=true"]
    for order in (both, both[::-1]):
        got = apply_overrides(load_preset("alfworld"), order)
        assert (got.train.sample_unit, got.rollout.conversation) == ("episode", True)


def test_the_step_builds_one_sample_per_episode(chat_tok):
    _, ep = _play(chat_tok)
    _, other = _play(chat_tok, turns=1)
    ep.won, other.won = True, False
    ep.task = other.task = 0
    cfg = apply_overrides(load_preset("alfworld_cpu"),
                          ["rollout.format=chat", "rollout.conversation=true",
                           "train.sample_unit=episode", "advantages.sdae=false"])
    samples = actor_samples([ep, other], cfg)
    assert len(samples) == 2
    per_turn = actor_samples([ep, other], apply_overrides(cfg, ["train.sample_unit=turn"]))
    assert len(per_turn) == 4  # 3 turns + 1
    # Two free episodes of one task, rewards 1 and 0: (r - 0.5) / std(ddof 1)
    # = +-1/sqrt(2); the preset scales negatives by 0.3 and gives the winner's
    # rejected turn (turn 1, no action) no credit. Turn by turn, on its tokens:
    want = {0: [2 ** -0.5, 0.0, 2 ** -0.5], 1: [-0.3 * 2 ** -0.5]}
    for sample, episode, k in ((samples[0], ep, 0), (samples[1], other, 1)):
        adv = np.asarray(sample.advantage)
        for turn, a in zip(episode.turns, want[k]):
            s = len(turn.prompt_ids)
            np.testing.assert_allclose(adv[s:s + len(turn.action_ids)], a, rtol=1e-5)
