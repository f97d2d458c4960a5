"""Experience pipeline: the usearch experience bank (snapshots, single writer) and the manager."""
from crl_jax.experience.bank import BankClosedError, BankFailedError, ExperienceBank
from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.consolidation import (AskResult, ConsolidationReport, EpisodeRecord, ExtractionRequest,
                                              ExtractorReply, MergeReport)
from crl_jax.experience.diversification import diversified_scores, select_top_k
from crl_jax.experience.embedders import Embedder, EmbeddingCache, HashingEmbedder
from crl_jax.experience.entries import (AddEntry, DeleteEntry, Entry, EntryStats, MarkTrained, PublishReceipt,
                                        UpdateEntry)
from crl_jax.experience.manager import ExperienceManager, ManagerClosedError, ManagerFailedError, Retrieval
from crl_jax.experience.operations import (AddOperation, ParseResult, ReturnOperation, UpdateOperation,
                                           parse_operations)
from crl_jax.experience.persistence import load_state, save_snapshot
from crl_jax.experience.reweighting import count_aware_weight
from crl_jax.experience.snapshot import Snapshot, SnapshotReader
from crl_jax.experience.training_buffer import ExtractorTrainingBuffer, TrainingItem

__all__ = [
    "AddEntry", "AddOperation", "AskResult", "BankClosedError", "BankFailedError", "ConsolidationReport",
    "DeleteEntry", "Embedder", "EmbeddingCache", "Entry", "EntryStats", "EpisodeRecord", "ExperienceBank",
    "ExperienceConfig", "ExperienceManager", "ExtractionRequest", "ExtractorReply", "ExtractorTrainingBuffer",
    "HashingEmbedder", "ManagerClosedError", "ManagerFailedError", "MarkTrained", "MergeReport", "ParseResult",
    "PublishReceipt", "Retrieval", "ReturnOperation", "Snapshot", "SnapshotReader", "TrainingItem",
    "UpdateEntry", "UpdateOperation", "count_aware_weight", "diversified_scores", "load_state",
    "parse_operations", "save_snapshot", "select_top_k",
]
