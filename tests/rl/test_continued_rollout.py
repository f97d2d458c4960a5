"""Conversations that continue their KV cache (rollout.continue_cache) play
exactly the rollout that re-encodes the whole conversation every turn: the
same greedy tokens, log-probs and episodes, with rows ending at different
turns, a row stopped by the conversation limit, search-and-ask turns, and
two processes sharing one batch; an ended row never comes back."""
import threading
import zlib

import numpy as np
import pytest

from crl_jax.envs.base import StepInfo, StepResult
from crl_jax.rl import prompts
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from models.cache_rows import continued_cache_slots
from models.config import tiny_config
from models.decoder import init_decoder
from models.distributed import ProcessShare
from models.sampler import Sampler
from models.tokenizer import load_tokenizer
from models.tokenizer_training import train_lossless_tokenizer

TASKS = [2, 5, 3, 7, 1, 6]  # each corridor's length: its episode ends after that many steps
LONG = 5  # this task's observations are long: its conversation meets the limit first


class Corridor:
    """A text game that ends (won) after ``task`` steps; task LONG's
    observations are long, the others' short."""

    name = "corridor"

    def reset(self, task):
        self.task, self.steps = task, 0
        return f"You stand at the start of corridor {task}.", self._info(False)

    def step(self, action):
        self.steps += 1
        done = self.steps >= self.task
        words = " ".join(["the walls are grey and the floor is long"] * (12 if self.task == 6 else 1))
        return StepResult(f"You {action} to door {self.steps}; {words}.", float(done), done,
                          self._info(done))

    def _info(self, won):
        return StepInfo(won=won, admissible_actions=("walk ahead", "wait here", "look around"),
                        goal=f"reach the end of corridor {self.task}", task_id=str(self.task))

    def close(self):
        pass


def scripted_parse(text, fmt, style, env_name, valid_actions=()):
    """A tiny random model never writes a well-formed answer; this reads one
    from its text (the same text, the same reading), so that episodes ask,
    fail to act and step."""
    h = zlib.crc32(text.encode())
    if h % 5 == 0:
        return "where does the corridor end", None
    if h % 5 == 1:
        return None, None
    return None, valid_actions[h % len(valid_actions)]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    corpus = [prompts.ACTOR_SYSTEM, "You walk ahead to door 3; the walls are grey.",
              "reach the end of corridor 4. Valid actions: walk ahead, wait here"] * 20
    return load_tokenizer(train_lossless_tokenizer(corpus, 400, tmp_path_factory.mktemp("t"),
                                                   kind="bpe"))


@pytest.fixture(scope="module")
def model(tok):
    return init_decoder(tiny_config("qwen3", vocab_size=tok.vocab_size, num_layers=2), seed=3)


class RecordingSampler(Sampler):
    """Records each call's batch size and the rows each continued call kept."""

    def __init__(self, model):
        super().__init__(model, prompt_bucket=16, cache_bucket=64, new_tokens_bucket=8)
        self.batches, self.kept = [], []

    def generate(self, batch, config, **kw):
        self.batches.append(len(batch))
        return super().generate(batch, config, **kw)

    def select_rows(self, state, rows):
        self.kept.append(list(rows))
        return super().select_rows(state, rows)


class ThreadShare(ProcessShare):
    """Process ``index`` of 2, played in a thread; gather exchanges objects
    through a shared board as the real collective would."""

    def __init__(self, index, board):
        super().__init__(index, 2)
        object.__setattr__(self, "board", board)

    def gather(self, obj):
        slots, barrier = self.board
        slots[self.index] = obj
        barrier.wait()
        out = list(slots)
        barrier.wait()
        return out


def play(model, tok, continued, limit=4096, processes=1, ask=True):
    cfg = RolloutConfig(format="chat", conversation=True, continue_cache=continued,
                        max_turns=8, max_new_tokens=12, max_prompt_tokens=limit,
                        temperature=0.0, max_asks=2)
    asker = (lambda q, k: [(f"advice on {x}", None) for x in q]) if ask else None
    if processes == 1:
        engine = RolloutEngine(RecordingSampler(model), tok, cfg, share=ProcessShare(0, 1))
        eps = engine.play([Corridor() for _ in TASKS], TASKS, [False] * len(TASKS), ask=asker)
        return eps, engine
    board, out = ([None, None], threading.Barrier(2)), {}

    def run(index):
        engine = RolloutEngine(RecordingSampler(model), tok, cfg, share=ThreadShare(index, board))
        out[index] = engine.play([Corridor() for _ in TASKS], TASKS, [False] * len(TASKS),
                                 ask=asker)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out[0]) == len(out[1]) == len(TASKS)
    return out[0], None


def assert_same_episodes(got, want):
    for a, b in zip(got, want):
        assert len(a.turns) == len(b.turns)
        assert (a.won, a.done) == (b.won, b.done)
        for s, t in zip(a.turns, b.turns):
            assert s.prompt_ids == t.prompt_ids and s.action_ids == t.action_ids
            assert (s.action, s.observation, s.asked) == (t.action, t.observation, t.asked)
            np.testing.assert_allclose(s.logprobs, t.logprobs, atol=1e-4)


@pytest.fixture(scope="module")
def reencoded(model, tok):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(prompts, "parse_turn", scripted_parse)
        full, _ = play(model, tok, continued=False)
        # The conversation limit: task LONG's turn 3 prompt fits, turn 4's does not.
        limit = len(full[LONG].turns[3].prompt_ids)
        eps, engine = play(model, tok, continued=False, limit=limit)
    return limit, eps, engine


def test_the_workload_has_what_it_should(reencoded):
    limit, eps, _ = reencoded
    lengths = [len(ep.turns) for ep in eps]
    assert len(set(lengths)) >= 4  # rows end at different turns
    assert len(eps[LONG].turns) == 4 and not eps[LONG].won  # stopped by the limit
    assert any(t.asked for ep in eps for t in ep.turns)  # search-and-ask turns
    assert any(t.invalid and t.asked is None for ep in eps for t in ep.turns)  # no action


def test_continued_rollout_equals_reencoded(model, tok, reencoded, monkeypatch):
    limit, want, plain = reencoded
    monkeypatch.setattr(prompts, "parse_turn", scripted_parse)
    got, engine = play(model, tok, continued=True, limit=limit)
    assert_same_episodes(got, want)
    # The same answers from far fewer prefilled tokens.
    a, b = engine.sampling_stats, plain.sampling_stats
    assert a["tokens"] == b["tokens"] and a["prefilled"] < b["prefilled"] / 2
    # Each turn's batch is its live episodes; an ended row never returns.
    live = [sum(len(ep.turns) > t for ep in got) for t in range(8)]
    assert engine.sampler.batches == [n for n in live if n]
    kept = [set(range(len(TASKS)))]
    for rows in engine.sampler.kept:
        assert len(rows) == len(set(rows)) and max(rows, default=0) < len(kept[-1])
        kept.append(rows)
    assert [len(r) for r in engine.sampler.kept] == [n for n in live[1:] if n]
    # The dry run's size of the continued cache holds (sampler buckets 16, 64, 8).
    assert a["max_slots"] <= continued_cache_slots(limit, 12, 16, 64, 8)


def test_two_processes_continue_one_batch_as_one_process_reencodes(model, tok, reencoded,
                                                                   monkeypatch):
    limit, want, _ = reencoded
    monkeypatch.setattr(prompts, "parse_turn", scripted_parse)
    got, _ = play(model, tok, continued=True, limit=limit, processes=2)
    assert_same_episodes(got, want)


def test_a_prompt_rendered_afresh_each_turn_always_reencodes(model, tok, monkeypatch):
    """A windowed history (no conversation) is no extension of the last
    prompt: every turn sends its whole prompt and no cache is kept."""
    monkeypatch.setattr(prompts, "parse_turn", scripted_parse)
    cfg = RolloutConfig(format="chat", conversation=False, continue_cache=True, max_turns=3,
                        max_new_tokens=8, temperature=0.0, history=1)
    engine = RolloutEngine(RecordingSampler(model), tok, cfg, share=ProcessShare(0, 1))
    eps = engine.play([Corridor() for _ in TASKS[:2]], TASKS[:2], [False, False])
    assert engine.sampler.kept == [] and engine._cache is None
    sent = sum(len(t.prompt_ids) for ep in eps for t in ep.turns)
    assert engine.sampling_stats["prefilled"] == sent
