"""The turn-cap figure: its 10-turn arms are the ladder's committed records
(the same run names), and its looser-cap arms differ from them only by the
cap."""
from experiments.figures import oracle_ladder, turn_cap
from experiments.figures.ablation import variant_arms


def test_the_preset_arms_are_the_ladder_records_and_the_loose_arms_only_change_the_cap():
    ladder = {a.run_name for a in oracle_ladder.arms("full")}
    preset = variant_arms(turn_cap.PRESET, "full", turn_cap.PRESET_ARMS)
    assert {a.run_name for a in preset} <= ladder and len(preset) == 6
    assert [v.mode for v in turn_cap.PRESET_ARMS] == ["oracle", "none"]
    loose = [a for a in turn_cap.arms("full") if a.run_name not in ladder]
    assert len(loose) == 6
    for arm, base in zip(loose, preset):
        assert f"rollout.max_turns={turn_cap.LOOSE_CAP}" in arm.overrides
        assert set(arm.overrides) - set(base.overrides) == {f"rollout.max_turns={turn_cap.LOOSE_CAP}"}
    assert turn_cap.arms("quick") == [] and turn_cap.make("", "quick", "") == []
