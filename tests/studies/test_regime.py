"""The regime figure: its preset arms are the ladder's committed records (the
same run names), and each other regime's arms differ from them only by that
regime's overrides."""
from experiments.studies import oracle_ladder, regime
from experiments.figures.ablation import variant_arms


def test_the_preset_arms_are_the_ladder_records_and_each_regime_adds_only_its_overrides():
    ladder = {a.run_name for a in oracle_ladder.arms("full")}
    preset = variant_arms(regime.PRESET, "full", regime.PRESET_ARMS)
    assert {a.run_name for a in preset} <= ladder and len(preset) == 6
    assert [v.mode for v in regime.PRESET_ARMS] == ["oracle", "none"]
    cap = {f"rollout.max_turns={regime.LOOSE_CAP}"}
    pool = {f"train.task_pool={regime.LARGE_POOL}", f"env.num_generated={1000 + regime.LARGE_POOL}"}
    with_comp = variant_arms(regime.PRESET, "full", (oracle_ladder.VARIANTS[0],
                                                      oracle_ladder.VARIANTS[4],
                                                      oracle_ladder.VARIANTS[-1]))
    for group, extra, bases in ((regime.LOOSE_ARMS, cap, preset),
                                (regime.POOL_ARMS, pool, with_comp)):
        arms = variant_arms(regime.PRESET, "full", group)
        assert len(arms) == len(bases) and not {a.run_name for a in arms} & ladder
        for arm, base in zip(arms, bases):
            assert set(arm.overrides) - set(base.overrides) == extra
    assert [v.mode for v in regime.POOL_ARMS] == ["oracle", "comp_rl", "none"]
    assert len(regime.arms("full")) == 21
    assert regime.arms("quick") == [] and regime.make("", "quick", "") == []
