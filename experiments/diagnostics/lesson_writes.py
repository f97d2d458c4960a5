"""What a households run's extractor wrote in RL, against what each
episode's trajectory shows: every consolidation reply its last checkpoint
keeps as a training sample (a reply that wrote at least one entry), judged
as lesson_reading.py judges the warm start's (right, invented where the
text shows no pick-up, wrong homes, other):

    python experiments/diagnostics/lesson_writes.py RUN_DIR [RUN_DIR ...] [--save] [--json_out=F]

--save writes each run's shares to RUN_DIR/lesson_writes.json, which is
committed with a figure run's record (the checkpoints it is read from are
not).

A reply that wrote nothing ("no lesson") is not kept, so the shares are of
the writing replies; the line also gives the episodes consolidated and the
replies that wrote.

--greedy also answers those same prompts greedily, with the run's
warm-started extractor (before any RL; the run is rebuilt from its
config.json, so its warm start must be in the cache) and with the
extractor of the last checkpoint: sampling, the extractor's RL and what
the actor's episodes look like are then told apart.

    python experiments/diagnostics/lesson_writes.py RUN_DIR --greedy [--limit=N]

It also gives the share of prompts the two answer differently (what the
RL moved at all); --limit answers N prompts spread evenly over the buffer.

--examples=N prints N replies judged "wrong homes" with what their
trajectory shows.

--prompts_from=RUN_DIR has every run's extractors answer that run's
prompts instead: extractors taught differently, on the same episodes.

--evidence counts, per pool room and goal type, where the episodes' own
trajectories show the object picked up (read by rule): at the household's
first home, its second, or elsewhere. A bank that merges lessons by votes
can be no righter than the majority of these picks.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections import Counter

import tyro

VERDICTS = ("right", "invented", "wrong homes", "other")


@dataclasses.dataclass(frozen=True)
class Command:
    runs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories (each with checkpoints/)."""
    json_out: str | None = None
    """Also write the report as JSON here."""
    save: bool = False
    """Also write each run's shares to RUN_DIR/lesson_writes.json."""
    greedy: bool = False
    """Also judge greedy answers to the same prompts by the warm-started and
    the last checkpoint's extractor."""
    examples: int = 0
    """Also print this many replies judged "wrong homes", each with its
    goal, the trajectory it was shown and the lesson that text shows."""
    evidence: bool = False
    """Also count where the episodes picked up the goal's type, per pool
    room and type: the household's first home, its second, or elsewhere."""
    limit: int = 0
    """With --greedy: answer at most this many prompts, spread evenly over
    those the buffer holds (0: all)."""
    prompts_from: str | None = None
    """With --greedy: answer the consolidation prompts of this run's last
    checkpoint instead of each run's own, so extractors taught differently
    read the same episodes."""


def _consolidations(host_state: dict) -> list[dict]:
    samples = host_state["manager"]["training_buffer"]["samples"]
    return [s for s in samples if s["kind"] == "consolidate"]


def _shares(answers, prompts) -> dict:
    from experiments.diagnostics.lesson_reading import verdict
    counts = Counter(verdict(a, p) for a, p in zip(answers, prompts))
    return {k: counts[k] / max(1, len(prompts)) for k in VERDICTS}


def writes_of(host_state: dict) -> dict:
    """Verdict shares of the consolidation samples in a run's host state."""
    samples = _consolidations(host_state)
    return {"episodes": host_state["manager"]["counters"].get("episodes", 0),
            "writing_replies": len(samples),
            **_shares([s["response"] for s in samples], [s["prompt"] for s in samples])}


def pick_evidence(host_state: dict, split) -> dict[tuple[str, str], Counter]:
    """{(room, type): Counter of "first"/"second"/"other"}: where each
    consolidated trajectory about a pool household shows its goal's type
    picked up, against that household's homes (``split.rl_members()``)."""
    from crl_jax.envs.alfworld_lessons import parse_lesson, read_lesson
    from crl_jax.training.lesson_demos import prompt_lines
    rooms = {", ".join(h.signature): h for h in split.rl_members()}
    out: dict[tuple[str, str], Counter] = {}
    for s in _consolidations(host_state):
        goal, room, traj = prompt_lines(s["prompt"], "goal", "room", "traj")
        shown = read_lesson(goal, traj)
        lesson = parse_lesson(f"{shown} (room: {room})") if shown and room in rooms else None
        if lesson is None:
            continue
        homes = rooms[room].home_names(lesson.otype)
        where = ("first" if lesson.homes[0] == homes[0] else
                 "second" if lesson.homes[0] in homes else "other")
        out.setdefault((room, lesson.otype), Counter())[where] += 1
    return out


def evidence_line(pairs: dict[tuple[str, str], Counter]) -> str:
    total = sum(pairs.values(), Counter())
    n = sum(total.values())
    majority = sum(c.most_common(1)[0][0] == "first" for c in pairs.values())
    return (f"picks at the first home {total['first'] / max(1, n):.2f}, the second "
            f"{total['second'] / max(1, n):.2f}, elsewhere {total['other'] / max(1, n):.2f} "
            f"({n} picks); the first home leads in {majority} of {len(pairs)} room/type pairs")


def sighting_counts(host_state: dict) -> Counter:
    """Over the consolidated episodes whose prompts name the goal's objects
    each look showed (experience.trajectory_sightings): how many saw the
    goal's type somewhere, how many of those picked none up, and how many
    picked it up elsewhere than where they first saw it."""
    from crl_jax.envs.alfworld_lessons import (NO_HOME, names_sightings, read_evidence,
                                               read_sightings)
    from crl_jax.training.lesson_demos import prompt_lines

    def head(lesson: str | None) -> str:  # the home, "" for none
        text = (lesson or "").split(" (evidence: ")[0]
        return "" if not text or text.endswith(NO_HOME) else text
    out = Counter()
    for s in _consolidations(host_state):
        goal, traj = prompt_lines(s["prompt"], "goal", "traj")
        if not names_sightings(traj):  # a sighting is named only in such prompts
            continue
        seen, taken = head(read_sightings(goal, traj)), head(read_evidence(goal, traj))
        out["saw"] += bool(seen)
        out["saw, took none"] += bool(seen) and not taken
        out["saw, took elsewhere"] += bool(seen and taken) and seen != taken
    return out


def report_evidence(run_dir: str, host_state: dict) -> dict:
    """Prints ``pick_evidence`` for a run (its households from its
    config.json), overall and per pair; returns the overall counts."""
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json
    from crl_jax.training.tasks import household_split
    split = household_split(load_config_json(RunConfig, os.path.join(run_dir, "config.json")))
    pairs = pick_evidence(host_state, split)
    print("  evidence: " + evidence_line(pairs))
    for (room, otype), c in sorted(pairs.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"    {otype} in ({room[:40]}...): "
              + ", ".join(f"{k} {c[k]}" for k in ("first", "second", "other")))
    seen = sighting_counts(host_state)
    if seen["saw"]:
        print(f"  sightings: {seen['saw']} episodes saw the goal's type; "
              f"{seen['saw, took none']} of them picked none up, "
              f"{seen['saw, took elsewhere']} picked it up elsewhere than where first seen")
    total = sum(pairs.values(), Counter())
    return {**seen, "first": total["first"], "second": total["second"], "other": total["other"],
            "pairs": len(pairs),
            "first_leads": sum(c.most_common(1)[0][0] == "first" for c in pairs.values())}


def wrong_home_examples(host_state: dict, n: int) -> list[str]:
    """Up to ``n`` consolidation samples whose reply names other homes than
    the trajectory shows, as text: goal, trajectory, shown lesson, reply."""
    from crl_jax.training.lesson_demos import prompt_lines
    from experiments.diagnostics.lesson_reading import lesson_shown, verdict
    out = []
    for s in _consolidations(host_state):
        if len(out) >= n:
            break
        if verdict(s["response"], s["prompt"]) == "wrong homes":
            goal, traj = prompt_lines(s["prompt"], "goal", "traj")
            out.append(f"goal: {goal}\ntraj: {traj}\nshows: {lesson_shown(goal, traj)}\n"
                       f"wrote: {s['response']}")
    return out


def spread(items: list, limit: int) -> list:
    """At most ``limit`` of ``items`` (0: all), evenly spaced, first and last kept."""
    if not limit or len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (limit - 1))] for i in range(limit)]


def greedy_shares(run_dir: str, step: int, prompts: list[str] | None = None, limit: int = 0) -> dict:
    """{"warm": shares, "last": shares, "changed": share, "prompts": n} of
    greedy answers to the run's consolidation prompts (checkpoint ``step``),
    or to ``prompts`` (at most ``limit``, spread evenly), by its
    warm-started and by that checkpoint's extractor; "changed": the share
    of prompts the two answer differently."""
    import dataclasses
    import tempfile

    from crl_jax.training.checkpointing import RunCheckpointer
    from crl_jax.training.components import build_run
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json
    from experiments.diagnostics.warm_start_probe import extractor_answers

    cfg = load_config_json(RunConfig, os.path.join(run_dir, "config.json"))
    run = build_run(cfg, tempfile.mkdtemp(prefix="lesson_writes_"))
    try:
        with RunCheckpointer(os.path.join(run_dir, "checkpoints"), async_save=False) as ckpt:
            restored = ckpt.restore(step, targets={"extractor_params": run.extractor.params})
        if prompts is None:
            prompts = [s["prompt"] for s in _consolidations(restored.host_state)]
        prompts = spread(prompts, limit)
        sampling = dataclasses.replace(run.agent.sampling, temperature=0.0)
        warm = extractor_answers(run, sampling)(prompts)
        run.extractor.params = restored.trees["extractor_params"]
        run.agent.sampler.update_params(run.extractor.model)
        last = extractor_answers(run, sampling)(prompts)
        return {"warm": _shares(warm, prompts), "last": _shares(last, prompts),
                "changed": sum(a != b for a, b in zip(warm, last)) / max(1, len(prompts)),
                "prompts": len(prompts)}
    finally:
        run.close()


def main(argv=None) -> int:
    command = tyro.cli(Command, args=sys.argv[1:] if argv is None else argv, description=__doc__)
    from crl_jax.training.checkpointing import RunCheckpointer
    report, shared = {}, None
    if command.prompts_from:
        with RunCheckpointer(os.path.join(command.prompts_from, "checkpoints"),
                             async_save=False) as ckpt:
            shared = [s["prompt"] for s in _consolidations(ckpt.restore().host_state)]
        print(f"greedy answers to the {len(shared)} prompts of {command.prompts_from}")
    for run in command.runs:
        ckpt_dir = os.path.join(run, "checkpoints")
        if not os.path.isdir(ckpt_dir):
            print(f"error: {run} has no checkpoints/", file=sys.stderr)
            return 2
        with RunCheckpointer(ckpt_dir, async_save=False) as ckpt:
            restored = ckpt.restore()
        if "manager" not in restored.host_state:
            print(f"error: {run} has no experience manager (experience.mode=none or oracle)",
                  file=sys.stderr)
            return 2
        report[run] = out = {"step": restored.step, **writes_of(restored.host_state)}
        print(f"{os.path.basename(run.rstrip('/'))} (step {restored.step}): {out['episodes']} "
              f"episodes, {out['writing_replies']} replies wrote: "
              + ", ".join(f"{k} {out[k]:.2f}" for k in VERDICTS))
        for text in wrong_home_examples(restored.host_state, command.examples):
            print(f"  wrong homes:\n    " + text.replace("\n", "\n    "))
        if command.evidence:
            out["evidence"] = report_evidence(run, restored.host_state)
        if command.greedy:
            greedy = greedy_shares(run, restored.step, shared, command.limit)
            report[run]["greedy"] = greedy
            for name in ("warm", "last"):
                print(f"  greedy, {name} extractor: "
                      + ", ".join(f"{k} {greedy[name][k]:.2f}" for k in VERDICTS))
            print(f"  the two answer {greedy['changed']:.2f} of {greedy['prompts']} prompts "
                  f"differently")
        if command.save:
            with open(os.path.join(run, "lesson_writes.json"), "w") as f:
                json.dump(out, f, indent=2)
    if command.json_out:
        with open(command.json_out, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
