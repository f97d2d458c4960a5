"""A run on households: settings that do not fit together are one clear
error; the RL pool, the warm start's games and the held-out games come
from the households they should; the oracle hands each game its
household's true lesson, keyed per split; lesson demonstrations follow or
ignore their line as their source says."""
import dataclasses
import functools
import importlib
import re

import numpy as np
import pytest

from crl_jax.envs.alfworld_households import household_index
from crl_jax.envs.alfworld_lessons import about_room, goal_object, parse_lesson, true_lesson
from crl_jax.training.components import collect_demos, task_pool, task_sources
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.lesson_demos import LessonBook, lesson_demo, trajectory_lesson, wrong_pick
from crl_jax.training.warmstart import Demo
from crl_jax.training.oracle import oracle_entries
from crl_jax.training.tasks import household_split
from crl_jax.training.warm_cache import warm_start_key
from experiments.configs import load_preset

PAPER_BANK = ["experience.bank.retrieval_key=text", "experience.bank.min_similarity=-1",
              "experience.bank.lesson_room=written", "warm_start.extractor_writes_room=true"]
SMALL = ["env.households=6", "env.pool_households=2", "env.unseen_households=1",
         "env.num_generated=60", "env.num_eval_tasks=8", "warm_start.demos=12"]


@pytest.fixture(scope="module")
def cfg():
    return apply_overrides(load_preset("alfworld_households_cpu"), SMALL)


@pytest.mark.parametrize("overrides, words", [
    (["env.pool_households=6"], "pool_households"),
    (["env.pool_households=0"], "pool_households"),
    (["env.home_rate=1.5"], "home_rate"),
    (["env.drawn_households=3"], "drawn_households=3"),
    (["train.task_pool=8"], "task_pool=0"),
    (["env.train_split=train"], "generated"),
    (["env.households=0", "env.pool_households=0", "env.unseen_households=0",
      "train.pool_disjoint=false"], "lesson sources"),
    (["env.households=0", "env.unseen_households=1", "env.pool_households=0",
      "train.pool_disjoint=false", "warm_start.guided_source=own"], "need env.households"),
])
def test_settings_that_do_not_fit_are_one_clear_error(cfg, overrides, words):
    with pytest.raises(ValueError, match=words):
        apply_overrides(cfg, overrides)


def test_drawing_fewer_households_keeps_the_warm_start(cfg):
    """RL on the pool's first household: its games fill the pool's places,
    the demonstrations and the warm start's key are the same."""
    narrow = apply_overrides(cfg, ["env.drawn_households=1"])
    assert warm_start_key(narrow) == warm_start_key(cfg)
    train, narrow_train = (task_sources(c, "generated", None)[0] for c in (cfg, narrow))
    pool = task_pool(narrow, narrow_train)
    first = household_split(cfg).members()[0].index
    assert len(pool.tasks) == 20
    assert {household_index(narrow_train.make().games[t].id) for t in pool.tasks} == {first}
    ids = lambda demos: [(d.task, d.goal, d.actions) for d in demos]  # noqa: E731
    assert ids(collect_demos(narrow, [narrow_train])) == ids(collect_demos(cfg, [train]))


def test_pool_warm_start_and_held_out_games_come_from_their_households(cfg):
    split = household_split(cfg)
    members = split.members()
    pool_ids = {h.index for h in members[:2]}
    train = task_sources(cfg, "generated", None)[0]
    env = train.make()
    pool = task_pool(cfg, train)
    assert {household_index(env.games[t].id) for t in pool.tasks} == pool_ids
    assert len(pool.tasks) == 20  # 60 games dealt round 6 households
    demos = collect_demos(cfg, [train])
    assert demos and not {household_index(env.games[d.task].id) for d in demos} & pool_ids
    ev = task_sources(cfg, "generated_eval", 8)[0].make()
    assert {household_index(g.id) for g in ev.games[:8]} == pool_ids
    unseen = task_sources(cfg, "generated_unseen", 8)[0].make()
    assert {household_index(g.id) for g in unseen.games} == {members[6].index}


@pytest.mark.parametrize("source", ["lesson", "lessonfirst"])
def test_the_oracle_lesson_is_each_games_households_truth_per_split(cfg, source):
    cfg = apply_overrides(cfg, ["experience.mode=oracle", f"controls.oracle_source={source}"])
    members = {h.index: h for h in household_split(cfg).members()}
    sources = {"train": [task_pool(cfg, task_sources(cfg, "generated", None)[0])],
               "eval": task_sources(cfg, "generated_eval", 8),
               "unseen": task_sources(cfg, "generated_unseen", 8)}
    tables = oracle_entries(cfg, sources)
    longest = 0
    for split, srcs in sources.items():
        env = srcs[0].make()
        for task in srcs[0].tasks[:8]:
            game = env.games[task]
            want = true_lesson(members[household_index(game.id)], game.params["object_target"])
            got = parse_lesson(tables[split][("alfworld", task)])
            # lessonfirst: the true lesson's first home alone, its type and room kept
            assert got.homes == (want.homes[:1] if source == "lessonfirst" else want.homes)
            assert (got.otype, got.room) == (want.otype, want.room) and want.homes
            longest = max(longest, len(want.homes))
    assert longest >= 2  # so lessonfirst's cut is tested on lessons it shortens
    # task ids of different splits overlap (both start at 0): the tables do not mix them
    assert tables["train"].keys() & tables["eval"].keys()


def test_lesson_demos_follow_their_own_households_lesson_and_ignore_others(cfg):
    train = task_sources(cfg, "generated", None, 30)[0]
    book = LessonBook(household_split(cfg))
    demos = [d for d in collect_demos(cfg, [train]) if d.won]
    env = train.make()
    rng = np.random.default_rng(0)
    for d in demos[:6]:
        game = env.games[d.task]
        own = lesson_demo(d, "lesson", train.make, 30, book, rng)
        lesson = parse_lesson(own.experience)
        assert own.experience == book.true(game).text and own.source == "lesson"
        parent = game.params["parent_target"].lower()
        first = [h for h in lesson.homes if h.rsplit(" ", 1)[0] != parent]
        if first:  # the informed expert goes to the lesson's first home first
            assert own.actions[0] == f"go to {first[0]}"
        for source in ("lessonpeer", "lessonswap"):
            other = lesson_demo(d, source, train.make, 30, book, rng)
            assert other.actions == d.actions  # the searching expert ignores it
            assert other.experience != own.experience and parse_lesson(other.experience)
            if source == "lessonpeer":
                assert parse_lesson(other.experience).room != lesson.room
            else:
                assert parse_lesson(other.experience).room == lesson.room


def test_preset_and_overrides_keep_their_meaning():
    cfg = load_preset("alfworld_households_cpu")
    assert (cfg.env.households, cfg.env.pool_households, cfg.env.unseen_households) == (40, 8, 8)
    assert cfg.train.group_size == 8 and cfg.rollout.max_turns == 10
    paper = apply_overrides(cfg, PAPER_BANK)  # the preset's docstring names these
    assert dataclasses.replace(paper.experience.bank, merge_chunk=5) == dataclasses.replace(
        load_preset("alfworld_cpu").experience.bank, merge_chunk=5)
    with pytest.raises(ValueError, match="lesson_room=episode"):  # lessons with no room, unfiled
        apply_overrides(cfg, PAPER_BANK[:-1])
    doc = " ".join(importlib.import_module("experiments.configs.alfworld_households_cpu").__doc__.split())
    assert " ".join(f"--{o}" for o in PAPER_BANK) in doc


def test_the_foreign_room_control_asks_for_another_pool_households_lesson(cfg):
    from crl_jax.envs.alfworld_lessons import lesson_query
    from crl_jax.training.lesson_controls import ForeignRooms
    split = household_split(cfg)
    pool = split.members()[:2]
    foreign = ForeignRooms(split)
    for own, other in ((pool[0], pool[1]), (pool[1], pool[0])):
        otype = own.goal_types[0].lower()
        query = lesson_query(f"put a {otype} in cabinet", ", ".join(own.signature))
        assert foreign.query(query) == f"{otype} (room: {', '.join(other.signature)})"
    assert foreign.query("goal: x, observation: y") == "goal: x, observation: y"
    with pytest.raises(ValueError, match="lesson_room=other"):
        apply_overrides(cfg, ["controls.lesson_room=other", "experience.bank.retrieval_key=text"])


def test_lesson_accuracy_scores_the_banks_lessons_against_the_true_homes(cfg):
    from types import SimpleNamespace

    from crl_jax.envs.alfworld_lessons import Lesson
    from crl_jax.training.lesson_controls import lesson_accuracy
    split = household_split(cfg)
    a, b = split.members()[:2]
    ta, tb = a.goal_types[0], b.goal_types[0]
    right = true_lesson(a, ta)
    second = Lesson(right.otype, right.room, tuple(reversed(right.homes)))  # first home wrong
    wrong = Lesson(tb.lower(), b.signature, ("nowhere 1",))
    unseen = true_lesson(split.members()[6], split.members()[6].goal_types[0])  # not the pool's
    entries = [SimpleNamespace(text=x) for x in
               (right.text, second.text, wrong.text, unseen.text, "a plan: go to x 1")]
    got = lesson_accuracy(entries, split)
    pairs = len(a.goal_types) + len(b.goal_types)
    assert got == {"lessons/count": 3.0, "lessons/coverage": 2 / pairs,
                   "lessons/first_home": 1 / 3,
                   "lessons/any_home": (1 + (len(right.homes) > 1)) / 3}
    assert lesson_accuracy(entries[3:], split) == {"lessons/count": 0.0, "lessons/coverage": 0.0}


# The oracle's run is in the long suite (-m slow): its per-split tables are
# checked above without a run, and the comp_rl run covers the rest.
@pytest.mark.parametrize("mode", ["comp_rl", pytest.param("oracle", marks=pytest.mark.slow)])
def test_a_households_run_reports_seen_unseen_and_its_lessons(mode, tmp_path):
    """Two tiny steps end to end: the second reads the lessons the first
    wrote (comp_rl) or the households' true ones (oracle); evaluations cover
    the pool's households and the unseen ones, and score the bank's lessons."""
    from crl_jax.training.loop import run_training
    from crl_jax.training.metrics import read_metrics
    from tests.training.test_runs import SMALL as RUN_SMALL
    small = [o for o in RUN_SMALL if not o.startswith(("train.task_pool", "env.num_generated"))]
    cfg = apply_overrides(load_preset("alfworld_households_cpu"), small + [
        "env.households=4", "env.pool_households=2", "env.unseen_households=1",
        "env.num_generated=16", f"experience.mode={mode}", f"train.out_dir={tmp_path}",
        *(["controls.oracle_source=lesson"] if mode == "oracle" else [])])
    run_training(cfg, str(tmp_path))
    last = read_metrics(str(tmp_path / "metrics.jsonl"))[-1]
    for name in ("eval_with_exp", "eval_no_exp", "eval_unseen_with_exp", "eval_unseen_no_exp"):
        assert 0.0 <= last[f"{name}/success"] <= 1.0
    if mode == "oracle":  # every guided held-out episode reads its household's lesson
        assert last["eval_with_exp/experience_found"] == last["eval_unseen_with_exp/experience_found"] == 1.0
    else:
        assert last["lessons/count"] >= 0 and 0.0 <= last["lessons/coverage"] <= 1.0


@functools.lru_cache(maxsize=1)
def _demos(cfg):
    return collect_demos(cfg, [task_sources(cfg, "generated", None, 30)[0]])


def _pairs(cfg, jitter, **kw):
    import json

    from crl_jax.training.lesson_demos import lesson_sft_samples
    from tests.rl.test_tools_and_distillation import CharTokenizer

    tok = CharTokenizer()
    tok.eos_id = 1
    demos = _demos(cfg)
    out = []
    for s in lesson_sft_samples(demos, tok, np.random.default_rng(0), room_jitter=jitter, **kw):
        cut = s.loss_mask.index(1)
        prompt, answer = tok.decode(s.tokens[:cut]), tok.decode(s.tokens[cut:-1])
        room = tuple(re.search(r"room: (.+)", prompt).group(1).strip().split(", "))
        ops = json.loads(answer)
        entry = ops[0]["entry"] if ops[0]["op"] == "add" else None
        lesson = parse_lesson(about_room(entry, ", ".join(room))) if entry else None
        out.append((prompt, room, lesson, entry))
    return demos, out


def test_the_extractor_learns_homes_without_the_room_and_no_lesson_from_a_wrong_pick(cfg):
    """writes_room=false: each answer is its lesson's type and homes alone,
    the lesson as written with the room, and the shown lessons keep their
    room (as the bank's do); wrong_picks=1: every demo that picks its goal
    type also appears cut at a pick of another type, answered with no lesson."""
    demos, with_room = _pairs(cfg, 0.0)
    _, bare = _pairs(cfg, 0.0, write_room=False)
    assert len(bare) == len(with_room)
    for (prompt, _, lesson, _), (prompt2, _, lesson2, entry2) in zip(with_room, bare):
        assert prompt == prompt2 and lesson == lesson2
        assert entry2 is None or (" (room: " not in entry2 and entry2 == lesson.head)
    assert any("(room: " in p for p, *_ in bare)  # shown lessons name their room
    _, wrong = _pairs(cfg, 0.0, write_room=False, wrong_picks=1.0)

    def ends_picking_another_type(prompt: str) -> bool:
        goal = goal_object(re.search(r"goal: (.+)", prompt).group(1))
        takes = re.findall(r"take ([a-z]+) \d+ from [a-z]+ \d+ -> You pick up", prompt)
        return bool(takes) and takes[-1] != goal
    extra = [(prompt, lesson) for prompt, _, lesson, _ in wrong if ends_picking_another_type(prompt)]
    picked = [d for d in demos if trajectory_lesson(d)]
    assert len(extra) == len(picked) > 0 and all(lesson is None for _, lesson in extra)
    assert not any(ends_picking_another_type(prompt) for prompt, *_ in bare)


def test_a_wrong_pick_by_hand():
    first = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
             "see a cabinet 1, a countertop 1, and a fridge 1.\n\nYour task is to: x")
    demo = Demo("alfworld", 0, "put a clean apple in fridge", [
        first, "You arrive at countertop 1. On the countertop 1, you see a apple 1.",
        "You pick up the apple 1 from the countertop 1.", "You arrive at fridge 1."],
        ["go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1"], True)
    wrong = wrong_pick(demo, ["apple", "mug"], np.random.default_rng(0))
    assert wrong.actions == ["go to countertop 1", "take mug 1 from countertop 1"]
    assert wrong.observations == [*demo.observations[:2], "You pick up the mug 1 from the countertop 1."]
    assert not wrong.won and trajectory_lesson(wrong) is None
    assert trajectory_lesson(demo) == "apple: go to countertop 1 (room: cabinet 1, countertop 1, fridge 1)"
    assert wrong_pick(demo, ["apple"], np.random.default_rng(0)) is None  # no other type known


def test_the_extractors_room_jitter_redraws_the_room_in_prompt_and_lesson_alike(cfg):
    from crl_jax.envs.alfworld_lessons import room_of
    from crl_jax.training.lesson_demos import jittered_room

    demos, plain = _pairs(cfg, 0.0)
    households = {room_of(d.observations[0]) for d in demos}
    assert all(room in households for _, room, *_ in plain)  # each pair states its own room
    _, jittered = _pairs(cfg, 1.0)
    lessons = [(room, parse_lesson(entry)) for _, room, _, entry in jittered if entry]
    assert lessons and all(lesson.room == room for room, lesson in lessons)  # copied, not recalled
    assert all(set(lesson.homes) <= set(room) for room, lesson in lessons)
    assert sum(room not in households for _, room, *_ in jittered) > len(jittered) // 2
    # By hand: kept receptacles stay, added ones take a kind's next free number.
    rng = np.random.default_rng(3)
    room = ("cabinet 1", "cabinet 2", "fridge 1", "sinkbasin 1")
    for _ in range(20):
        new = jittered_room(room, {"fridge 1"}, rng)
        assert "fridge 1" in new and list(new) == sorted(new)
        added = set(new) - set(room)
        assert all(a in ("cabinet 3", "fridge 2", "sinkbasin 2", "cabinet 4", "fridge 3",
                         "sinkbasin 3", "cabinet 5") for a in added)
    with pytest.raises(ValueError, match="extractor_room_jitter"):
        apply_overrides(cfg, ["warm_start.extractor_room_jitter=2"])
    with pytest.raises(ValueError, match="extractor_wrong_picks"):
        apply_overrides(cfg, ["warm_start.extractor_wrong_picks=-1"])
    with pytest.raises(ValueError, match="lesson_room=episode"):
        apply_overrides(cfg, ["experience.bank.lesson_room=written"])


def test_the_rule_reader_writes_the_lesson_its_prompt_shows_and_needs_a_static_mode(cfg):
    """controls.lesson_reader=rule: consolidation's reply is the lesson read
    from the same clipped trajectory the extractor would get (or "return"
    when the goal's type was never picked up), with the extractor's prompt;
    every other request goes to the extractor. Only a mode that writes
    online without training the extractor takes it."""
    import json
    from crl_jax.experience.consolidation import ExtractionRequest, ExtractorReply
    from crl_jax.rl import prompts
    from crl_jax.training.lesson_controls import RuleLessonReader
    asked = []

    def extractor(request):
        asked.append(request.kind)
        return ExtractorReply("p", "rewritten")
    reader = RuleLessonReader(extractor)
    room = "cabinet 1, countertop 1"
    won = ("go to cabinet 1 -> You arrive at cabinet 1. On the cab... | "
           "take mug 1 from cabinet 1 -> You pick up the mug 1 from the cab...")
    reply = reader(ExtractionRequest("consolidate", (), "put a hot mug in cabinet", won, True,
                                     room=room))
    assert json.loads(reply.response) == [{"op": "add", "entry": "mug: go to cabinet 1"}]
    assert reply.prompt == prompts.render_extractor_compact(prompts.ExtractorView(
        "put a hot mug in cabinet", won, True, room=room))
    lost = reader(ExtractionRequest("consolidate", (), "put a hot apple in cabinet", won, False))
    assert json.loads(lost.response) == [{"op": "return"}]
    # beyond the prompt's clip a pick-up is unseen, by the rule as by the extractor
    far = "go to cabinet 1 -> Nothing happens. | " * 30 + "take mug 1 from cabinet 1 -> You pick up"
    assert json.loads(reader(ExtractionRequest("consolidate", (), "put a mug in cabinet", far,
                                               False)).response) == [{"op": "return"}]
    assert reader(ExtractionRequest("ask", (), query="where?")).response == "rewritten"
    assert asked == ["ask"]
    assert apply_overrides(cfg, ["experience.mode=static_online",
                                 "controls.lesson_reader=rule"]).controls.lesson_reader == "rule"
    for bad in (["controls.lesson_reader=rule"],  # comp_rl would train the extractor on its replies
                ["experience.mode=none", "controls.lesson_reader=rule"],
                ["experience.mode=static_online", "experience.bank.lesson_room=written",
                 "controls.lesson_reader=rule"]):
        with pytest.raises(ValueError, match="lesson_reader=rule"):
            apply_overrides(cfg, bad)


def test_extractor_missteps_repeat_each_pair_with_rejected_actions_and_the_same_lesson(cfg):
    """missteps=1: every pair (the demo, its cut copy) comes again with 1-8
    rejected actions ("Nothing happens.") in its trajectory, answered (with
    read_shown) with the lesson the rule reader finds in that noisy text; 0
    draws nothing."""
    from crl_jax.envs.alfworld_lessons import read_lesson
    demos, clean = _pairs(cfg, 0.0, write_room=False)
    _, same = _pairs(cfg, 0.0, write_room=False, missteps=0.0)
    assert same == clean
    _, noisy = _pairs(cfg, 0.0, write_room=False, missteps=1.0, read_shown=True)
    shown = [(p, entry) for p, _, _, entry in noisy if "Nothing happens." in p]
    # half the pairs are noisy twins (expert trajectories reject nothing); a
    # twin whose missteps fall past the prompt's 700-character clip shows none
    assert len(noisy) // 2 - 2 <= len(shown) <= len(noisy) // 2 and len(noisy) > len(clean)
    for prompt, entry in shown:
        goal = re.search(r"goal: (.+)", prompt).group(1)
        traj = re.search(r"traj: (.+)", prompt).group(1)
        assert entry == read_lesson(goal, traj), prompt
    assert any(entry for _, entry in shown) and any(entry is None for _, entry in shown)


def test_read_shown_answers_each_pair_with_the_pick_ups_its_prompt_shows(cfg):
    """read_shown: a pair's lesson is what the rule reader finds in its
    clipped "traj:" line, so a pick-up past the clip gives no lesson (a
    hand-made search of 14 receptacles before its pick-up, whose whole
    trajectory's lesson names the home its prompt hides)."""
    from crl_jax.envs.alfworld_lessons import read_lesson
    _, whole = _pairs(cfg, 0.0, write_room=False)
    _, shown = _pairs(cfg, 0.0, write_room=False, read_shown=True)
    assert [p for p, *_ in whole] == [p for p, *_ in shown]
    for (prompt, _, _, entry), (_, _, _, entry_whole) in zip(shown, whole):
        goal = re.search(r"goal: (.+)", prompt).group(1)
        assert entry == read_lesson(goal, re.search(r"traj: (.+)", prompt).group(1)), prompt
    from crl_jax.training.lesson_demos import shown_lesson
    from crl_jax.training.warmstart import demo_extractor_prompt
    first = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
             "see a cabinet 1, and a fridge 1.\n\nYour task is to: x")
    search = [f"go to drawer {i}" for i in range(1, 15)]
    long = Demo("alfworld", 0, "put a clean apple in fridge",
                [first, *[f"You arrive at {a[6:]}. On the {a[6:]}, you see nothing."
                           for a in search],
                 "You pick up the apple 1 from the cabinet 1."],
                [*search, "take apple 1 from cabinet 1"], False)
    prompt = demo_extractor_prompt(long, room="cabinet 1, fridge 1")
    assert "take apple 1" not in prompt and trajectory_lesson(long) is not None
    assert shown_lesson(prompt, parse_lesson(trajectory_lesson(long))) is None
    cut = dataclasses.replace(long, actions=[*search[:3], long.actions[-1]],
                              observations=[*long.observations[:4], long.observations[-1]])
    assert shown_lesson(demo_extractor_prompt(cut, room="cabinet 1, fridge 1"),
                        parse_lesson(trajectory_lesson(cut))) == trajectory_lesson(cut)
    with pytest.raises(ValueError, match="extractor_reads_shown"):
        apply_overrides(load_preset("alfworld_cpu"), ["warm_start.extractor_reads_shown=true"])
