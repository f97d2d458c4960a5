"""Do the arms of one seed really start from the same actor?

The warm-start cache is keyed by settings, not by the weights it holds: a
checkout that rebuilds an entry under code whose float sums run in another
order (attention, sampler caches) gets another actor under the same key, and
the same weights sampled by other code give other episodes. Records made
before and after such a rebuild would then be compared as if they shared a
start. Every arm's first evaluation (step 0, held-out games, no experience)
depends only on the actor, the evaluation games and the sampling code, so
arms of one seed and one warm-start key must agree on it; where they do not,
the figure says so instead of presenting the difference as an effect.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from crl_jax.training.warm_cache import recorded_warm_start

# The step-0 held-out evaluation without experience: its success, mean
# actions and tokens per action together tell builds apart far better than
# success alone (64 games: two builds often tie on it).
FINGERPRINT = ("eval_no_exp/success", "eval_no_exp/actions", "eval_no_exp/tokens_per_action")


def step0_fingerprint(rows: Sequence[Mapping]) -> tuple | None:
    """The FINGERPRINT metrics at step 0, rounded to 6 digits; None if the
    run has no complete step-0 evaluation."""
    for row in rows:
        if int(row.get("step", -1)) == 0 and all(k in row for k in FINGERPRINT):
            return tuple(round(float(row[k]), 6) for k in FINGERPRINT)
    return None


def mixed_starts(entries: Sequence[tuple[str, int, str, Sequence[Mapping]]]) -> list[str]:
    """Notes for each (seed, warm-start key) whose runs disagree at step 0.

    ``entries``: (label, seed, run directory, rows) per drawn run."""
    groups: dict[tuple[int, str], dict[tuple, list[str]]] = {}
    for label, seed, directory, rows in entries:
        key, fp = recorded_warm_start(directory), step0_fingerprint(rows)
        if key is None or fp is None:
            continue
        groups.setdefault((seed, key), {}).setdefault(fp, []).append(label)
    notes = []
    for (seed, key), by_fp in sorted(groups.items()):
        if len(by_fp) < 2:
            continue
        parts = [f"{', '.join(repr(x) for x in sorted(labels))} (held-out success {fp[0]:.3f}, "
                 f"{fp[1]:.2f} actions)" for fp, labels in
                 sorted(by_fp.items(), key=lambda item: sorted(item[1]))]
        notes.append(f"seed {seed}: the arms on warm start {key} do not start from the same "
                     f"actor (their step-0 evaluation differs: {'; '.join(parts)}); the entry "
                     f"was rebuilt, or the sampling code changed, between their runs, so their "
                     f"difference at this seed mixes two starts")
    return notes
