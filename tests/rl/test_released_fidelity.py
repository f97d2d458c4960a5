"""The `released` profile of the paper presets, checked on one ALFWorld task
played with fixed answers: the prompt's structure, what is parsed and sent,
the episode's trained tokens and mask, its advantages (released: r - mean per
guided/free subgroup; paper: also / std) and the seq-mean-token-mean weights,
all against values worked out by hand here."""
import numpy as np
import pytest

from crl_jax.envs.registry import make_env, make_expert
from crl_jax.rl import released_prompts as rp
from crl_jax.rl.batch import pack_samples
from crl_jax.rl.rollout import RolloutEngine
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from crl_jax.training.step import actor_samples
from kernels.aggregation import aggregation_weights
from tests.rl.scripted import ContinuesConversations
from models.tokenizer import load_tokenizer
from models.tokenizer_training import train_lossless_tokenizer

ENTRY = "<title>put toiletpaper on toilet</title><content>look in the cabinets first</content>"
ADVICE = "the toiletpaper is in cabinet 2"


def think(action: str) -> str:
    return f"<think>I plan the next step.</think>\n<answer>{action}</answer>"


def released_plan() -> tuple[str, list[str]]:
    """Task 0's goal and a winning plan, written with the released templates
    ("put X on Y" where the engine says "move X to Y")."""
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    _, info = env.reset(0)
    expert, plan = make_expert("alfworld"), []
    expert.reset()
    for _ in range(30):
        action = expert.act(env)
        plan.append(action)
        step = env.step(action)
        if step.info.won:
            break
    assert step.info.won
    return info.goal, [a.replace("move ", "put ").replace(" to ", " on ") if a.startswith("move ")
                       else a for a in plan]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    corpus = [rp.ALFWORLD_SYSTEM, rp.EXPERIENCE_HEADING, rp.tool_instructions(2), ENTRY, ADVICE,
              think("go to cabinet 2"), "Observation:\nYou arrive at cabinet 2. Search results:",
              "You are in the middle of a room. Looking quickly around you, you see"] * 20
    out = tmp_path_factory.mktemp("tok")
    return load_tokenizer(train_lossless_tokenizer(corpus, 600, out, kind="bpe"))


class Scripted(ContinuesConversations):
    """Answers the k-th call with answers[k] (every row), stopped right after
    its closing tag as the stop strings stop real sampling; log-probs -0.01 a token."""

    def __init__(self, tok, answers):
        self.tok, self.answers, self.calls = tok, answers, 0

    def generate(self, prompts, config, rng=0, decode=None, state=None):
        prompts = self.whole(prompts, state)
        text = self.answers[min(self.calls, len(self.answers) - 1)]
        assert text.endswith(config.stop_strings)
        ids = self.tok.encode(text)
        self.calls += 1
        return self.result(prompts, [list(ids) for _ in prompts],
                           [np.full(len(ids), -0.01) for _ in prompts],
                           ["stop_string"] * len(prompts))


def play(tok, cfg, answers, guided):
    env = make_env("alfworld", split="generated", num_generated=2, seed=0,
                   lenient_actions=cfg.env.lenient_actions)
    engine = RolloutEngine(Scripted(tok, answers), tok, cfg.rollout)
    ep = engine.play([env], [0], [guided], retrieve=lambda q, k: [(ENTRY, 7)] * len(q),
                     ask=lambda q, k: [(ADVICE, f"ask-{i}") for i in range(len(q))])[0]
    return ep, env


@pytest.fixture(scope="module")
def episodes(tok):
    """Four episodes of task 0 (K = 4: 2 guided, 2 free) under the released profile."""
    cfg = apply_overrides(load_preset("alfworld"), ["rollout.max_turns=4"])
    goal, plan = released_plan()
    long_cfg = apply_overrides(cfg, [f"rollout.max_turns={len(plan)}"])
    won_guided, env = play(tok, long_cfg, [think(a) for a in plan], True)
    bad_guided, _ = play(tok, cfg, [think("go to toilet 1"), think("examine toilet 1")], True)
    asked_free, _ = play(tok, cfg, [f"<{rp.ASK_TAG}>where is the toiletpaper?</{rp.ASK_TAG}>",
                                    think("go to cabinet 1")], False)
    won_free, _ = play(tok, long_cfg, [think(a) for a in plan], False)
    return cfg, goal, plan, env, [won_guided, bad_guided, asked_free, won_free]


def test_the_prompt_is_the_released_structure(tok, episodes):
    cfg, goal, plan, env, (won_guided, bad_guided, asked_free, won_free) = episodes
    system, first = won_guided.messages[0], won_guided.messages[1]
    # Experience in the system message, numbered, under its heading; the
    # nine templates listed; the <think>/<answer> format asked for.
    assert system == {"role": "system", "content": f"{rp.ALFWORLD_SYSTEM}\n\n"
                      f"{rp.EXPERIENCE_HEADING}\n\n1. {ENTRY}"}
    assert "3. put {obj} in/on {recep}" in system["content"]
    assert "<answer>your action</answer>" in system["content"]
    assert won_free.messages[0]["content"] == rp.ALFWORLD_SYSTEM  # free: no experience
    # The first user message: room, tool instructions, task; no banner.
    assert first["content"].startswith("Observation:\nYou are in the middle of a room.")
    assert "-= Welcome" not in first["content"] and rp.tool_instructions(2) in first["content"]
    assert first["content"].endswith(f"Your task is: {goal}")
    # Later user messages: the observation alone, never a list of valid actions.
    assert won_guided.messages[3] == {"role": "user", "content":
                                      f"Observation:\n{won_guided.turns[0].observation}\n"}
    assert not any("Valid actions" in m["content"] for m in won_guided.messages)
    # The conversation is token-exact: the last prompt is the chat template's
    # rendering of every message so far.
    last = won_guided.turns[-1]
    assert tok.decode(last.prompt_ids) == tok.apply_chat_template(won_guided.messages,
                                                                  add_generation_prompt=True)


def test_answers_are_parsed_and_sent_as_released(episodes):
    cfg, goal, plan, env, (won_guided, bad_guided, asked_free, won_free) = episodes
    assert won_guided.won and won_free.won and len(won_guided.turns) == len(plan)
    # "put X on Y" is read as the template's "put X in/on Y", which the
    # engine (ALFWorld 0.4) receives as "move X to Y".
    put = won_guided.turns[-1]
    assert put.action.startswith("put ") and " in/on " in put.action
    assert env.last_action.startswith("move ") and " to " in env.last_action
    # A well-formed answer that is no template ends the episode: -1.
    assert bad_guided.format_failed and len(bad_guided.turns) == 2
    assert bad_guided.turns[-1].action is None
    # A tool call is answered as the next observation and takes a turn;
    # the turn cap (4) then ends the episode unfinished.
    assert asked_free.turns[0].asked == "where is the toiletpaper?"
    assert asked_free.messages[3]["content"] == f"Observation:\nSearch results: {ADVICE}\n"
    assert len(asked_free.turns) == 4 and not asked_free.won and not asked_free.format_failed


def test_trained_tokens_advantages_and_weights(tok, episodes):
    cfg, goal, plan, env, eps = episodes
    # Rewards +1, -1 (format failure), -1 (turn cap), +1. Released: r minus
    # its subgroup's mean, no std: guided (+1, -1) -> (+1, -1), free (-1, +1)
    # -> (-1, +1). Paper profile: / std (ddof 1) = sqrt(2).
    paper = apply_overrides(load_preset("alfworld:paper"), [])
    for profile_cfg, scale in ((cfg, 1.0), (paper, 2 ** -0.5)):
        samples = actor_samples(eps, profile_cfg)
        assert len(samples) == 4
        for sample, ep, want in zip(samples, eps, (1.0, -1.0, -1.0, 1.0)):
            last = ep.turns[-1]
            assert sample.tokens == last.prompt_ids + last.action_ids
            mask = np.zeros(len(sample.tokens))
            for turn in ep.turns:  # exactly the sampled answers are trained
                start = len(turn.prompt_ids)
                assert sample.tokens[start:start + len(turn.action_ids)] == turn.action_ids
                mask[start:start + len(turn.action_ids)] = 1
            np.testing.assert_array_equal(sample.loss_mask, mask)
            np.testing.assert_allclose(np.asarray(sample.advantage)[mask == 1], want * scale,
                                       rtol=1e-5)
    assert (cfg.actor_loss.ratio_level, paper.actor_loss.ratio_level) == ("token", "sequence")
    # seq-mean-token-mean: each episode's answer tokens weigh 1 / (its answer
    # tokens), and the batch counts 4 sequences.
    packed = pack_samples(samples, tok.pad_id, 4)
    weights, count = aggregation_weights(packed.loss_mask, cfg.actor_loss.aggregation)
    weights = np.asarray(weights)
    assert float(count) == 4
    for row, ep in enumerate(eps):
        n = sum(len(t.action_ids) for t in ep.turns)
        np.testing.assert_allclose(weights[row][weights[row] > 0], 1 / n, rtol=1e-6)
        assert int((weights[row] > 0).sum()) == n


def test_a_minihack_format_failure_costs_only_its_turn(tok):
    cfg = apply_overrides(load_preset("minihack_room"), ["rollout.max_turns=2"])
    env = make_env("MiniHack-Room-Ultimate-5x5-v0", seed=0)
    engine = RolloutEngine(Scripted(tok, ["<answer>jump</answer>", "<answer>n</answer>"]), tok,
                           cfg.rollout)
    ep = engine.play([env], [0], [False])[0]
    assert [t.action for t in ep.turns] == [None, "north"]
    assert ep.turns[0].invalid and not ep.format_failed  # the episode went on
    assert ep.messages[0]["content"] == rp.MINIHACK_SYSTEM
    assert ep.messages[1]["content"].startswith(rp.MINIHACK_INSTRUCTION)
    assert ep.messages[3]["content"].endswith("choose your next action:\n")
