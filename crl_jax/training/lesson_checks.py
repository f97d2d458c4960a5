"""The configuration checks of households' lessons (RunConfig's
__post_init__ calls ``check_lesson_teaching``): the extractor's warm-start
settings that shape lessons, and the trajectories' sightings, need
households and readers of what they ask for."""
from __future__ import annotations


def check_lesson_teaching(cfg) -> None:
    """The extractor's warm-start settings that shape households' lessons
    need households."""
    ws = cfg.warm_start
    if not ws.extractor_writes_room and (
            not cfg.env.households or cfg.experience.bank.lesson_room != "episode"):
        raise ValueError("warm_start.extractor_writes_room=false teaches lessons that name "
                         "no room: it needs env.households > 0 and "
                         "experience.bank.lesson_room=episode, which files them")
    asked = {"extractor_reads_shown": ws.extractor_reads_shown,
             "extractor_wanders": ws.extractor_wanders,
             "extractor_actor_episodes": ws.extractor_actor_episodes,
             "extractor_home_rate": ws.extractor_home_rate != -1.0,
             "extractor_writes_evidence": ws.extractor_writes_evidence,
             "extractor_sightings": ws.extractor_sightings,
             "extractor_other_types": ws.extractor_other_types}
    for key, value in asked.items():
        if value and not cfg.env.households:
            raise ValueError(f"warm_start.{key} shapes households' lessons: it needs "
                             "env.households > 0")
    if cfg.experience.trajectory_sightings and not cfg.env.households:
        raise ValueError("experience.trajectory_sightings names the goal's object type in "
                         "households' trajectories: it needs env.households > 0")
    if cfg.experience.sighting_places and not cfg.experience.trajectory_sightings:
        raise ValueError("experience.sighting_places names where the sightings of "
                         "experience.trajectory_sightings were seen: it needs "
                         "experience.trajectory_sightings=true")
    _check_sightings_of(cfg)
    if ws.extractor_sightings and not (ws.extractor_writes_evidence
                                       and cfg.experience.trajectory_sightings):
        raise ValueError("warm_start.extractor_sightings teaches evidence counted by what each "
                         "look showed, as RL's trajectories name it: it needs "
                         "warm_start.extractor_writes_evidence=true and "
                         "experience.trajectory_sightings=true")
    if ws.extractor_other_types < 0:
        raise ValueError("warm_start.extractor_other_types must be >= 0")
    if ws.extractor_other_types and not ws.extractor_sightings:
        raise ValueError("warm_start.extractor_other_types teaches lessons of the types each "
                         "look showed: it needs warm_start.extractor_sightings=true")
    if ws.extractor_writes_evidence and not ws.extractor_reads_shown:
        raise ValueError("warm_start.extractor_writes_evidence states what the prompt shows: "
                         "it needs warm_start.extractor_reads_shown=true")


def _check_sightings_of(cfg) -> None:
    """Sightings of more types than the goal's need readers of them."""
    x, rule = cfg.experience, cfg.controls.lesson_reader == "rule"
    if x.sightings_of == "every" and not (
            x.trajectory_sightings and rule and not cfg.warm_start.extractor_sightings):
        raise ValueError("experience.sightings_of=every is read by the rule reader alone: it "
                         "needs experience.trajectory_sightings=true, "
                         "controls.lesson_reader=rule and warm_start.extractor_sightings=false")
    if x.sightings_of == "each" and not (
            x.trajectory_sightings and (rule or cfg.warm_start.extractor_sightings)):
        raise ValueError("experience.sightings_of=each asks about one type's sightings a "
                         "call: it needs experience.trajectory_sightings=true and a reader of "
                         "them (warm_start.extractor_sightings=true or "
                         "controls.lesson_reader=rule)")
