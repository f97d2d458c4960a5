"""The warm start's settings (the supervised stage before RL), one frozen
dataclass of the run configuration (crl_jax/training/config.py)."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class WarmStartSpec:
    demos: int = 200  # expert episodes for supervised warm start
    actor_steps: int = 60
    """Supervised steps of the actor's warm start."""
    actor_lr: float = 3e-3
    """Learning rate of the actor's supervised warm start."""
    actor_lr_end: float = 1.0
    """The actor's warm-start rate falls along a cosine from actor_lr to this
    fraction of it at the last step: at a constant rate the last weights
    carry the noise of the last batches. 1: a constant rate."""
    extractor_steps: int = 40
    """Supervised steps of the extractor's warm start."""
    extractor_lr: float = 3e-3
    """Learning rate of the extractor's supervised warm start."""
    batch: int = 32
    """Sequences per supervised warm-start step."""
    recovery_fraction: float = 0.2  # demo turns duplicated with a rejected action in history
    guided_fraction: float = 0.5
    """Share of the actor's demonstrations that carry an experience line."""
    guided_source: str = "own:2,noisy1:1,peer:1"
    """Where a guided demonstration's line comes from, as source:weight pairs:
    own (the game's own plan, followed by the informed expert), noisyK (that
    plan with K wrong steps), peer (another game's plan, which the expert
    ignores), peerseen (ALFWorld: a peer whose taken objects this game shows,
    of another type than the goal's), swap (ALFWorld: the own plan naming
    another object the game shows, ignored). See
    crl_jax/training/guided_demos.py."""
    guided_contrast: bool = False
    """Each guided game gives two demonstrations, one with a line the expert
    follows and one with a line it ignores (both drawn from guided_source,
    which must have both kinds), the same game on both sides: the only cue
    that tells them apart is whether the line is the game's own plan."""
    # Copies of each decisive (non-navigation) demo turn. Navigation is most of
    # an expert's turns, so a tiny actor learns "go to" first and walks past a
    # visible target; repeating take/open/move/... turns balances the decisions.
    decision_repeat: int = 1
    line_repeat: int = 1
    """Copies of each guided demonstration turn whose action is a step its
    line states (a walk to one of a lesson's homes, a step of a plan): the
    turns where reading the line decides the action. With them once, on
    some seeds the tiny actor's warm start never learnt to read its line
    (docs/FINDINGS.md, "Households: the warm-started actor reads a two-home
    lesson"). 1: no copies."""
    # Share of unguided actor demos (and of extractor demos) that open with a
    # search-and-ask call and its answer: without it the tiny actor never
    # calls the tool (experience.search_and_ask stays inert).
    ask_fraction: float = 0.0
    judge_fraction: float = 0.0
    """Share of guided actor demonstrations that also teach judging their line
    (experience.actor_critic): "accept" for the game's own plan (and noisyK),
    "reject" for another game's. 0: no judging is taught."""
    extractor_missteps: float = 0.0
    """Share of won demos whose extractor sample is repeated with one or two
    actions the game rejected ("... -> Nothing happens.") put into the
    trajectory, the answer still the clean game's plan: the actor's
    trajectories in RL have such steps and expert ones never do. Households:
    the share of each lesson pair (won, cut short, wrong pick) repeated with
    1-8 of them, the answer still the lesson it supports. 0: none."""
    extractor_room_jitter: float = 0.0
    """Households: share of the extractor's warm-start pairs whose room line,
    in the prompt and in the target lesson alike, is re-drawn (receptacles
    the trajectory never names dropped or others added), so the room can
    only be copied from the prompt, not recalled from the warm start's few
    households. 0: every pair states its household's own room."""
    extractor_writes_room: bool = True
    """Households: whether the extractor's warm-start lessons end with their
    room ("mug: go to shelf 1 (room: ...)"). False: they state the type and
    homes alone, and experience.bank.lesson_room=episode files them under
    the episode's room, so the tiny extractor learns to read where the
    goal's object was picked up rather than to copy a receptacle list."""
    extractor_wrong_picks: float = 0.0
    """Households: share of the extractor's warm-start pairs repeated with
    the goal's pick-up replaced by one of another object type and the game
    ending there, lost; the answer is no lesson. The actor picks the wrong
    object in RL and the expert never does, and without such pairs the
    extractor wrote a lesson about whatever was picked up. 0: none."""
    extractor_reads_shown: bool = False
    """Households: whether the extractor's warm-start lessons name only the
    pick-ups its prompt shows (a trajectory is clipped at 700 characters,
    and a long search's pick-up past the clip gives no lesson). False: the
    lesson of the whole trajectory, which can name a home the prompt hides."""
    extractor_writes_evidence: bool = False
    """Households, with extractor_reads_shown: the extractor's warm-start
    lessons also state where the episode looked in vain before its pick-up
    ("mug: go to shelf 1 (evidence: shelf 1 1/1, desk 1 0/1)";
    alfworld_lessons.read_evidence), the evidence experience.merger=
    lesson_evidence ranks homes by. False: the home alone."""
    extractor_sightings: bool = False
    """Households, with extractor_writes_evidence: the warm start's
    trajectories name the goal's objects each clipped observation showed
    (as experience.trajectory_sightings shows RL's, which it needs), and
    the evidence counts what each look showed
    (alfworld_lessons.read_sightings), not what the episode picked up."""
    extractor_other_types: int = 0
    """Households, with extractor_sightings: each trajectory also gives up
    to this many pairs about other object types its looks showed (drawn at
    random), each with its goal restated about that type and its clips
    naming that type's objects, answered with that type's lesson: the
    requests experience.sightings_of=each makes. Taught on the goal's type
    alone, the extractor wrote about the type the trajectory took, whatever
    its goal named."""
    extractor_wanders: float = 0.0
    """Households: the extractor's warm start also reads one episode per
    demonstration's game played by a wandering expert, which sends a random
    admissible action instead of its own with this probability each turn and
    stops at the RL turn cap (training/wandering.py): trajectories like the
    actor's, which walks to the destination first, moves other objects and
    runs out of turns, where the expert's go straight to the object. Each
    episode's lesson is what it shows. 0: expert episodes only."""
    extractor_actor_episodes: float = 0.0
    """Households: the extractor's warm start also reads the warm-started
    actor's own episodes, one on this share of the demonstrations' games,
    played as RL plays them, half of them (guided_fraction) reading their
    household's first-home lesson; each episode's lesson is what it shows
    (training/actor_episodes.py). The actor's detours follow its own habits,
    which neither the expert's episodes nor a wandering expert's show. 0:
    none."""
    extractor_home_rate: float = -1.0
    """Households: the extractor's warm start reads games of the warm start's
    households whose objects lie at their homes at this rate (the expert's
    episodes, and the wandering expert's and the actor's where asked),
    instead of the run's games. At 0 where a type lies is drawn afresh in
    every game, so a lesson can only be read from its trajectory: at the
    run's rate the tiny extractor learnt the warm start's rooms and wrote
    their homes on new rooms. -1: the run's env.home_rate."""
    vocab_size: int = 1024  # tokenizer trained on environment text (tiny models)
    # One token per digit in that tokenizer: ids and numbers read the same
    # wherever they appear, so copying one (WebShop's product ids) is a
    # per-character pattern rather than a set of merged digit chunks. (The
    # tiny actor copies no better with it: docs/FINDINGS.md, "WebShop alone
    # and SWE-Bench: not run".)
    split_digits: bool = False
    # The seed of everything before RL: the generated game pools (train and
    # eval), the demonstrations, the tokenizer, the tiny models' init, the SFT
    # order and train.task_pool. train.seed only drives RL, so runs that differ
    # only in it start from one warm-started model on the same tasks, as paper
    # runs all start from one pretrained checkpoint. (The figure sweeps set
    # both: each figure seed is its own warm start.)
    seed: int = 0
    # Reuse warm starts across runs of the same setting (crl_jax/training/warm_cache.py);
    # "" = always train. Arms of a comparison then share one warm-started actor.
    cache_dir: str = ""

    def __post_init__(self):
        if not 0.0 < self.actor_lr_end <= 1.0:
            raise ValueError(f"warm_start.actor_lr_end must be in (0, 1], got {self.actor_lr_end}")
        if not (self.extractor_home_rate == -1.0 or 0.0 <= self.extractor_home_rate <= 1.0):
            raise ValueError("warm_start.extractor_home_rate must be -1 (the run's) or in [0, 1], "
                             f"got {self.extractor_home_rate}")
        if self.line_repeat < 1:
            raise ValueError(f"warm_start.line_repeat must be >= 1, got {self.line_repeat}")
        for key in ("guided_fraction", "ask_fraction", "judge_fraction", "extractor_missteps",
                    "extractor_room_jitter", "extractor_wrong_picks", "extractor_wanders",
                    "extractor_actor_episodes"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ValueError(f"warm_start.{key} must be in [0, 1]")
