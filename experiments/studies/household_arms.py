"""The households study's arms: its regimes' override sets and its groups
of variants, each group from the same warm start per seed
(experiments/studies/households.py draws and tabulates them)."""
from __future__ import annotations

from crl_jax.envs.alfworld_data import TASK_TYPES
from experiments.configs import load_preset
from experiments.figures.ablation import Variant
from experiments.figures.fig6_success import BASE, COMP

PRESET = "alfworld_households_cpu"
NAME = "households"
HEADING = "Households: lessons that transfer between games of a room"
ORACLE = "Oracle, the household's lesson"
RULE = "Lessons read by rule (the extractor's oracle)"
SEEN = "Comp. RL, extractor taught on what it sees"
SEEN_EXTRACTOR = ("warm_start.extractor_missteps=0.5", "warm_start.extractor_reads_shown=true")
NO_HOMES = ("env.home_rate=0",)
# Each group's last variant is its reference (its GRPO).
HOMES = (Variant(ORACLE, "oracle", ("controls.oracle_source=lesson",)),
         Variant(COMP),
         Variant("Comp. RL, another household's lessons", extra=("controls.lesson_room=other",)),
         Variant("Static Online Exp.", "static_online"),
         # The preset's extractor batch (32 samples) never fills on households:
         # its RL never runs, and Comp. RL is Static Online. Batches of 8 do.
         Variant("Comp. RL, extractor batches of 8", extra=("experience.bank.train_batch_size=8",)),
         # The extractor taught on trajectories like the actor's: rejected
         # actions in them, and only the pick-ups its clipped prompt shows.
         Variant(SEEN, extra=SEEN_EXTRACTOR),
         # The extractor's oracle: lessons read from the same trajectories by
         # rule (no misreading), so the bank's gap to the oracle lesson is the
         # evidence's, and the learned bank's gap to this arm the extractor's.
         Variant(RULE, "static_online", ("controls.lesson_reader=rule",)),
         Variant(BASE, "none"))
NONE = (Variant("Comp. RL, no homes (home rate 0)", extra=NO_HOMES),
        Variant("GRPO, no homes (home rate 0)", "none", NO_HOMES))
# Other regimes, controls only (the oracle against its GRPO): where a lesson
# might pay more to a tiny actor.
SMALL_ROOMS = ("env.room_size=small",)
SMALL = (Variant(f"{ORACLE}, small rooms", "oracle", ("controls.oracle_source=lesson",
                                                      *SMALL_ROOMS)),
         Variant("GRPO, small rooms", "none", SMALL_ROOMS))
TWELVE_TURNS = ("rollout.max_turns=12",)
TWELVE = (Variant(f"{ORACLE}, 12 turns", "oracle", ("controls.oracle_source=lesson",
                                                    *TWELVE_TURNS)),
          Variant("GRPO, 12 turns", "none", TWELVE_TURNS))
# Twice the RL steps, twice the games a lesson is learnt from: where the
# lessons read by rule (and so any extractor's) have the evidence to pay.
FORTY_STEPS = ("train.steps=40",)
FORTY = (Variant(f"{ORACLE}, 40 steps", "oracle", ("controls.oracle_source=lesson",
                                                   *FORTY_STEPS)),
         Variant(f"{RULE}, 40 steps", "static_online", ("controls.lesson_reader=rule",
                                                         *FORTY_STEPS)),
         Variant(f"{SEEN}, 40 steps", extra=(*SEEN_EXTRACTOR, *FORTY_STEPS)),
         Variant("GRPO, 40 steps", "none", FORTY_STEPS))
# RL on two of the pool's households, as many games (the warm start is the
# same): a (household, type) pair gets four times the games at 20 steps, so
# votes can name its homes; whether lessons that right pay the actor.
TWO_HOUSEHOLDS = ("env.drawn_households=2",)
TWO = (Variant(f"{ORACLE}, 2 households", "oracle", ("controls.oracle_source=lesson",
                                                      *TWO_HOUSEHOLDS)),
       Variant(f"{RULE}, 2 households", "static_online", ("controls.lesson_reader=rule",
                                                          *TWO_HOUSEHOLDS)),
       Variant(f"{SEEN}, 2 households", extra=(*SEEN_EXTRACTOR, *TWO_HOUSEHOLDS)),
       Variant("GRPO, 2 households", "none", TWO_HOUSEHOLDS))
# Lessons that keep their evidence: the merge carries each home's votes
# into the merged lesson and runs every step, so a guided episode reads
# what every earlier episode of its room and type showed, not one game's
# lesson (experience.merger=lessons forgets the votes of a merged lesson,
# and between merges every 5 steps a search finds one unmerged lesson).
VOTES = ("experience.merger=lesson_votes", "experience.merge_every=1")
KEPT = (Variant(f"{RULE}, votes kept", "static_online", ("controls.lesson_reader=rule", *VOTES)),
        Variant(f"{SEEN}, votes kept", extra=(*SEEN_EXTRACTOR, *VOTES)),
        HOMES[-1])
TWO_KEPT = (Variant(f"{RULE}, 2 households, votes kept", "static_online",
                    ("controls.lesson_reader=rule", *TWO_HOUSEHOLDS, *VOTES)),
            Variant(f"{SEEN}, 2 households, votes kept", extra=(*SEEN_EXTRACTOR, *TWO_HOUSEHOLDS,
                                                                 *VOTES)),
            TWO[-1])
# Objects at a home four times in five instead of the real pack's one in
# two: a lesson is worth more to the informed expert (0.91 against 0.57
# searching within 10 actions; docs/FINDINGS.md, "Households: the experts at
# the turn cap"). A new warm start per seed (its games are placed by the
# rate). Controls only: the learned arms wait for an oracle that pays here.
RATE = ("env.home_rate=0.8",)
HIGH = (Variant(f"{ORACLE}, home rate 0.8", "oracle", ("controls.oracle_source=lesson", *RATE)),
        Variant("GRPO, home rate 0.8", "none", RATE))
# The warm start's games from 200 households, 50 games each as before (so
# the pool keeps its 400 games): its 1000 demonstrations meet a room about
# five times, too few to learn where things lie in it, so the lesson is the
# one thing in a guided demonstration's prompt that says where to walk.
MANY_ROOMS = ("env.households=208", "env.num_generated=10400")
WANDER = ("warm_start.extractor_wanders=0.3",)
GREEDY = ("experience.extractor_temperature=0",)
# The learned arms were added when seed 0's oracle trained well above its
# GRPO; over three seeds it trains level (docs/FINDINGS.md), and they now
# measure how well the extractor reads the actor's episodes.
MANY = (Variant(f"{ORACLE}, home rate 0.8, 200 warm-start rooms", "oracle",
                ("controls.oracle_source=lesson", *RATE, *MANY_ROOMS)),
        Variant(f"{RULE}, home rate 0.8, 200 warm-start rooms", "static_online",
                ("controls.lesson_reader=rule", *RATE, *MANY_ROOMS)),
        Variant(f"{SEEN}, home rate 0.8, 200 warm-start rooms",
                extra=(*SEEN_EXTRACTOR, *RATE, *MANY_ROOMS)),
        # The extractor also taught on a wandering expert's episodes, which
        # go where the actor's do (crl_jax/training/wandering.py).
        Variant(f"{SEEN}, wandering expert, home rate 0.8, 200 warm-start rooms",
                extra=(*SEEN_EXTRACTOR, *WANDER, *RATE, *MANY_ROOMS)),
        # ... writing its greedy lessons: sampled at the rollout's temperature
        # it was right far less often than greedy on the same prompts.
        Variant(f"{SEEN}, wandering expert, greedy extractor, home rate 0.8, "
                "200 warm-start rooms", extra=(*SEEN_EXTRACTOR, *WANDER, *GREEDY, *RATE,
                                               *MANY_ROOMS)),
        Variant("GRPO, home rate 0.8, 200 warm-start rooms", "none", (*RATE, *MANY_ROOMS)))
# The actor also taught on lessons in the form the bank first holds them:
# one home, where another game of the room showed the type, right only as
# often as two games agree (warm_start.guided_source lessonseen,
# crl_jax/training/lesson_demos.py). Taught on the household's true lessons
# alone, the actor's guided episodes won no more than its free ones with
# the lessons read by rule, which name one game's home. Controls and the
# rule only: the learned arm waits for an oracle that pays here.
BANK_FORM = ("warm_start.guided_source=lesson:1,lessonseen:1",)
FORM = (*RATE, *MANY_ROOMS, *BANK_FORM)


def controls(what: str, extra: tuple, oracle: str = "lesson") -> tuple:
    """The oracle lesson (controls.oracle_source set to ``oracle``: lesson
    or lessonfirst), the lessons read by rule and GRPO, each with ``extra``,
    labelled ``what``: a regime's controls and the rule alone."""
    return (Variant(f"{ORACLE}, {what}", "oracle", (f"controls.oracle_source={oracle}", *extra)),
            Variant(f"{RULE}, {what}", "static_online", ("controls.lesson_reader=rule", *extra)),
            Variant(f"GRPO, {what}", "none", extra))


FORMS = controls("actor taught on one-game lessons", FORM)
# The walks a guided demonstration's line names, repeated: on seed 2 the
# true-lesson warm start above taught an actor that reads no line at all
# (docs/FINDINGS.md, "Households: the warm-started actor reads a two-home
# lesson"), and they are the decisions reading its line decides.
WALKS = ("warm_start.line_repeat=4",)
READ = (*RATE, *MANY_ROOMS, *WALKS)
READS = controls("lesson walks repeated", READ)
# ... and the actor's warm-start rate decayed along a cosine to a tenth: at
# a constant rate seed 2's warm start ended with its loss still swinging
# and read its line a little (docs/FINDINGS.md, "Households: with its lesson
# walks repeated"). Each step's games drawn by the seed and step alone
# (train.step_seeded_draws), so the oracle and GRPO of a seed play the same
# games at every step: with the run's one generator they part after the
# first step, and which four games a step draws moved its success from 0 to
# 0.6.
DECAYED_READ = (*READ, "warm_start.actor_lr_end=0.1", "train.step_seeded_draws=true")
DECAYED = controls("lesson walks repeated, rate decayed", DECAYED_READ)
# ... for 40 RL steps: seed 2's oracle lifted its held-out success yet its
# guided episodes won no more than its free ones in 20 steps; at 40 steps
# the preset's oracle trained above GRPO on both seeds run (the FORTY group).
DECAYED_FORTY = controls("lesson walks repeated, rate decayed, 40 steps",
                         (*DECAYED_READ, *FORTY_STEPS))
# The actor taught lessons of one home alone (warm_start.guided_source=
# lessonfirst), shown the true first home by the oracle: seed 2's warm start
# read two-home lessons out of order and walked to the goal's place first
# under every two-home recipe tried, and read one-home lessons 0.82
# (docs/FINDINGS.md, "Households: seed 2's actor reads its line less"). One
# home is also the form a lesson read from one episode has.
# The bank's arms merge to one home too (experience.lesson_homes=1), the
# form the actor reads, and the learned extractor writes greedily (right
# more often than sampled: "Households: the extractor reads the expert's
# episodes").
# The extractor's batches of 16: at 32 its buffer first held a batch at step
# 19 or 20 (a sample is ready once its entry has guided outcomes, about 1.5
# a step), so its RL barely ran and Comp. RL was Static Online.
BATCH_16 = ("experience.bank.train_batch_size=16",)
# The extractor's warm start also taught on the warm-started actor's own
# episodes of the warm start's games (training/actor_episodes.py), each
# lesson what its clipped prompt shows, as the rule reads it: taught on the
# expert's, its lessons named the first home 0.25 of the time where the
# rule's named it 0.66.
ACTOR_READ = ("warm_start.extractor_actor_episodes=1", "warm_start.extractor_reads_shown=true")
# ... on games of its households where objects have no homes
# (warm_start.extractor_home_rate=0): taught at the run's rate it wrote, on
# the pool's new rooms, homes its warm start's rooms had ("soapbar:
# countertop 1" after "take soapbar 1 from cabinet 1"); where a type lies
# anew in every game only reading the trajectory predicts its lesson.
READ_ONLY = ("warm_start.extractor_home_rate=0",)
# ... with 3x its warm-start steps, or twice its layers: taught on the
# actor's episodes it still named, about half the time, another receptacle
# of the trajectory (the goal's destination, the last one searched) than
# the one "take X from Y" names, and its loss still fell at step 300.
LONGER = ("warm_start.extractor_steps=900",)
DEEPER = ("extractor.num_layers=4",)
# Lessons merged by evidence: which receptacles each episode looked at in
# vain before its pick-up, beside where it found the type, and homes ranked
# by the share of looks that found it. Where an episode found the type
# depends on where the actor looked first: in seed 0's rule arm two of the
# pool's room/type pairs had their second home picked 26 and 16 times
# against 9 and 6 for the first (lesson_writes.py --evidence), so the
# rule's merged votes named the second home.
EVIDENCE = ("experience.merger=lesson_evidence", "experience.merge_every=1")
# ... counted by what each look showed (clipped observations name the goal's
# objects they showed): the actor's lost episodes often saw the type and
# took none, and pick-up counts scored those looks in vain.
SIGHTINGS = (*EVIDENCE, "experience.trajectory_sightings=true")
# ... written by the extractor, taught so in its warm start; a lesson with
# eight receptacles looked at in vain is 84 tokens of reply.
WRITES_EVIDENCE = (*EVIDENCE, "warm_start.extractor_writes_evidence=true",
                   "experience.extractor_max_new_tokens=128")
FIRST_READ = (*DECAYED_READ, "warm_start.guided_source=lessonfirst")
ONE_HOME = (*FIRST_READ, "experience.lesson_homes=1")
_FIRST = "one-home lessons taught and shown"
_FIRST_ORACLE, _, _FIRST_GRPO = controls(_FIRST, FIRST_READ, oracle="lessonfirst")
FIRST = (_FIRST_ORACLE,
         Variant(f"{RULE}, {_FIRST}", "static_online", ("controls.lesson_reader=rule", *ONE_HOME)),
         Variant(f"{COMP}, greedy extractor, {_FIRST}", extra=(*ONE_HOME, *GREEDY)),
         Variant(f"{RULE}, votes kept, {_FIRST}", "static_online",
                 ("controls.lesson_reader=rule", *ONE_HOME, *VOTES)),
         Variant(f"{RULE}, merged by evidence, {_FIRST}", "static_online",
                 ("controls.lesson_reader=rule", *ONE_HOME, *EVIDENCE)),
         Variant(f"{RULE}, merged by what each look showed, {_FIRST}", "static_online",
                 ("controls.lesson_reader=rule", *ONE_HOME, *SIGHTINGS)),
         Variant(f"{COMP}, extractor taught on the actor's episodes to write what each look "
                 f"showed, {_FIRST}", extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ,
                                             *WRITES_EVIDENCE, *SIGHTINGS[2:],
                                             "warm_start.extractor_sightings=true")),
         Variant(f"{COMP}, extractor taught on the actor's episodes to write evidence, "
                 f"merged by evidence, {_FIRST}",
                 extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ, *WRITES_EVIDENCE)),
         Variant(f"{COMP}, greedy extractor, batches of 16, {_FIRST}",
                 extra=(*ONE_HOME, *GREEDY, *BATCH_16)),
         Variant(f"{COMP}, extractor taught on the actor's episodes, {_FIRST}",
                 extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ)),
         Variant(f"{COMP}, extractor taught on the actor's episodes where nothing has a home, "
                 f"{_FIRST}", extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ, *READ_ONLY)),
         Variant(f"{COMP}, extractor taught on the actor's episodes 3x as long, {_FIRST}",
                 extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ, *LONGER)),
         Variant(f"{COMP}, 4-layer extractor taught on the actor's episodes, {_FIRST}",
                 extra=(*ONE_HOME, *GREEDY, *BATCH_16, *ACTOR_READ, *DEEPER)),
         _FIRST_GRPO)
# ... with RL drawing the pool's first 4 households (env.drawn_households=4):
# over 20 steps of 4 games a (household, goal type) pair of 8 households is
# met in about 3.5 games, and the best lesson those games allow leads to a
# receptacle holding the type in 0.51 of the step's games against the
# oracle's 0.79; on 4 households in 0.71 against 0.85
# (experiments/diagnostics/lesson_ceiling.py).
# A game's looks show many types beside the goal's: read by rule, one game
# teaches where each lies (experience.sightings_of=every). With every type's
# placements counted the same ceiling rises to 0.69 (lesson_ceiling.py).
EVERY_TYPE = ("experience.sightings_of=every", "experience.bank.max_ops_per_call=16")
# ... and learned: the extractor taught to read the goal's sightings is asked
# once for each type a trajectory saw, about that type
# (experience.sightings_of=each; about 6 calls an episode where one was).
EACH_TYPE = ("experience.sightings_of=each", "experience.bank.max_ops_per_call=16")
# ... taught so: asked about another type than the one its trajectory took,
# the extractor taught on the goal's type alone wrote about the taken one
# (its lessons named the first home 0.34 of the time, against the rule's
# 0.87: docs/RESULTS.md). Each warm-start trajectory also gives pairs
# about 2 other types it saw, its goal restated about each.
OTHER_TYPES = ("warm_start.extractor_other_types=2",)
# ... with each sighting's tag naming where it was seen ("[seen at drawer 2:
# keychain 2]"): so taught, the extractor still named the receptacle looked
# into just before or after the one whose look showed the type, which the
# clip names some thirty characters before the tag. Its replies were right
# 0.57 against 0.59 without (docs/RESULTS.md); taught 900 steps without
# tags, 0.93.
PLACES = ("experience.sighting_places=true",)
_FOUR = "one-home lessons taught and shown, 4 households drawn"
FOUR_READ = (*FIRST_READ, "env.drawn_households=4")
FIRST_FOUR = (Variant(f"{ORACLE}, {_FOUR}", "oracle",
                      ("controls.oracle_source=lessonfirst", *FOUR_READ)),
              Variant(f"{RULE}, merged by what each look showed, {_FOUR}", "static_online",
                      ("controls.lesson_reader=rule", *FOUR_READ, "experience.lesson_homes=1",
                       *SIGHTINGS)),
              Variant(f"{COMP}, extractor taught on the actor's episodes to write what each "
                      f"look showed, {_FOUR}", extra=(*FOUR_READ, "experience.lesson_homes=1",
                                                      *GREEDY, *BATCH_16, *ACTOR_READ,
                                                      *WRITES_EVIDENCE, *SIGHTINGS[2:],
                                                      "warm_start.extractor_sightings=true")),
              Variant(f"GRPO, {_FOUR}", "none", FOUR_READ))
# ... and read for every type, beside a GRPO arm of the same warm starts:
# these were remade on another machine from the same cache keys and differ
# from those the arms above read (held-out success at step 0 moved by up to
# 0.03), so these arms are compared with each other. max_ops_per_call is
# inert but for the every-type reader (the others write one lesson a call);
# it names the arms apart from the group above.
_EVERY = "one-home lessons taught and shown, 4 households drawn, warm starts remade"
_TAUGHT_LONGER = ("extractor taught 3x as long on the actor's episodes to write what each look "
                  "showed of its goal's and 2 other types, asked about each type seen")
TAUGHT_LONGER = (*FOUR_READ, "experience.lesson_homes=1", *GREEDY, *BATCH_16, *ACTOR_READ,
                 *WRITES_EVIDENCE, *SIGHTINGS[2:], "warm_start.extractor_sightings=true",
                 *EACH_TYPE, *OTHER_TYPES, *LONGER)
_CREDITING = "merged lessons crediting their writers"
CREDITING = ("experience.bank.merge_credit=sources",)
FOUR_EVERY = (Variant(f"{ORACLE}, {_EVERY}", "oracle",
                      ("controls.oracle_source=lessonfirst", *FOUR_READ, EVERY_TYPE[1])),
              Variant(f"{RULE}, merged by what each look showed, {_EVERY}", "static_online",
                      ("controls.lesson_reader=rule", *FOUR_READ, "experience.lesson_homes=1",
                       *SIGHTINGS, EVERY_TYPE[1])),
              Variant(f"{RULE}, merged by what each look showed of every type, {_EVERY}",
                      "static_online",
                      ("controls.lesson_reader=rule", *FOUR_READ, "experience.lesson_homes=1",
                       *SIGHTINGS, *EVERY_TYPE)),
              Variant(f"{COMP}, extractor taught on the actor's episodes to write what each "
                      f"look showed, asked about each type seen, {_EVERY}",
                      extra=(*FOUR_READ, "experience.lesson_homes=1", *GREEDY, *BATCH_16,
                             *ACTOR_READ, *WRITES_EVIDENCE, *SIGHTINGS[2:],
                             "warm_start.extractor_sightings=true", *EACH_TYPE)),
              Variant(f"{COMP}, extractor taught on the actor's episodes to write what each "
                      f"look showed of its goal's and 2 other types, asked about each type "
                      f"seen, {_EVERY}",
                      extra=(*FOUR_READ, "experience.lesson_homes=1", *GREEDY, *BATCH_16,
                             *ACTOR_READ, *WRITES_EVIDENCE, *SIGHTINGS[2:],
                             "warm_start.extractor_sightings=true", *EACH_TYPE, *OTHER_TYPES)),
              Variant(f"{COMP}, {_TAUGHT_LONGER}, {_EVERY}", extra=TAUGHT_LONGER),
              # ... its controls on the same warm starts: reading another
              # household's lessons (no gain if the gain is transfer), and its
              # extractor kept fixed through RL (Static Online Exp.).
              Variant(f"{COMP}, {_TAUGHT_LONGER}, another household's lessons, {_EVERY}",
                      extra=(*TAUGHT_LONGER, "controls.lesson_room=other")),
              Variant(f"Static Online Exp., {_TAUGHT_LONGER}, {_EVERY}", "static_online",
                      TAUGHT_LONGER),
              # ... and with each merged lesson crediting the samples that
              # wrote the lessons it states: merged every step, the lesson a
              # guided episode reads is the merge's, which credited no sample,
              # so the extractor's RL buffer never filled and Static Online
              # trained as Comp. RL (experiments/diagnostics/extractor_buffer.py).
              Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, {_EVERY}",
                      extra=(*TAUGHT_LONGER, *CREDITING)),
              Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, another household's lessons, "
                      f"{_EVERY}", extra=(*TAUGHT_LONGER, *CREDITING, "controls.lesson_room=other")),
              Variant(f"{COMP}, extractor taught on the actor's episodes to write what each "
                      f"look showed, tagged with its place, of its goal's and 2 other types, "
                      f"asked about each type seen, {_EVERY}",
                      extra=(*FOUR_READ, "experience.lesson_homes=1", *GREEDY, *BATCH_16,
                             *ACTOR_READ, *WRITES_EVIDENCE, *SIGHTINGS[2:],
                             "warm_start.extractor_sightings=true", *EACH_TYPE, *OTHER_TYPES,
                             *PLACES)),
              Variant(f"GRPO, {_EVERY}", "none", (*FOUR_READ, EVERY_TYPE[1])))
# ... and its best learned recipe where objects have no homes
# (env.home_rate=0, their own warm starts): a gain that is transfer must
# vanish there.
_FOUR_NONE = "one-home lessons taught and shown, 4 households drawn, no homes (home rate 0)"
FOUR_NONE_READ = (*(o for o in FOUR_READ if not o.startswith("env.home_rate=")), *NO_HOMES)
FOUR_NONE = (Variant(f"{COMP}, {_TAUGHT_LONGER}, {_FOUR_NONE}",
                     extra=(*FOUR_NONE_READ, *TAUGHT_LONGER[len(FOUR_READ):])),
             Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, {_FOUR_NONE}",
                     extra=(*FOUR_NONE_READ, *TAUGHT_LONGER[len(FOUR_READ):], *CREDITING)),
             Variant(f"GRPO, {_FOUR_NONE}", "none", (*FOUR_NONE_READ, EVERY_TYPE[1])))
# ... at a 12-turn cap, where this regime's wins can be 1.3x shorter
# (docs/FINDINGS.md, "Households: the experts at the turn cap"): its
# controls first, on warm starts of their own.
_FOUR_TWELVE = "one-home lessons taught and shown, 4 households drawn, 12 turns"
FOUR_TWELVE = (Variant(f"{ORACLE}, {_FOUR_TWELVE}", "oracle",
                       ("controls.oracle_source=lessonfirst", *FOUR_READ, EVERY_TYPE[1],
                        *TWELVE_TURNS)),
               Variant(f"GRPO, {_FOUR_TWELVE}", "none", (*FOUR_READ, EVERY_TYPE[1], *TWELVE_TURNS)))
# ... posing every task type but the two-object one (env.task_types): held
# out, no trained actor of the FOUR_EVERY group won one of the 61
# two-object games it played, with the true lesson or without
# (experiments/diagnostics/success_by_type.py), and they are about a third
# of the pool's games, diluting every gap a lesson makes. Its own warm
# starts (the warm start's games are narrowed too).
FIVE_TYPES = ("env.task_types=" + ",".join(t for t in TASK_TYPES
                                           if t != "pick_two_obj_and_place"),)
_FOUR_FIVE = "one-home lessons taught and shown, 4 households drawn, no two-object goals"
FOUR_FIVE = (Variant(f"{ORACLE}, {_FOUR_FIVE}", "oracle",
                     ("controls.oracle_source=lessonfirst", *FOUR_READ, EVERY_TYPE[1],
                      *FIVE_TYPES)),
             # ... the learned recipe of FOUR_EVERY (merged lessons crediting
             # their writers) and its controls, added once the oracle trained
             # 1.41x GRPO here on seeds 0 and 1
             Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, {_FOUR_FIVE}",
                     extra=(*TAUGHT_LONGER, *CREDITING, *FIVE_TYPES)),
             Variant(f"Static Online Exp., {_TAUGHT_LONGER}, {_FOUR_FIVE}", "static_online",
                     (*TAUGHT_LONGER, *FIVE_TYPES)),
             Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, another household's lessons, "
                     f"{_FOUR_FIVE}", extra=(*TAUGHT_LONGER, *CREDITING,
                                             "controls.lesson_room=other", *FIVE_TYPES)),
             Variant(f"GRPO, {_FOUR_FIVE}", "none", (*FOUR_READ, EVERY_TYPE[1], *FIVE_TYPES)))
# ... and without two-object goals (FOUR_FIVE's regime, no homes)
_FIVE_NONE = f"{_FOUR_NONE}, no two-object goals"
FIVE_NONE = (Variant(f"{COMP}, {_TAUGHT_LONGER}, {_CREDITING}, {_FIVE_NONE}",
                     extra=(*FOUR_NONE_READ, *TAUGHT_LONGER[len(FOUR_READ):], *CREDITING,
                            *FIVE_TYPES)),
             Variant(f"GRPO, {_FIVE_NONE}", "none", (*FOUR_NONE_READ, EVERY_TYPE[1],
                                                      *FIVE_TYPES)))
# ... and where objects have no homes (env.home_rate=0, their own warm
# starts): lessons that pay by transfer must stop paying.
_NO_HOMES = tuple(o for o in ONE_HOME if not o.startswith("env.home_rate=")) + NO_HOMES
_FIRST_NONE = "one-home lessons, no homes (home rate 0)"
FIRST_NONE = (Variant(f"{RULE}, {_FIRST_NONE}", "static_online",
                      ("controls.lesson_reader=rule", *_NO_HOMES)),
              Variant(f"{COMP}, extractor taught on the actor's episodes, {_FIRST_NONE}",
                      extra=(*_NO_HOMES, *GREEDY, *BATCH_16, *ACTOR_READ)),
              Variant(f"GRPO, {_FIRST_NONE}", "none",
                      tuple(o for o in FIRST_READ if not o.startswith("env.home_rate="))
                      + NO_HOMES))
GROUPS = ((HOMES, f"home rate {load_preset(PRESET).env.home_rate:g}"),
          (NONE, "no homes (home rate 0)"),
          (SMALL, "small rooms"), (TWELVE, "12 turns"), (FORTY, "40 steps"),
          (TWO, "2 households drawn"), (TWO_KEPT, "2 households drawn, votes kept"),
          (KEPT, "votes kept"), (HIGH, "home rate 0.8"),
          (MANY, "home rate 0.8, 200 warm-start households"),
          (FORMS, "home rate 0.8, 200 warm-start households, one-game lessons taught"),
          (READS, "home rate 0.8, 200 warm-start households, lesson walks repeated"),
          (DECAYED, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                    "warm-start rate decayed"),
          (DECAYED_FORTY, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                          "warm-start rate decayed, 40 RL steps"),
          (FIRST, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                  "warm-start rate decayed, one-home lessons"),
          (FIRST_FOUR, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                       "warm-start rate decayed, one-home lessons, 4 households drawn"),
          (FOUR_EVERY, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                       "warm-start rate decayed, one-home lessons, 4 households drawn, "
                       "warm starts remade"),
          (FOUR_NONE, "no homes (home rate 0), 200 warm-start households, lesson walks "
                      "repeated, warm-start rate decayed, one-home lessons, 4 households drawn"),
          (FOUR_TWELVE, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                        "warm-start rate decayed, one-home lessons, 4 households drawn, 12 turns"),
          (FOUR_FIVE, "home rate 0.8, 200 warm-start households, lesson walks repeated, "
                      "warm-start rate decayed, one-home lessons, 4 households drawn, "
                      "no two-object goals"),
          (FIVE_NONE, "no homes (home rate 0), 200 warm-start households, lesson walks "
                      "repeated, warm-start rate decayed, one-home lessons, 4 households drawn, "
                      "no two-object goals"),
          (FIRST_NONE, "no homes (home rate 0), 200 warm-start households, lesson walks "
                       "repeated, warm-start rate decayed, one-home lessons"))
