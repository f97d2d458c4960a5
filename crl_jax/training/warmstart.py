"""Warm start for the tiny CPU models: expert demonstrations, a tokenizer
trained on environment text, and supervised data for both models.

The actor learns to imitate the expert from compact prompts, part of them
carrying an experience line its actions depend on (crl_jax/training/
guided_demos.py), so it learns to read one. The extractor learns to turn a
trajectory into an operation: a successful one into an Add of a compact
plan entry, a failed one into Return. RL then improves both; the warm start
is kept short so it has room to.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence

import numpy as np

from crl_jax.envs.alfworld_lessons import lesson_steps
from crl_jax.envs.registry import make_expert
from crl_jax.rl import critic, prompts
from crl_jax.rl.batch import Sample

NAVIGATION = ("go to", "look", "inventory", "examine")


# Guided sources whose line is not the demo's own game's plan (another game's,
# or the own plan naming another object; crl_jax/training/guided_demos.py),
# nor its household's lesson for its goal (crl_jax/training/lesson_demos.py):
# the expert ignores it, and a judging warm start teaches rejecting it.
FOREIGN_SOURCES = ("peer", "peerseen", "swap", "lessonpeer", "lessonswap")


@dataclasses.dataclass
class Demo:
    env_name: str
    task: object
    goal: str
    observations: list[str]  # o_0 .. o_T
    actions: list[str]  # a_0 .. a_{T-1}
    won: bool
    task_type: str = ""
    valid: list = dataclasses.field(default_factory=list)  # admissible actions before each action
    experience: str | None = None  # the line a guided demonstration shows (None: free)
    source: str = ""  # where that line came from (guided_demos: own, noisyK, FOREIGN_SOURCES)


def play_expert(env, task, expert, max_turns: int, env_name: str) -> Demo:
    """One episode of ``expert`` on ``task`` (``expert.act(env)`` each turn)."""
    obs, info = env.reset(task)
    expert.reset()
    observations, actions, valid, won = [obs], [], [tuple(info.admissible_actions)], False
    for _ in range(max_turns):
        action = expert.act(env)
        step = env.step(action)
        actions.append(action)
        observations.append(step.observation)
        valid.append(tuple(step.info.admissible_actions))
        won = won or step.info.won
        if step.done or step.info.won:
            break
    return Demo(env_name, task, info.goal, observations, actions, bool(won),
                str(info.extra.get("task_type", "")), valid)


def collect_demos(env_name: str, make: Callable[[], object], tasks: Sequence, max_turns: int,
                  expert_name: str | None = None,
                  on_episode: Callable[[], None] | None = None) -> list[Demo]:
    """Plays the registered expert on each task (one environment, reused);
    ``on_episode()`` is called after each (progress)."""
    env, expert = make(), make_expert(expert_name or env_name)
    demos = []
    for task in tasks:
        demos.append(play_expert(env, task, expert, max_turns, env_name))
        if on_episode is not None:
            on_episode()
    env.close()
    return demos


def plan_entry(demo: Demo, max_actions: int = 12) -> str:
    """A compact experience entry from a successful demonstration: the goal
    and the decisive actions, as a plan to follow. Navigation is collapsed
    except the walk to where something was taken or used (``walks_kept``):
    where things are is what a plan knows and a searcher does not, and a
    tiny actor copies a step it can read verbatim ("go to countertop 2") but
    does not derive it from "take apple 1 from countertop 2"
    (docs/FINDINGS.md, "Reading diagnostics")."""
    kept = walks_kept(demo.actions)
    key = [a for i, a in enumerate(demo.actions) if is_decision(a) or i in kept]
    steps = key[:max_actions] or demo.actions[:max_actions]
    return f"{demo.goal}: " + " > ".join(steps)


_FETCH = ("take ", "use ")  # actions done where the thing they need lies


def walks_kept(actions: Sequence[str]) -> set[int]:
    """Indices of the "go to" that last precedes each take or use: the walk to
    where the object (or the lamp) was (see plan_entry for why plans keep it)."""
    kept, last_walk = set(), None
    for i, a in enumerate(actions):
        if a.startswith("go to "):
            last_walk = i
        elif a.startswith(_FETCH) and last_walk is not None:
            kept.add(last_walk)
            last_walk = None
    return kept


def extractor_response(entry: str | Sequence[str] | None) -> str:
    """A consolidation reply adding ``entry`` (or each of several), or
    returning when there is none."""
    entries = [entry] if isinstance(entry, str) else list(entry or ())
    return json.dumps([{"op": "add", "entry": e} for e in entries] or [{"op": "return"}])


def _wrong_action(action: str, later: Sequence[str], pool: Sequence[str],
                  rng: np.random.Generator) -> str:
    """A plausible mistake: a later action of the same demonstration taken too
    early (the commonest error of a weak actor, e.g. taking the target before
    reaching it), this action with a wrong number, or another demo's action."""
    u = rng.random()
    premature = [a for a in later if a != action]
    if u < 1 / 3 and premature:
        return premature[int(rng.integers(len(premature)))]
    if u < 2 / 3 and any(ch.isdigit() for ch in action):
        return "".join(str(int(rng.integers(1, 10))) if ch.isdigit() else ch for ch in action)
    return pool[int(rng.integers(len(pool)))]


REJECTED = "Nothing happens."  # ALFWorld's answer to an action it rejects


def with_missteps(demo: Demo, k: int, rng: np.random.Generator, pool: Sequence[str]) -> Demo:
    """``demo`` with ``k`` rejected actions put into its trajectory, each
    before a random turn: a mistake as ``_wrong_action`` makes one (taken too
    early, a wrong number, another demo's action), answered "Nothing
    happens." and changing nothing. Expert trajectories never show such
    steps and the actor's in RL often do; the plan of the game stays the
    clean demo's (``plan_entry(demo)``)."""
    actions, observations, valid = list(demo.actions), list(demo.observations), list(demo.valid)
    for _ in range(k):
        t = int(rng.integers(len(actions)))
        actions.insert(t, _wrong_action(actions[t], actions[t + 1:], pool, rng))
        observations.insert(t + 1, REJECTED)
        if valid:
            valid.insert(t, valid[t])
    return dataclasses.replace(demo, actions=actions, observations=observations, valid=valid)


def demo_view(d: Demo, t: int, history: int, list_actions: str, show_first_observation: bool,
              experience: str | None = None, opening: tuple = ()) -> prompts.TurnView:
    """What the actor sees before the demo's action t, as a rollout renders it.
    ``opening``: (text, reply) turns played before the first action that left
    the world as it was (a search-and-ask call and its advice)."""
    done = tuple(opening) + tuple(zip(d.actions[:t], d.observations[1:t + 1]))
    hist = done[-history:] if history else ()
    listed = prompts.listed_actions(d.valid[t], list_actions) if d.valid else ()
    first = d.observations[0] if show_first_observation and done else ""
    return prompts.TurnView(d.goal, d.observations[t], hist, experience, listed, first)


def ask_query(demo: Demo) -> str:
    """What a warm-started actor asks the search-and-ask tool: its goal."""
    return demo.goal


def ask_opening(demo: Demo, advice: str) -> tuple[tuple[str, str], ...]:
    """The search-and-ask turn that opens a demonstration, as rollout history
    shows it: the call, and the tool's reply."""
    return ((f"{prompts.ASK_PREFIX} {ask_query(demo)}", f"advice: {advice}"),)


def actor_sft_samples(demos: Sequence[Demo], tokenizer, history: int, rng: np.random.Generator,
                      list_actions: str = "none", recovery_fraction: float = 0.2,
                      obs_chars: int = 240, show_first_observation: bool = False,
                      decision_repeat: int = 1, ask_fraction: float = 0.0,
                      judge_fraction: float = 0.0, line_repeat: int = 1) -> list[Sample]:
    """(compact prompt, expert action + EOS) pairs from winning demonstrations.

    A guided demonstration (``demo.experience`` set, see guided_demos.py)
    shows its line in every prompt. With
    ``ask_fraction``, that share of the unguided ones opens with a
    search-and-ask call ("ask: <goal>") answered by such an entry, which stays
    in the history of the turns after it, so the actor learns to call the tool
    when it starts without experience. A fraction of
    turns is duplicated with a rejected wrong action in the history ("did: X
    -> Nothing happens.", as the rollout renders it), so the actor learns to
    recover from its own mistakes, which expert data never shows. Turns whose
    action is not navigation (`is_decision`) appear ``decision_repeat`` times,
    and a guided demonstration's turns whose action its line states
    (`line_states`) ``line_repeat`` times (the two multiply).
    With ``judge_fraction``, that share of guided demonstrations also gives a
    judging sample (the Actor-Critic variant, crl_jax/rl/critic.py): its line
    accepted when it is the game's own plan (exact or with wrong steps),
    rejected when it is another game's; an accepted line comes with a second
    sample rejecting another game's plan of the same task type (a bank mostly
    returns other games' entries, so the actor must learn to turn them down)."""
    if decision_repeat < 1 or line_repeat < 1:
        raise ValueError(f"decision_repeat and line_repeat must be >= 1, got "
                         f"{decision_repeat} and {line_repeat}")
    wins = [d for d in demos if d.won]
    by_type: dict[str, list[Demo]] = {}
    for d in wins:
        by_type.setdefault(d.task_type, []).append(d)
    all_actions = [a for d in wins for a in d.actions] or ["look"]
    plans = {id(d): plan_entry(d) for d in wins} if judge_fraction > 0 else {}
    samples = []
    for d in wins:
        experience, opening = d.experience, ()
        peers = [p for p in by_type[d.task_type] if p is not d] or [d]
        if experience is None and ask_fraction > 0 and rng.random() < ask_fraction:  # no draw at 0
            opening = ask_opening(d, plan_entry(peers[int(rng.integers(len(peers)))]))
            view = demo_view(d, 0, history, list_actions, show_first_observation)
            samples.append(_compact_sample(tokenizer, view, obs_chars, opening[0][0]))
        if experience is not None and judge_fraction > 0 and rng.random() < judge_fraction:
            samples += _judge_samples(d, peers, plans, tokenizer, obs_chars, rng)
        for t, action in enumerate(d.actions):
            view = demo_view(d, t, history, list_actions, show_first_observation, experience,
                             opening)
            hist, listed = view.history, view.valid_actions
            views = [view]
            if history and rng.random() < recovery_fraction:
                miss = (_wrong_action(action, d.actions[t + 1:], all_actions, rng), REJECTED)
                views.append(prompts.TurnView(d.goal, d.observations[t],
                                              (hist + (miss,))[-history:], experience, listed,
                                              d.observations[0] if show_first_observation else ""))
            views = views * _repeats(action, experience, decision_repeat, line_repeat)
            samples += [_compact_sample(tokenizer, view, obs_chars, action) for view in views]
    return samples


def _repeats(action: str, line: str | None, decision_repeat: int, line_repeat: int) -> int:
    """How many times a demonstration turn is taught: decision_repeat for a
    decisive action, times line_repeat for a step the turn's line names."""
    named = line_repeat > 1 and line is not None and line_states(line, action)
    return (decision_repeat if is_decision(action) else 1) * (line_repeat if named else 1)


def plan_steps(entry: str) -> list[str]:
    """The steps of a plan entry "<goal>: step > step > ..." (plan_entry's form)."""
    _, _, steps = entry.partition(": ")
    return [s.strip() for s in steps.split(" > ") if s.strip()]


def line_states(line: str, action: str) -> bool:
    """Whether ``action`` is a step ``line`` states: a walk to one of a
    lesson's homes ("mug: go to countertop 2 > go to sinkbasin 1 (room: ...)")
    or a step of a plan ("goal: a > b")."""
    return action in (lesson_steps(line) or plan_steps(line))


def _compact_sample(tokenizer, view: prompts.TurnView, obs_chars: int, answer: str) -> Sample:
    """The compact prompt of ``view`` (mask 0) + ``answer`` and EOS (mask 1)."""
    p = tokenizer.encode(prompts.render_actor_compact(view, obs_chars))
    a = tokenizer.encode(answer) + [tokenizer.eos_id]
    return Sample(p + a, [0] * len(p) + [1] * len(a))


def _judge_samples(d: Demo, peers: Sequence[Demo], plans: dict[int, str], tokenizer,
                   obs_chars: int, rng: np.random.Generator) -> list[Sample]:
    """A guided demo's judging sample; when its line is the game's own plan
    (exact or noisy), also one rejecting another game's plan of the same task
    type (``plans``: id(demo) -> its plan entry), so the verdicts balance."""
    samples = [judge_sample(d, tokenizer, obs_chars)]
    others = [plans[id(p)] for p in peers if plans[id(p)] != plans[id(d)]]
    if d.source not in FOREIGN_SOURCES and others:
        samples.append(judge_sample(dataclasses.replace(
            d, experience=others[int(rng.integers(len(others)))], source="peer"),
            tokenizer, obs_chars))
    return samples


def judge_sample(demo: Demo, tokenizer, obs_chars: int = 240) -> Sample:
    """A guided demo's judging prompt -> "reject" for a line that is not its
    game's plan (FOREIGN_SOURCES), "accept" for its own (source own or noisyK)."""
    p = tokenizer.encode(critic.render_judge_compact(demo.goal, demo.observations[0],
                                                     demo.experience, obs_chars))
    verdict = "reject" if demo.source in FOREIGN_SOURCES else "accept"
    a = tokenizer.encode(critic.compact_answer(verdict)) + [tokenizer.eos_id]
    return Sample(p + a, [0] * len(p) + [1] * len(a))


def is_decision(action: str) -> bool:
    """A decisive action: anything but moving around or looking (ALFWorld's
    go to, look, inventory, examine), i.e. what changes the world or the
    agent's hands. In other environments every action counts as decisive."""
    return not action.startswith(NAVIGATION)


def demo_extractor_prompt(demo: Demo, turns: int | None = None,
                          shown: Sequence[str] = (), room: str = "", focus: str = "",
                          places: bool = False) -> str:
    """The consolidation prompt (compact format) for a demo's trajectory, or
    for its first ``turns`` actions as a failed episode, with ``shown``
    entries listed as the bank would show them (and ``room``, households;
    ``focus``: the object type whose sightings the clipped observations name,
    with ``places`` where they were seen)."""
    won = demo.won if turns is None else False
    n = len(demo.actions) if turns is None else turns
    return prompts.render_extractor_compact(prompts.ExtractorView(
        demo.goal, prompts.trajectory_text(demo.actions[:n], demo.observations[1:n + 1],
                                           focus=focus, places=places), won,
        tuple(shown), room=room))


def extractor_sft_samples(demos: Sequence[Demo], tokenizer, rng: np.random.Generator | None = None,
                          failure_fraction: float = 0.5, shown_fraction: float = 0.5,
                          max_shown: int = 2, ask_fraction: float = 0.0,
                          misstep_fraction: float = 0.0) -> list[Sample]:
    """Trajectory -> operations pairs. Won demos -> add their plan. So that the
    extractor also knows what to do with what RL will show it: copies cut
    short (a failed episode, ``failure_fraction`` per demo) -> return, no
    entry; and with probability ``shown_fraction`` a prompt lists 1-``max_shown``
    entries of other demos, which do not change the answer. With
    ``ask_fraction``, that share of demos also gives a search-and-ask request
    (the actor's query and the best entry) answered with the entry as it is:
    a defined starting point that RL can improve on. With ``misstep_fraction``,
    that share of won demos is shown again with 1-2 rejected actions in its
    trajectory (``with_missteps``), answered with the clean game's plan.
    (Households' extractors learn lessons instead: lesson_demos.lesson_sft_samples.)"""
    rng = rng if rng is not None else np.random.default_rng(0)
    plans = [plan_entry(d) for d in demos if d.won]
    pool = [a for d in demos if d.won for a in d.actions] or ["look"]
    plans_of_type: dict[str, list[str]] = {}
    for d in demos:
        if d.won:
            plans_of_type.setdefault(d.task_type, []).append(plan_entry(d))

    def sample(prompt: str, entry: str | None) -> Sample:
        p = tokenizer.encode(prompt)
        r = tokenizer.encode(extractor_response(entry)) + [tokenizer.eos_id]
        return Sample(p + r, [0] * len(p) + [1] * len(r))

    def shown() -> list[str]:
        if not plans or rng.random() >= shown_fraction:
            return []
        k = int(rng.integers(1, max_shown + 1))
        return [plans[i] for i in rng.choice(len(plans), size=min(k, len(plans)), replace=False)]

    samples = []
    for d in demos:
        samples.append(sample(demo_extractor_prompt(d, shown=shown()),
                              plan_entry(d) if d.won else None))
        if len(d.actions) > 1 and rng.random() < failure_fraction:
            cut = int(rng.integers(1, len(d.actions)))
            samples.append(sample(demo_extractor_prompt(d, cut, shown()), None))
        if plans and ask_fraction > 0 and rng.random() < ask_fraction:  # no draw at 0
            hits = plans_of_type.get(d.task_type) or plans  # what a search by its goal finds
            entry = hits[int(rng.integers(len(hits)))]
            p = tokenizer.encode(demo_ask_prompt(d, entry))
            r = tokenizer.encode(json.dumps({"entry": entry})) + [tokenizer.eos_id]
            samples.append(Sample(p + r, [0] * len(p) + [1] * len(r)))
        if d.won and misstep_fraction > 0 and rng.random() < misstep_fraction:  # no draw at 0
            noisy = with_missteps(d, int(rng.integers(1, 3)), rng, pool)
            samples.append(sample(demo_extractor_prompt(noisy, shown=shown()), plan_entry(d)))
    return samples


def demo_ask_prompt(demo: Demo, entry: str) -> str:
    """The search-and-ask request (compact format) for the demo's query with
    ``entry`` as the best hit, as the experience manager renders it (the
    request carries no goal: the query is the actor's)."""
    return prompts.render_extractor_compact(prompts.ExtractorView(
        "", "", None, (entry,), ask_query(demo), "ask"))


def tokenizer_corpus(demos: Sequence[Demo], history: int) -> list[str]:
    """Everything the tiny models will read or write, for tokenizer training."""
    texts = []
    for d in demos:
        texts.append(prompts.render_actor_compact(
            prompts.TurnView(d.goal, d.observations[0], (), plan_entry(d),
                             d.valid[0] if d.valid else ())))
        texts.extend(d.observations)
        texts.extend(d.actions)
        texts.append(demo_extractor_prompt(d))
        texts.append(extractor_response(plan_entry(d)))
        texts.append(extractor_response(None))
    return texts


def train_env_tokenizer(demos: Sequence[Demo], vocab_size: int, out_dir: str, history: int,
                        split_digits: bool = False):
    from models.tokenizer import load_tokenizer
    from models.tokenizer_training import train_lossless_tokenizer

    path = os.path.join(out_dir, "tokenizer")
    if not os.path.exists(os.path.join(path, "tokenizer.json")):
        train_lossless_tokenizer(tokenizer_corpus(demos, history), vocab_size, path, kind="bpe",
                                 split_digits=split_digits)
    return load_tokenizer(path)
