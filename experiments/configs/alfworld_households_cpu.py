"""ALFWorld households at CPU scale: experience that transfers between games.

Games come from households (crl_jax/envs/alfworld_households.py): rooms whose
objects lie at their homes at env.home_rate (0.5, calibrated on the real
train pack: docs/FINDINGS.md, "Household regularity"), so a lesson learnt
in one game of a room ("mugs: countertop 2 > sinkbasin 1") helps the next
game there, as a floorplan's lessons do in real ALFWorld.

- 40 households in the training split: the first 8 are the RL pool, the
  other 32 the warm start's (2,000 games dealt round them: 50 a household).
  Each step draws 4 of the pool's 400 games, so no exact game recurs in 20
  steps and the weights cannot learn a plan; what repeats is the room.
- Held out: 64 new games of the pool's households (eval_*: seen) and 64
  games of 8 households no training touches (eval_unseen_*).
- Medium rooms (7-16 receptacles) and a 10-turn cap: on the pool's games
  the searching expert wins 0.57, the expert told the household's homes
  0.83 and the expert told the game's own plan 0.98 (docs/FINDINGS.md,
  "Households: the experts at the turn cap"), so knowing where things
  usually lie pays, and a lesson is worth most of what a plan is.
- The actor's guided demonstrations read the household's own lesson for
  the goal's type, and the informed expert looks at its homes first,
  searching where they are wrong (crl_jax/training/lesson_demos.py). No
  demonstration shows a lesson to ignore (another household's, another
  type's: warm_start.guided_source lessonpeer, lessonswap): the bank's floor
  below never hands one over, and with them in the mix the tiny actor
  learnt to ignore every line (docs/FINDINGS.md, "Households: an actor that
  reads its lesson"). The extractor's warm start writes the lesson a
  trajectory supports, won or lost, as its type and homes alone (the bank
  files it under the episode's room, below), and answers "no lesson" for a
  quarter of the trajectories repeated with the goal's pick-up replaced by
  another type's (warm_start.extractor_writes_room=false,
  extractor_wrong_picks=0.25): the actor picks the wrong object in RL, the
  expert never, and the extractor wrote lessons about whatever it picked.
- The bank finds a lesson by its type and room (experience.bank.
  retrieval_key=lesson: the goal's object and the episode's room against
  each lesson's) with a floor of 0.99, so a guided episode reads the lesson
  for its own type and room or nothing (another type's lesson of the same
  room scores at most 0.985 with the hashing embedder). A lesson is filed
  under the room of the episode it was distilled from (experience.bank.
  lesson_room=episode): the tiny extractor garbled the 7-16 receptacle
  list it had to copy, and a lesson filed under a garbled room is found by
  no episode. The merge combines the lessons of one type and room by their
  homes' votes (experience.merger=lessons), over the whole bank at once
  (merge_chunk 256). All three are beyond the paper:
  `--experience.bank.retrieval_key=text
  --experience.bank.min_similarity=-1 --experience.bank.lesson_room=written
  --warm_start.extractor_writes_room=true` is the paper's retrieval and
  storage.
- Everything else as alfworld_cpu (tiny models, warm start sizes, tiny_rl).
"""
import dataclasses

from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("alfworld_households_cpu", ("alfworld",), max_turns=10, obs_chars=600,
                     list_actions="non_navigation", show_first_observation=True,
                     train_split="generated", eval_split="generated_eval", num_generated=2000,
                     num_eval_tasks=64, lenient_actions=True, room_size="medium", steps=20,
                     households=40, pool_households=8, unseen_households=8, home_rate=0.5)
    cfg = tiny_rl(cfg, demos=1000, actor_steps=1200, eval_every=5, task_pool=0, sdae=True)
    bank = dataclasses.replace(cfg.experience.bank, retrieval_key="lesson", min_similarity=0.99,
                               merge_chunk=256, lesson_room="episode")
    return dataclasses.replace(
        cfg, warm_start=dataclasses.replace(
            cfg.warm_start, guided_source="lesson", extractor_writes_room=False,
            extractor_wrong_picks=0.25),
        experience=dataclasses.replace(cfg.experience, merger="lessons", bank=bank))
