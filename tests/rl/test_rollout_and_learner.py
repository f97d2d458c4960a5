"""Token-exact trajectories and the learner's wiring, on a tiny model."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from crl_jax.rl import prompts

from crl_jax.training import warmstart
from crl_jax.envs.registry import make_env
from crl_jax.rl.batch import Sample, pack_samples
from crl_jax.rl.learner import Learner, OptimConfig
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from kernels.logprobs import naive_token_logprobs
from kernels.policy_losses import PolicyLossConfig, policy_loss
from models.config import DecoderConfig
from models.decoder import init_decoder
from models.sampler import Sampler


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    env = make_env("alfworld", split="generated", num_generated=6, seed=3)
    demos = warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15)
    tok = warmstart.train_env_tokenizer(demos, 300, str(tmp_path_factory.mktemp("tok")), 1)
    cfg = DecoderConfig(family="qwen3", vocab_size=tok.vocab_size, hidden_size=32,
                        intermediate_size=64, num_layers=2, num_heads=4, num_kv_heads=2,
                        head_dim=8, tie_embeddings=True, qk_norm=True, eos_token_id=tok.eos_id)
    return env, tok, init_decoder(cfg, seed=0)


def test_training_tokens_are_the_sampled_tokens(setup):
    env, tok, model = setup
    rcfg = RolloutConfig(max_turns=3, max_new_tokens=6, history=1, list_actions="non_navigation")
    engine = RolloutEngine(Sampler(model, pad_id=tok.pad_id), tok, rcfg)
    envs = [make_env("alfworld", split="generated", num_generated=6, seed=3) for _ in range(2)]
    episodes = engine.play(envs, [0, 1], [False, False], seed=5)
    learner = Learner(model, OptimConfig(lr=1e-3, micro_batch=2), PolicyLossConfig())
    for ep in episodes:
        assert 1 <= ep.num_actions <= 3
        samples = ep.samples([0.5] * ep.num_actions)
        for turn, sample in zip(ep.turns, samples):
            # Prompt: exactly the rendered text's tokens; answer: the sampled ids.
            n_p = len(turn.prompt_ids)
            assert sample.tokens[:n_p] == turn.prompt_ids
            assert sample.tokens[n_p:] == turn.action_ids
            assert sample.loss_mask == [0] * n_p + [1] * len(turn.action_ids)
            assert prompts.parse_action(turn.text, "compact") == turn.action
        packed = pack_samples(samples, tok.pad_id, micro_batch=2)
        # The sampler's log-probs are the model's log-probs of those very
        # tokens at those very positions (after the next-token shift).
        recomputed = learner.logprobs(packed)
        m = packed.loss_mask > 0
        np.testing.assert_allclose(recomputed[m], packed.old_logprobs[m], atol=2e-4)
        assert m.sum() == sum(len(t.action_ids) for t in ep.turns)


def test_prompt_keeps_last_real_observation_after_rejected_action(setup):
    env, tok, model = setup
    obs, info = env.reset(0)
    step = env.step("do a barrel roll")
    assert step.info.invalid_action
    view = prompts.TurnView(info.goal, obs, (("do a barrel roll", step.observation),))
    text = prompts.render_actor_compact(view)
    assert f"obs: {obs.strip()[:50]}" in text  # verbatim, the last real observation
    assert "did: do a barrel roll -> Nothing happens." in text


def _batch(tok_vocab, rng, n=6):
    samples = []
    for i in range(n):
        p = rng.integers(3, tok_vocab, size=int(rng.integers(3, 9))).tolist()
        a = rng.integers(3, tok_vocab, size=int(rng.integers(1, 5))).tolist()
        lp = np.concatenate([np.zeros(len(p)), -rng.uniform(0.5, 3.0, size=len(a))])
        samples.append(Sample(p + a, [0] * len(p) + [1] * len(a), lp, float(rng.normal())))
    return samples


def test_micro_batch_count_does_not_recompile(setup):
    """Batches of 2 and 3 micro-batches (same length bucket) run the same
    compiled programs: the number of micro-batches varies every RL step."""
    _, tok, model = setup
    samples = _batch(tok.vocab_size, np.random.default_rng(1))
    learner = Learner(model, OptimConfig(lr=1e-3, micro_batch=2), PolicyLossConfig())
    for n in (4, 4):  # the first step's inputs are the caller's arrays; later ones the step's own
        learner.policy_step(pack_samples(samples[:n], tok.pad_id, micro_batch=2, length_bucket=16))
    sizes = (learner._grads._cache_size(), learner._apply._cache_size())
    m = learner.policy_step(pack_samples(samples[:6], tok.pad_id, micro_batch=2, length_bucket=16))
    assert (learner._grads._cache_size(), learner._apply._cache_size()) == sizes
    assert np.isfinite(m["loss"]) and m["tokens_or_seqs"] > 0


def test_policy_step_loss_and_micro_batching(setup):
    _, tok, model = setup
    rng = np.random.default_rng(0)
    samples = _batch(tok.vocab_size, rng)
    loss_cfg = PolicyLossConfig.split_grpo_released()
    results = []
    for mb in (1, 2, 6):
        learner = Learner(model, OptimConfig(lr=1e-2, micro_batch=mb, grad_clip=0.0), loss_cfg)
        packed = pack_samples(samples, tok.pad_id, micro_batch=mb)
        before = jax.tree.map(np.asarray, learner.params)
        m = learner.policy_step(packed)
        results.append((m["loss"], jax.tree.map(np.asarray, learner.params)))
    # Independent reference: naive log-probs + the unfused loss on the full batch.
    packed = pack_samples(samples, tok.pad_id, micro_batch=6)
    hidden, _ = model.hidden_states(jnp.asarray(packed.tokens), input_mask=jnp.asarray(packed.input_mask))
    lp = naive_token_logprobs(hidden, model.unembedding(), jnp.asarray(packed.targets))
    out = policy_loss(lp, jnp.asarray(packed.old_logprobs), jnp.asarray(packed.advantages),
                      jnp.asarray(packed.loss_mask), loss_cfg)
    want = float(out.loss_sum / out.count)
    for loss, params in results:
        assert abs(loss - want) < 1e-5
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(results[-1][1])):
            np.testing.assert_allclose(a, b, atol=1e-4)
    changed = any(np.abs(a - b).max() > 1e-4
                  for a, b in zip(jax.tree.leaves(results[0][1]), jax.tree.leaves(before)))
    assert changed


def test_sft_step_lowers_the_loss_on_its_batch(setup):
    _, tok, model = setup
    samples = _batch(tok.vocab_size, np.random.default_rng(1), n=4)
    learner = Learner(model, OptimConfig(lr=3e-3, micro_batch=4))
    packed = pack_samples(samples, tok.pad_id, micro_batch=4)
    losses = [learner.sft_step(packed)["loss"] for _ in range(15)]
    assert losses[-1] < 0.7 * losses[0]


def test_learning_rate_schedule_replaces_the_constant_rate(setup):
    # A schedule that is zero after the first update: the first step moves
    # the weights, the second leaves them exactly where they were.
    _, tok, model = setup
    learner = Learner(model, OptimConfig(lr=3e-3, micro_batch=4), donate=False)
    learner.reset_optimizer(learner.optim, lambda count: jnp.where(count < 1, 3e-3, 0.0))
    packed = pack_samples(_batch(tok.vocab_size, np.random.default_rng(1), n=4), tok.pad_id, 4)
    start = jax.tree.map(np.asarray, learner.params)
    learner.sft_step(packed)
    first = jax.tree.map(np.asarray, learner.params)
    learner.sft_step(packed)
    assert any(not np.array_equal(a, b) for a, b in
               zip(jax.tree.leaves(start), jax.tree.leaves(first)))
    assert all(np.array_equal(a, np.asarray(b)) for a, b in
               zip(jax.tree.leaves(first), jax.tree.leaves(learner.params)))


def test_warm_start_rate_falls_along_a_cosine_to_its_end_fraction(setup, monkeypatch):
    from crl_jax.training import setup as run_setup
    _, tok, model = setup
    learner, seen = Learner(model, OptimConfig(lr=1e-6, micro_batch=4)), []
    real = learner.reset_optimizer
    monkeypatch.setattr(learner, "reset_optimizer",
                        lambda optim, schedule=None: (seen.append(schedule), real(optim, schedule)))
    samples = _batch(tok.vocab_size, np.random.default_rng(1), n=4)
    run_setup.supervised_warm_start(learner, samples, 2e-3, 10, 4, tok.pad_id,
                                    np.random.default_rng(0), "test", lr_end=0.1)
    schedule = seen[0]
    # Hand-computed: lr * (end + (1 - end) * (1 + cos(pi * t / T)) / 2).
    assert float(schedule(0)) == pytest.approx(2e-3)
    assert float(schedule(5)) == pytest.approx(2e-3 * 0.55)
    assert float(schedule(10)) == pytest.approx(2e-4)
    assert seen[1] is None and learner.optim.lr == 1e-6  # the RL rate, constant, restored
    seen.clear()
    run_setup.supervised_warm_start(learner, samples, 2e-3, 2, 4, tok.pad_id,
                                    np.random.default_rng(0), "test")
    assert seen == [None, None]  # lr_end 1: the constant rate, as before


def test_undonated_learner_leaves_a_concurrent_samplers_weights_alive(setup):
    # The extractor is sampled (consolidation thread) while it trains (its own
    # thread): its learner must not donate the parameters the sampler holds.
    from models.sampling_ops import SamplingConfig
    _, tok, model = setup
    samples = _batch(tok.vocab_size, np.random.default_rng(2), n=2)
    packed = pack_samples(samples, tok.pad_id, micro_batch=2)
    for donate in (False, True):
        learner = Learner(model, OptimConfig(lr=1e-3, micro_batch=2), PolicyLossConfig(),
                          donate=donate)
        sampler = Sampler(learner.model, pad_id=tok.pad_id)
        learner.policy_step(packed)
        if donate:  # the old buffers are gone: exactly the failure seen in a run
            with pytest.raises(Exception, match="deleted|donated"):
                sampler.generate([[5, 6]], SamplingConfig(max_new_tokens=2))
        else:
            out = sampler.generate([[5, 6]], SamplingConfig(max_new_tokens=2))
            assert len(out.tokens[0]) == 2
    # A learner owns copies: the model it was built from stays usable.
    logits, _ = model(jnp.asarray([[5, 6]]))
    assert np.isfinite(np.asarray(logits)).all()


def test_decision_repeat_copies_only_decisive_demo_turns(setup):
    env, tok, _ = setup
    demos = warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15)
    wins = [d for d in demos if d.won]
    decisive = sum(warmstart.is_decision(a) for d in wins for a in d.actions)
    total = sum(len(d.actions) for d in wins)
    assert 0 < decisive < total  # experts both navigate and act
    kw = dict(history=1, recovery_fraction=0.0)
    once = warmstart.actor_sft_samples(demos, tok, rng=np.random.default_rng(0), **kw)
    thrice = warmstart.actor_sft_samples(demos, tok, rng=np.random.default_rng(0),
                                         decision_repeat=3, **kw)
    assert len(once) == total and len(thrice) == total + 2 * decisive
    # the copies are exact duplicates of the decisive samples
    key = lambda s: tuple(s.tokens)
    assert {key(s) for s in thrice} == {key(s) for s in once}
    assert warmstart.is_decision("take apple 1 from countertop 2")
    assert not warmstart.is_decision("go to countertop 2")
    with pytest.raises(ValueError, match="decision_repeat"):
        warmstart.actor_sft_samples(demos, tok, 1, np.random.default_rng(0), decision_repeat=0)


def test_line_states_reads_plan_and_lesson_steps():
    lesson = "mug: go to countertop 2 > go to sinkbasin 1 (room: countertop 2, sinkbasin 1)"
    assert warmstart.line_states(lesson, "go to countertop 2")
    assert warmstart.line_states(lesson, "go to sinkbasin 1")
    assert not warmstart.line_states(lesson, "go to countertop 1")  # another instance
    assert not warmstart.line_states(lesson, "go to countertop")  # a step, not a prefix
    plan = "put a mug in cabinet: go to countertop 2 > take mug 1 from countertop 2"
    assert warmstart.line_states(plan, "take mug 1 from countertop 2")
    assert not warmstart.line_states(plan, "put a mug in cabinet")  # the goal is no step


def test_line_repeat_copies_only_guided_turns_the_line_states(setup):
    env, tok, _ = setup
    demos = [d for d in warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15) if d.won]
    # the first two demos guided by a line naming their first and last action
    # (and one action they never take); the third free
    guided = [dataclasses.replace(d, experience=f"{d.goal}: {d.actions[0]} > go to nowhere 9 > "
                                                f"{d.actions[-1]}") for d in demos[:2]]
    mixed = guided + demos[2:]
    named = sum(warmstart.line_states(d.experience, a) for d in guided for a in d.actions)
    assert named >= 2  # at least each guided demo's first action
    total = sum(len(d.actions) for d in mixed)
    kw = dict(history=1, recovery_fraction=0.0)
    once = warmstart.actor_sft_samples(mixed, tok, rng=np.random.default_rng(0), **kw)
    four = warmstart.actor_sft_samples(mixed, tok, rng=np.random.default_rng(0), line_repeat=4,
                                       **kw)
    assert len(once) == total and len(four) == total + 3 * named
    assert {tuple(s.tokens) for s in four} == {tuple(s.tokens) for s in once}  # copies only
    # free demos' turns are never copied, whatever their action
    free = warmstart.actor_sft_samples(demos, tok, rng=np.random.default_rng(0), line_repeat=4,
                                       **kw)
    assert len(free) == sum(len(d.actions) for d in demos)
    with pytest.raises(ValueError, match="line_repeat"):
        warmstart.actor_sft_samples(demos, tok, 1, np.random.default_rng(0), line_repeat=0)


def test_extractor_sft_teaches_plans_for_wins_and_return_for_cut_short_episodes(setup):
    env, tok, _ = setup
    demos = [d for d in warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15) if d.won]
    samples = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(0),
                                              failure_fraction=1.0, shown_fraction=1.0)
    assert len(samples) == 2 * len(demos)  # every demo, then its cut-short copy
    for i, d in enumerate(demos):
        for s, won in ((samples[2 * i], True), (samples[2 * i + 1], False)):
            n_prompt = s.loss_mask.index(1)
            prompt, answer = tok.decode(s.tokens[:n_prompt]), tok.decode(s.tokens[n_prompt:])
            assert ("outcome: success" in prompt) == won and f"goal: {d.goal}" in prompt
            assert "[0] " in prompt  # entries of other demos are shown
            want = warmstart.extractor_response(warmstart.plan_entry(d) if won else None)
            assert answer.replace(" ", "").startswith(want.replace(" ", ""))
        # the failure copy's trajectory is a strict prefix of the demo's actions
        cut = tok.decode(samples[2 * i + 1].tokens)
        assert d.actions[0] in cut
    none = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(0),
                                           failure_fraction=0.0, shown_fraction=0.0)
    assert len(none) == len(demos) and all("[0] " not in tok.decode(s.tokens) for s in none)


def test_misstep_demos_show_rejected_actions_and_still_teach_the_clean_plan(setup):
    env, tok, _ = setup
    demos = [d for d in warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15) if d.won]
    rng = np.random.default_rng(4)
    pool = [a for d in demos for a in d.actions]
    for d in demos:
        noisy = warmstart.with_missteps(d, 2, rng, pool)
        assert len(noisy.actions) == len(d.actions) + 2
        assert len(noisy.observations) == len(d.observations) + 2
        assert len(noisy.valid) == len(d.valid) + 2
        # removing the two rejected steps gives back the demo, step for step
        kept = [(a, o) for a, o in zip(noisy.actions, noisy.observations[1:])
                if o != warmstart.REJECTED]
        assert kept == list(zip(d.actions, d.observations[1:]))
        assert noisy.observations[0] == d.observations[0] and noisy.won and d.won
    # at 0 nothing is drawn: the default warm start's samples are unchanged
    plain = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(0))
    assert [s.tokens for s in warmstart.extractor_sft_samples(
        demos, tok, np.random.default_rng(0), misstep_fraction=0.0)] == [s.tokens for s in plain]
    # without cut copies and shown entries: each demo, then its copy with missteps
    pairs = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(0),
                                            failure_fraction=0.0, shown_fraction=0.0,
                                            misstep_fraction=1.0)
    assert len(pairs) == 2 * len(demos)
    for i, d in enumerate(demos):
        clean, noisy = pairs[2 * i], pairs[2 * i + 1]
        split = [s.loss_mask.index(1) for s in (clean, noisy)]
        assert clean.tokens[split[0]:] == noisy.tokens[split[1]:]  # the same plan answer
        assert tok.decode(noisy.tokens[split[1]:]).replace(" ", "").startswith(
            warmstart.extractor_response(warmstart.plan_entry(d)).replace(" ", ""))
        prompt = tok.decode(noisy.tokens[:split[1]])
        assert prompt != tok.decode(clean.tokens[:split[0]])
        assert "Nothing happens." in prompt or "..." in prompt  # (unless clipped away)


def test_ask_opening_demos_render_as_the_rollout_renders_an_ask(setup):
    """Warm-start views of a demo opened by a search-and-ask call equal what
    the rollout engine shows after the same ask turn and the same actions."""
    from types import SimpleNamespace
    from crl_jax.envs.base import StepInfo
    from crl_jax.rl.rollout import Episode, Turn
    env, tok, _ = setup
    demo = next(d for d in warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2], 15) if d.won)
    for history, first in ((2, True), (1, False)):
        cfg = RolloutConfig(history=history, list_actions="non_navigation",
                            show_first_observation=first)
        engine = SimpleNamespace(config=cfg)
        opening = warmstart.ask_opening(demo, "plan of a peer")
        ep = Episode(task=0, task_key="k", goal=demo.goal, guided=False,
                     first_observation=demo.observations[0])
        ep.turns.append(Turn([], [], np.zeros(0), opening[0][0] + " ", None, opening[0][1], 0.0,
                             (), False, None, warmstart.ask_query(demo)))
        for t, action in enumerate(demo.actions):
            info = StepInfo(won=False, admissible_actions=tuple(demo.valid[t]), goal=demo.goal)
            seen = RolloutEngine._view(engine, ep, demo.observations[t], info)
            taught = warmstart.demo_view(demo, t, history, cfg.list_actions, first, None, opening)
            assert prompts.render_actor_compact(taught) == prompts.render_actor_compact(seen), t
            ep.turns.append(Turn([], [], np.zeros(0), action, action, demo.observations[t + 1],
                                 0.0, (), False))
    assert prompts.parse_ask(opening[0][0], "compact") == demo.goal


def test_ask_fraction_adds_ask_turns_and_leaves_the_default_warm_start_alone(setup):
    env, tok, _ = setup
    demos = warmstart.collect_demos("alfworld", lambda: env, [0, 1, 2, 3, 4, 5], 15)
    kw = dict(history=2, list_actions="non_navigation", show_first_observation=True)

    def actor(**extra):
        return warmstart.actor_sft_samples(demos, tok, rng=np.random.default_rng(5), **kw, **extra)

    def targets(samples):
        return [tok.decode([t for t, m in zip(s.tokens, s.loss_mask) if m][:-1]) for s in samples]

    plain = actor()
    assert [s.tokens for s in actor(ask_fraction=0.0)] == [s.tokens for s in plain]
    asked = targets(actor(ask_fraction=1.0))
    wins = [d for d in demos if d.won]
    assert sum(t.startswith("ask: ") for t in asked) == len(wins)  # one per unguided demo
    assert not any(t.startswith("ask: ") for t in targets(plain))
    # the extractor: identity rewrites of an entry of the same task type
    ext = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(1), ask_fraction=1.0)
    rewrites = [t for t in targets(ext) if t.startswith('{"entry"')]
    assert len(rewrites) == len(demos)
    plain_ext = warmstart.extractor_sft_samples(demos, tok, np.random.default_rng(1))
    assert [s.tokens for s in warmstart.extractor_sft_samples(
        demos, tok, np.random.default_rng(1), ask_fraction=0.0)] == [s.tokens for s in plain_ext]


def test_ask_advice_in_history_keeps_an_experience_lines_length():
    advice = "advice: " + "go north then east " * 12
    view = prompts.TurnView("g", "obs", (("ask: g", advice), ("north", "x" * 150)))
    text = prompts.render_actor_compact(view, exp_chars=200)
    did = [line for line in text.splitlines() if line.startswith("did: ")]
    assert did[0] == "did: ask: g -> " + advice[:197] + "..."
    assert did[1] == "did: north -> " + "x" * 77 + "..."  # other replies: 80 characters


def test_extractor_agent_counts_answers_cut_by_its_cap(setup):
    """An answer that fills max_new_tokens without a stop token was cut
    (answers_at_cap); one that stopped, however long, was not. A trajectory
    longer than the compact prompt shows is counted as clipped."""
    import dataclasses
    import json
    import types
    from crl_jax.experience import ExtractionRequest
    from crl_jax.rl.extractor import ExtractorAgent
    _, tok, model = setup
    learner = Learner(model, OptimConfig(lr=1e-3, micro_batch=2), PolicyLossConfig())
    agent = ExtractorAgent(learner, tok, max_new_tokens=4)
    word = tok.encode("look")[0]
    answers = iter([[word] * 4,                     # cut at the cap
                    [word] * 3 + [tok.eos_id],      # stopped on its last allowed token
                    [word, tok.eos_id]])            # stopped early
    agent.sampler = types.SimpleNamespace(
        generate=lambda ids, sampling, rng: types.SimpleNamespace(tokens=[next(answers)]))
    request = ExtractionRequest("consolidate", (), "put a mug in the sink", "look -> ok", True)
    long = dataclasses.replace(request, trajectory=" | ".join(["go to desk 1 -> ok"] * 40))
    for r in (request, long, request):
        agent(r)
    assert agent.stats["answers_at_cap"] == 1
    assert agent.stats["generated_tokens"] == 4 + 4 + 2
    assert agent.stats["trajectories_clipped"] == 1  # 40 steps of 20 characters: over 700
    # the totals are checkpointed with the call count, so a resumed run's metrics continue
    again = ExtractorAgent(learner, tok, max_new_tokens=4)
    again.load_state_dict(json.loads(json.dumps(agent.state_dict())))
    assert again.stats == agent.stats and again.state_dict() == agent.state_dict()
    again.load_state_dict({"calls": 3})  # a checkpoint from before the totals
    assert not again.stats
