"""Per-verb imitation accuracy (crl_jax/diagnostics/step_accuracy.py) against hand-counted values."""
import dataclasses

import pytest

from crl_jax.envs.webshop.env import WebShopEnv
from crl_jax.diagnostics.step_accuracy import (decision_kind, env_verdict, expert_views, format_report,
                                   id_chars_right, step_accuracy)
from crl_jax.training.warmstart import Demo, collect_demos


def _demo(won=True):
    # go to, take, go to, move: 4 states, admissible actions given before each
    return Demo("alfworld", 0, "put a cup in fridge",
                ["o0", "o1", "o2", "o3", "o4"],
                ["go to table 1", "take cup 1 from table 1", "go to fridge 1", "move cup 1 to fridge 1"],
                won, "pick_and_place_simple",
                [("go to table 1", "go to fridge 1"),
                 ("go to fridge 1", "take cup 1 from table 1"),
                 ("go to table 1", "go to fridge 1"),
                 ("go to table 1", "move cup 1 to fridge 1")])


def test_views_follow_the_rollout_rendering_and_skip_losses():
    states = expert_views([_demo(), _demo(won=False)], history=1, list_actions="non_navigation",
                          show_first_observation=True)
    assert len(states) == 4  # the failed demo contributes nothing
    view, gold, valid, demo, turn = states[1]
    assert turn == 1 and demo.actions[turn] == gold
    assert gold == "take cup 1 from table 1" and "take cup 1 from table 1" in valid
    assert view.history == (("go to table 1", "o1"),) and view.observation == "o1"
    assert view.valid_actions == ("take cup 1 from table 1",)
    assert view.first_observation == "o0" and states[0][0].first_observation == ""
    assert view.experience is None


def test_counts_exact_and_accepted_per_verb():
    states = expert_views([_demo()], 1, "none", False)
    # an actor that always walks to the fridge: right at state 2; admissible
    # everywhere but at the last state (where only "go to table 1" and the move are)
    always_fridge = lambda views: ["go to fridge 1"] * len(views)
    s = step_accuracy(states, always_fridge, batch=3)
    assert (s["all"].states, s["all"].exact, s["all"].accepted) == (4, 1, 3)
    assert (s["move"].exact, s["move"].accepted) == (0, 0)
    assert (s["go"].states, s["go"].exact) == (2, 1)
    assert (s["go, to fetch"].states, s["go, to fetch"].exact) == (1, 0)  # the walk to the cup
    assert (s["take"].exact, s["take"].accepted) == (0, 1)
    oracle = lambda views: [s.action for v in views for s in states if s.view is v]
    assert step_accuracy(states, oracle)["all"].as_dict()["exact"] == 1.0
    assert s["move"].misses == [("move cup 1 to fridge 1", "go to fridge 1")]
    assert len(s["all"].misses) == 3  # 3 wrong of 4, all kept (MISSES_KEPT)
    report = format_report(s)
    assert "- move: move cup 1 to fridge 1 -> go to fridge 1" in report
    assert "| go | 2 | 0.50 | 1.00 |" in report and "expert decision" in report and "| all | 4 | 0.25 | 0.75 |" in report


def test_the_walks_a_line_names_are_a_row_whether_or_not_the_prompt_shows_the_line():
    lesson = "cup: go to table 1 > go to shelf 2 (room: fridge 1, shelf 2, table 1)"
    guided = dataclasses.replace(_demo(), experience=lesson)

    def always_table(views):
        return ["go to table 1"] * len(views)
    shown = step_accuracy(expert_views([guided], 1, "none", False, lambda d: d.experience),
                          always_table)
    # of the two walks, the line names the one to the table (not the fridge)
    read = shown["go, where the line says"]
    assert (read.states, read.exact) == (1, 1)
    assert (shown["go"].states, shown["go"].exact) == (2, 1)
    hidden = step_accuracy(expert_views([guided], 1, "none", False), always_table)
    assert hidden["go, where the line says"].states == 1  # the same state, no line shown
    assert "go, where the line says" not in step_accuracy(expert_views([_demo()], 1, "none", False),
                                                          always_table)


def test_missed_walks_the_line_names_are_counted_by_where_they_went():
    lesson = "cup: go to table 1 > go to shelf 2 (room: fridge 1, shelf 2, sink 1, table 1)"
    actions = ["go to sink 1", "go to table 1", "go to shelf 2", "take cup 1 from shelf 2",
               "go to fridge 1", "move cup 1 to fridge 1"]
    demos = [Demo("alfworld", i, "put a cup in fridge", [f"o{t}" for t in range(7)], actions, True,
                  experience=lesson) for i in range(4)]
    states = expert_views(demos, 1, "none", False, lambda d: d.experience)
    # per (demo, turn) of the line's walks (turns 1 and 2); every other state right
    wrong = {(0, 1): "go to fridge 1", (0, 2): "go to sink 1", (1, 1): "go to shelf 2",
             (1, 2): "take cup 1 from shelf 2", (2, 1): "go to drawer 3", (2, 2): None}
    by_view = {id(s.view): wrong.get((s.demo.task, s.turn), s.action) for s in states}
    stats = step_accuracy(states, lambda views: [by_view[id(v)] for v in views])
    read = stats["go, where the line says"]
    assert (read.states, read.exact) == (8, 2)  # demo 3 reads both walks
    assert read.miss_kinds == {"a place the goal names": 1, "a place already visited": 1,
                               "another home the line names": 1, "no walk": 2, "elsewhere": 1}
    assert "go, to fetch" in stats and not stats["go, to fetch"].miss_kinds  # only the line's row
    assert ('where the misses of "go, where the line says" went: another home the line names 1, '
            "a place the goal names 1, a place already visited 1, elsewhere 1, no walk 2"
            ) in format_report(stats)


def test_bad_inputs_are_rejected():
    states = expert_views([_demo()], 1, "none", False)
    with pytest.raises(ValueError, match="propose returned"):
        step_accuracy(states, lambda views: [])
    with pytest.raises(ValueError, match="batch"):
        step_accuracy(states, lambda views: [], batch=0)


def test_decision_kinds_split_bracket_verbs_and_item_ids():
    assert decision_kind("go to table 1") == "go"
    assert decision_kind("search[vegan snacks 12 pack]") == "search"
    assert decision_kind("click[b064787394]") == "click[item id]"
    assert decision_kind("Click[ B001858630 ]") == "click[item id]"
    assert decision_kind("click[buy now]") == decision_kind("click[8 ounce]") == "click"


def test_id_characters_in_place_are_counted_by_position():
    assert id_chars_right("click[b050705762]", "click[B050705762]") == 1.0  # case ignored
    assert id_chars_right("click[b050705762]", "click[b050705769]") == 0.9
    assert id_chars_right("click[b050705762]", "click[b0722422]") == 0.2  # b and 0; too short
    assert id_chars_right("click[b050705762]", "click[buy now]") == 0.1
    assert id_chars_right("click[b050705762]", None) == 0.0
    assert id_chars_right("click[buy now]", "click[buy now]") is None  # not an id click
    assert id_chars_right("go to table 1", "go to table 1") is None


def test_no_parsed_action_is_neither_exact_nor_accepted():
    states = expert_views([_demo()], 1, "none", False)
    s = step_accuracy(states, lambda views: [None] * len(views))["all"]
    assert (s.states, s.exact, s.accepted) == (4, 0, 0)


def test_the_environment_judges_free_text_actions():
    # WebShop's search page lists no admissible actions: by the list alone no
    # search could be accepted; the environment accepts any non-empty query.
    demos = collect_demos("webshop", WebShopEnv, [0, 1], 20)
    states = expert_views(demos, 2, "none", False)
    searches = [s for s in states if decision_kind(s.action) == "search"]
    ids = [s for s in states if decision_kind(s.action) == "click[item id]"]
    assert searches and ids and all(not s.admissible for s in searches)
    accepts = env_verdict(WebShopEnv)
    assert all(accepts(s, "search[anything at all]") for s in searches)
    assert not any(accepts(s, "search[]") for s in searches)
    assert not any(accepts(s, None) for s in searches)
    # on a results page the listed id is accepted, an id one digit off is not
    for s in ids:
        wrong = s.action[:-2] + ("0" if s.action[-2] != "0" else "1") + "]"
        assert accepts(s, s.action) and not accepts(s, wrong)
        assert (s.action in s.admissible) and (wrong not in s.admissible)
    # the replay does not disturb later verdicts (same state judged twice)
    assert accepts(ids[0], ids[0].action)
    # one digit off keeps 9 of 10 characters in place; the row reports the mean
    one_off = {id(s.view): s.action[:-2] + ("0" if s.action[-2] != "0" else "1") + "]"
               for s in ids}
    row = step_accuracy(ids, lambda views: [one_off[id(v)] for v in views])["click[item id]"]
    assert row.as_dict()["id_chars"] == pytest.approx(0.9) and row.exact == 0
    assert "| click[item id] | " in format_report({"click[item id]": row}) and "| 0.90 |" in \
        format_report({"click[item id]": row})
    by_list = step_accuracy(searches, lambda views: ["search[x]"] * len(views))["all"]
    by_env = step_accuracy(searches, lambda views: ["search[x]"] * len(views), accepts=accepts)["all"]
    assert by_list.accepted == 0 and by_env.accepted == by_env.states == len(searches)


def test_the_lesson_line_is_the_households_true_lesson_and_its_expert_reads_it():
    from crl_jax.envs.alfworld_households import household_index
    from crl_jax.envs.alfworld_lessons import parse_lesson
    from crl_jax.training.config_io import apply_overrides
    from crl_jax.training.tasks import household_split, task_source
    from experiments.configs import load_preset
    from experiments.diagnostics.actor_step_accuracy import lesson_demos, line_maker

    cfg = apply_overrides(load_preset("alfworld_households_cpu"), [
        "env.households=6", "env.pool_households=2", "env.unseen_households=2",
        "env.num_generated=12"])
    split = household_split(cfg)
    src = task_source("alfworld", "generated", 12, 0, 30, lenient_actions=True,
                      households=split, room_size="medium")
    demos = collect_demos(src.env_name, src.make, src.tasks[:6], 30, src.expert)
    shown = lesson_demos(src, demos, cfg, 30)
    members = {h.index: h for h in split.members()}
    env = src.make()
    line = line_maker("lesson", shown)
    for d in shown:
        record = env.games[d.task]
        lesson = parse_lesson(line(d))
        home = members[household_index(record.id)]
        assert lesson.otype == record.params["object_target"].lower()
        assert list(lesson.homes) == home.home_names(lesson.otype)
        assert d.actions[0] == f"go to {lesson.homes[0]}"  # the expert walks to its first home
    env.close()
    with pytest.raises(SystemExit, match="households preset"):
        lesson_demos(src, demos, load_preset("alfworld_cpu"), 30)
    # the hidden-line control plays the same games along the same lessons and shows no line
    hidden = lesson_demos(src, demos, cfg, 30, "lessonhidden")
    assert [d.actions for d in hidden] == [d.actions for d in shown]
    assert all(line_maker("lessonhidden", hidden)(d) is None for d in hidden)
    assert all(h.experience == d.experience for h, d in zip(hidden, shown))
