"""The warm-start cache's key: every input that shapes a warm start is in
its hash, and settings added since the key scheme stay out of it at their
neutral values, so earlier entries and records stay current."""
import dataclasses
import hashlib
import json

from crl_jax.training.warm_cache import (KEY_SCHEME, WarmStartInputs, inputs_key,
                                         warm_start_inputs, warm_start_key)
from tests.training.test_warm_cache import _cfg


def test_every_input_of_the_warm_start_is_in_its_key(tmp_path):
    """Each field of WarmStartInputs, changed alone, changes the key."""
    cfg = _cfg(tmp_path, "warm_start.extractor_missteps=0")  # every later setting neutral
    inputs = warm_start_inputs(cfg)
    base = warm_start_key(cfg)

    def key_of(changed):
        return inputs_key(changed, KEY_SCHEME)

    assert key_of(inputs) == base
    # A setting added since the scheme stays out of the hash at its neutral
    # value (the key of the inputs without it), and is in it otherwise.
    fields = dataclasses.asdict(inputs)
    assert fields["warm_start"].pop("judge_fraction") == 0.0
    assert fields["warm_start"].pop("extractor_missteps") == 0.0
    assert fields["actor"].pop("attention_chunk") == fields["extractor"].pop("attention_chunk") == 0
    assert fields["warm_start"].pop("guided_contrast") is False
    assert fields["warm_start"].pop("extractor_room_jitter") == 0.0
    assert fields["warm_start"].pop("extractor_writes_room") is True
    assert fields["warm_start"].pop("extractor_wrong_picks") == 0.0
    assert fields["warm_start"].pop("extractor_reads_shown") is False
    assert fields["warm_start"].pop("extractor_wanders") == 0.0
    assert fields["warm_start"].pop("extractor_actor_episodes") == 0.0
    assert fields["warm_start"].pop("extractor_home_rate") == -1.0
    assert fields["warm_start"].pop("extractor_writes_evidence") is False
    assert fields["warm_start"].pop("extractor_sightings") is False
    assert fields["warm_start"].pop("extractor_other_types") == 0
    assert fields["warm_start"].pop("line_repeat") == 1
    assert fields["warm_start"].pop("actor_lr_end") == 1.0
    assert fields["demo_pool_excluded"] == 4  # these tests' pool, not the preset's 16: hashed
    assert fields.pop("households") == ()  # no households: not hashed
    assert fields.pop("sighting_places") is False  # unset: not hashed
    blob = json.dumps(fields, sort_keys=True).encode()
    assert base == f"{inputs.name}-{KEY_SCHEME}-{hashlib.sha256(blob).hexdigest()[:16]}"
    judging = dataclasses.replace(inputs, warm_start=dataclasses.replace(inputs.warm_start,
                                                                         judge_fraction=0.25))
    assert key_of(judging) != base
    missteps = dataclasses.replace(inputs, warm_start=dataclasses.replace(inputs.warm_start,
                                                                          extractor_missteps=0.5))
    assert key_of(missteps) not in (base, key_of(judging))
    chunked = dataclasses.replace(inputs, actor=dataclasses.replace(inputs.actor,
                                                                    attention_chunk=512))
    assert key_of(chunked) != base
    contrast = dataclasses.replace(inputs, warm_start=dataclasses.replace(inputs.warm_start,
                                                                          guided_contrast=True))
    assert key_of(contrast) not in (base, key_of(chunked))
    jitter = dataclasses.replace(inputs, warm_start=dataclasses.replace(inputs.warm_start,
                                                                        extractor_room_jitter=0.5))
    assert key_of(jitter) not in (base, key_of(contrast))
    for change in (dict(extractor_writes_room=False), dict(extractor_wrong_picks=0.25),
                   dict(extractor_reads_shown=True), dict(extractor_wanders=0.3),
                   dict(line_repeat=4), dict(actor_lr_end=0.1),
                   dict(extractor_actor_episodes=1.0), dict(extractor_home_rate=0.0),
                   dict(extractor_writes_evidence=True), dict(extractor_sightings=True),
                   dict(extractor_other_types=2)):
        changed = dataclasses.replace(inputs, warm_start=dataclasses.replace(inputs.warm_start,
                                                                             **change))
        assert key_of(changed) not in (base, key_of(jitter))
    # another RL pool leaves other games to demonstrate: another warm start
    pools = {warm_start_key(_cfg(tmp_path, "warm_start.extractor_missteps=0", *o)) for o in
             ((), ("train.task_pool=16",), ("train.task_pool=32",), ("train.pool_disjoint=false",))}
    assert len(pools) == 4 and base in pools
    # the preset's own pool (16 games) stays out of the hash, as before the field
    preset_pool = warm_start_inputs(_cfg(tmp_path, "warm_start.extractor_missteps=0",
                                         "train.task_pool=16"))
    fields = dataclasses.asdict(preset_pool)
    assert fields.pop("demo_pool_excluded") == 16
    fields.pop("households")
    fields.pop("sighting_places")
    for section, name in (("warm_start", "judge_fraction"), ("warm_start", "extractor_missteps"),
                          ("actor", "attention_chunk"), ("extractor", "attention_chunk"),
                          ("warm_start", "guided_contrast"),
                          ("warm_start", "extractor_room_jitter"),
                          ("warm_start", "extractor_writes_room"),
                          ("warm_start", "extractor_wrong_picks"),
                          ("warm_start", "extractor_reads_shown"),
                          ("warm_start", "extractor_wanders"), ("warm_start", "line_repeat"),
                          ("warm_start", "actor_lr_end"),
                          ("warm_start", "extractor_actor_episodes"),
                          ("warm_start", "extractor_home_rate"),
                          ("warm_start", "extractor_writes_evidence"),
                          ("warm_start", "extractor_sightings"),
                          ("warm_start", "extractor_other_types")):
        fields[section].pop(name)
    blob = json.dumps(fields, sort_keys=True).encode()
    assert key_of(preset_pool) == f"alfworld_cpu-{KEY_SCHEME}-{hashlib.sha256(blob).hexdigest()[:16]}"
    # households shape the demonstrated games: each of their settings is in the key
    # tags that name their place shape the extractor's prompts: in the key when set
    assert key_of(dataclasses.replace(inputs, sighting_places=True)) != base
    homes = {key_of(dataclasses.replace(inputs, households=h))
             for h in ((40, 8, 0.65), (40, 8, 0.0), (40, 4, 0.65), (48, 8, 0.65))}
    assert len(homes) == 4 and base not in homes
    for field in dataclasses.fields(WarmStartInputs):
        value = getattr(inputs, field.name)
        if dataclasses.is_dataclass(value):
            first = dataclasses.fields(value)[0]
            old = getattr(value, first.name)
            new = dataclasses.replace(value, **{first.name: old + 1 if isinstance(old, int)
                                                else f"{old}x"})
        elif isinstance(value, bool):
            new = not value
        elif isinstance(value, (int, str)):
            new = value + 1 if isinstance(value, int) else f"{value}x"
        else:
            new = tuple(value) + ("x",)
        assert key_of(dataclasses.replace(inputs, **{field.name: new})) != base, field.name
