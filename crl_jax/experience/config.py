"""Configuration of the experience pipeline (bank + manager), one frozen dataclass."""
from __future__ import annotations

import dataclasses

PUBLISH_MODES = ("copy", "double_buffer", "delta")
INDEX_DTYPES = ("f32", "bf16", "f16")
RECENCY_CLOCKS = ("steps", "seconds")
ENTRY_FORMATS = ("any", "title_content")
RETRIEVAL_KEYS = ("text", "title", "lesson")
LESSON_ROOMS = ("written", "episode")
MERGE_CREDITS = ("none", "sources")
DIVERSITY_SCORES = ("similarity", "rank")  # Eq. 6's s_rank (diversification.py)


@dataclasses.dataclass(frozen=True)
class ExperienceConfig:
    """Every knob of the experience bank and manager.

    Defaults follow the paper (PAPER.md section 1): cap 20,000, N=16, K=1,
    lambda=0.4, recency window 300 s, batches of 16 with 1 ms max wait, LRU
    cache of 1,000 queries, W=4 search workers, cooldown delta=1, alpha=0.5,
    extractor batches of 64, at most 3 operations per extractor call, merge
    chunks of 5.
    """

    # Bank.
    cap: int = 20_000
    """Most entries the bank keeps (paper: 20,000)."""
    per_task: bool = False  # one index per task key (multi-task tables) or one for all
    index_dtype: str = "f32"
    """Storage type of the usearch index's vectors: f32, bf16 or f16."""
    connectivity: int = 16
    """usearch HNSW graph degree (neighbours per node)."""
    expansion_add: int = 64
    """usearch HNSW search width while adding entries."""
    expansion_search: int = 64
    """usearch HNSW search width while searching."""
    # How the writer makes a new snapshot visible (the experience bank benchmark,
    # docs/BENCHMARKS.md, compares them). "delta" (default): an immutable base under small delta
    # layers, merged in the background; a publish costs O(batch) at any bank
    # size (crl_jax/experience/delta_store.py). "copy": the writer serialises its
    # master index once per publish and every reader slot maps a zero-copy view.
    # "double_buffer": two sets of per-slot indexes alternate; the writer replays
    # the last batch on the stale set after its readers have left it. Both copy
    # the entry and statistics maps: O(bank) per publish.
    publish_mode: str = "delta"
    delta_merge_at: int = 1024
    """publish_mode="delta": ids changed since the base at which the delta layer
    is merged into a new base in the background (at least; see the fraction)."""
    delta_merge_fraction: float = 1 / 32
    """publish_mode="delta": and not before this fraction of the base has changed.
    A merge costs O(bank) (usearch holds the GIL while it serialises and maps
    the new index, so readers wait), so a threshold that grows with the bank
    keeps the share of time readers lose to merges the same at any size; the
    changed ids are searched exactly, so the fraction is kept small."""
    stats_flush_s: float = 0.05  # writer publishes pending usage events at least this often
    grace_timeout_s: float = 10.0  # double_buffer: max wait for readers to leave a stale set
    # Retrieval (Eq. 6).
    oversample_n: int = 16
    """Eq. 6: candidates N fetched by similarity before diversification."""
    top_k: int = 1
    """Entries each retrieval returns (paper: K = 1)."""
    diversity_lambda: float = 0.4
    """Eq. 6: weight lambda of the recency penalty."""
    diversity_score: str = "similarity"
    """Eq. 6's s_rank: "similarity" (the paper's text: the cosine similarity)
    or "rank" (the released code: minus the candidate's position in the
    search's order); diversification.diversified_scores says more."""
    recency_clock: str = "seconds"
    """What Eq. 6's recency window counts: "steps" (actor steps, the same on any
    machine) or "seconds" (wall clock, the paper's own form)."""
    recency_window_steps: int = 1
    """Eq. 6 in steps: an entry retrieved during the last this many actor steps
    (1: the current step) is penalised. The paper's 300 s is about one step of
    its 7B runs; on 2 CPU cores it is ~10 steps, on a GPU something else."""
    recency_window_s: float = 300.0
    """Eq. 6 in seconds (recency_clock="seconds"): the paper's window."""
    retrieval_key: str = "text"
    """What an entry is found by. "text": its whole text, against the query
    "goal: g, observation: o" (the paper and the released code). "title":
    its title (the part before the first ":", or <title>...</title>) against
    the episode's goal alone (beyond the paper): an entry is then found by the
    task it says it is for, not by the words its plan shares with the room.
    "lesson" (ALFWorld households, beyond the paper): a lesson by its object
    type and room, against the goal's object and the episode's room."""
    lesson_room: str = "written"
    """The room a stored lesson is filed under (ALFWorld households, with
    retrieval_key="lesson"). "written": the room the extractor wrote, the
    entry as written (the paper stores the extractor's text). "episode"
    (beyond the paper): the room of the episode the lesson was distilled
    from, stamped by the host (alfworld_lessons.about_room), so the
    extractor's task is the lesson's homes, not copying a 7-16 receptacle
    list. Texts that are no lesson are stored as written either way."""
    min_similarity: float = -1.0
    """Candidates whose cosine similarity to the query is below this are not
    returned, so a query with no entry this close reads nothing (beyond the
    paper; -1 = off). With retrieval_key="title", 0.95 keeps the entries whose
    title is the goal, or nearly."""
    released_top1_shuffle: bool = False
    """Eq. 6 as released (``diversity_dropout_p``): after the re-ranking, a
    top-1 retrieved within the window moves to the end of the pool with
    probability released_shuffle_prob."""
    released_shuffle_prob: float = 0.5
    """Probability of that move (released code: 0.5)."""
    # Manager search path.
    batch_size: int = 16
    """Queries the manager's search workers batch together."""
    max_wait_s: float = 0.001
    """Longest wait (seconds) for a search batch to fill."""
    cache_size: int = 1000
    """Queries whose embeddings the manager caches (LRU)."""
    workers: int = 4
    """Search worker threads W."""
    # Extractor training (Eq. 7) and consolidation.
    cooldown_delta: int = 1
    """Eq. 7: actor steps an entry cools down after training the extractor."""
    reweight_alpha: float = 0.5
    """Eq. 7: alpha of the training-count-aware weight."""
    train_batch_size: int = 64
    """Extractor samples per CISPO update (paper: 64)."""
    max_ops_per_call: int = 3
    """Most bank operations one extractor answer may make."""
    max_entry_chars: int = 4000
    """Entries longer than this are cut."""
    entry_format: str = "any"
    """What an added, updated or merged entry must look like: any text, or
    "title_content" (the released code: a title and a content, written
    <title>...</title><content>...</content>); others are dropped and counted
    as malformed."""
    consolidation_context: int = 3  # entries shown to the extractor besides the guiding one
    merge_chunk: int = 5
    """Entries the extractor reads per merge call."""
    merge_carry: int = 1
    """Entries of a merge chunk carried into the next chunk."""
    merge_credit: str = "none"
    """Whom a merged entry's guided episodes credit in r(m) (Eq. 3): none
    (the paper: a merged text is no extractor sample's), or "sources" (the
    samples that wrote the entries it states; needs a rule merger that says
    which, experience.merger lessons / lesson_votes / lesson_evidence)."""
    # Waits on other threads never block forever.
    thread_timeout_s: float = 30.0
    """Longest wait (seconds) on another thread before the run fails."""

    def __post_init__(self):
        positive_ints = ("cap", "connectivity", "expansion_add", "expansion_search", "oversample_n",
                         "top_k", "batch_size", "cache_size", "workers", "train_batch_size",
                         "max_ops_per_call", "max_entry_chars", "merge_chunk", "delta_merge_at")
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ExperienceConfig.{name} must be an int >= 1, got {value!r}")
        for name in ("cooldown_delta", "consolidation_context", "merge_carry",
                     "recency_window_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"ExperienceConfig.{name} must be an int >= 0, got {value!r}")
        if self.merge_carry >= self.merge_chunk:
            raise ValueError(f"ExperienceConfig.merge_carry ({self.merge_carry}) must be smaller "
                             f"than merge_chunk ({self.merge_chunk})")
        non_negative = ("diversity_lambda", "recency_window_s", "max_wait_s", "reweight_alpha",
                        "delta_merge_fraction")
        for name in non_negative:
            if not float(getattr(self, name)) >= 0.0:
                raise ValueError(f"ExperienceConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("stats_flush_s", "grace_timeout_s", "thread_timeout_s"):
            if not float(getattr(self, name)) > 0.0:
                raise ValueError(f"ExperienceConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.released_shuffle_prob <= 1.0:
            raise ValueError(f"ExperienceConfig.released_shuffle_prob must be in [0, 1], "
                             f"got {self.released_shuffle_prob!r}")
        if self.diversity_score not in DIVERSITY_SCORES:
            raise ValueError(f"ExperienceConfig.diversity_score must be one of {DIVERSITY_SCORES}, "
                             f"got {self.diversity_score!r}")
        if self.recency_clock not in RECENCY_CLOCKS:
            raise ValueError(f"ExperienceConfig.recency_clock must be one of {RECENCY_CLOCKS}, "
                             f"got {self.recency_clock!r}")
        if self.entry_format not in ENTRY_FORMATS:
            raise ValueError(f"ExperienceConfig.entry_format must be one of {ENTRY_FORMATS}, "
                             f"got {self.entry_format!r}")
        if self.retrieval_key not in RETRIEVAL_KEYS:
            raise ValueError(f"ExperienceConfig.retrieval_key must be one of {RETRIEVAL_KEYS}, "
                             f"got {self.retrieval_key!r}")
        if self.lesson_room not in LESSON_ROOMS:
            raise ValueError(f"ExperienceConfig.lesson_room must be one of {LESSON_ROOMS}, "
                             f"got {self.lesson_room!r}")
        if not -1.0 <= float(self.min_similarity) <= 1.0:
            raise ValueError(f"ExperienceConfig.min_similarity must be in [-1, 1] (a cosine), "
                             f"got {self.min_similarity!r}")
        if self.merge_credit not in MERGE_CREDITS:
            raise ValueError(f"ExperienceConfig.merge_credit must be one of {MERGE_CREDITS}, "
                             f"got {self.merge_credit!r}")
        if self.publish_mode not in PUBLISH_MODES:
            raise ValueError(f"ExperienceConfig.publish_mode must be one of {PUBLISH_MODES}, "
                             f"got {self.publish_mode!r}")
        if self.index_dtype not in INDEX_DTYPES:
            raise ValueError(f"ExperienceConfig.index_dtype must be one of {INDEX_DTYPES}, "
                             f"got {self.index_dtype!r}")

    @property
    def recency_window(self) -> float:
        """Eq. 6's window in the unit of recency_clock."""
        return float(self.recency_window_steps if self.recency_clock == "steps"
                      else self.recency_window_s)

    @property
    def candidate_pool(self) -> int:
        """N*K candidates searched before the Eq. 6 re-ranking."""
        return self.oversample_n * self.top_k
