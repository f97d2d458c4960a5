"""Tests for crl_jax.config_tools: dotted overrides, JSON round trip, presets."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from typing import Literal, Optional

import pytest

from crl_jax import config_tools as ct


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    lr: float = 1e-6
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = dataclasses.field(
        default="constant", metadata={"choices": ("constant", "cosine")}
    )


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str = "tiny"
    num_layers: int = 2
    hidden_sizes: tuple[int, ...] = (64, 64)
    checkpoint: Optional[str] = None
    optim: OptimConfig = dataclasses.field(default_factory=OptimConfig)


@dataclasses.dataclass(frozen=True)
class RunConfig:
    seed: int = 0
    use_experience: bool = True
    envs: tuple[str, ...] = ("alfworld",)
    advantage: Literal["grpo", "split_grpo"] = "split_grpo"
    eval_every: int | None = 10
    actor: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    extractor: ModelConfig = dataclasses.field(
        default_factory=lambda: ModelConfig(name="ext", num_layers=4)
    )


def test_overrides_parse_each_type_by_annotation():
    cfg = ct.apply_overrides(
        RunConfig(),
        [
            "seed=7",
            "use_experience=no",
            "envs=alfworld,webshop",
            "advantage=grpo",
            "eval_every=none",
            "actor.num_layers=1e1",
            "actor.hidden_sizes=[8, 16, 32]",
            "actor.checkpoint=/ckpt/qwen",
            "actor.optim.lr=3e-4",
            "actor.optim.betas=0.8,0.95",
            "extractor.optim.schedule=cosine",
        ],
    )
    assert cfg.seed == 7
    assert cfg.use_experience is False
    assert cfg.envs == ("alfworld", "webshop")
    assert cfg.advantage == "grpo"
    assert cfg.eval_every is None
    assert cfg.actor.num_layers == 10
    assert cfg.actor.hidden_sizes == (8, 16, 32)
    assert cfg.actor.checkpoint == "/ckpt/qwen"
    assert cfg.actor.optim.lr == pytest.approx(3e-4)
    assert cfg.actor.optim.betas == (0.8, 0.95)
    assert cfg.extractor.optim.schedule == "cosine"
    # Untouched branches keep their values; the input is not mutated.
    assert cfg.extractor.num_layers == 4 and cfg.actor.optim.schedule == "constant"
    assert RunConfig().seed == 0


@pytest.mark.parametrize("text,expected", [
    ("true", True), ("True", True), ("1", True), ("yes", True),
    ("false", False), ("0", False), ("NO", False),
])
def test_bool_words(text, expected):
    assert ct.apply_overrides(RunConfig(), [f"use_experience={text}"]).use_experience is expected


def test_later_override_wins_and_empty_tuple():
    cfg = ct.apply_overrides(RunConfig(), ["seed=1", "seed=2", "envs="])
    assert cfg.seed == 2 and cfg.envs == ()


def test_unknown_key_lists_valid_keys_and_suggests():
    with pytest.raises(ValueError) as info:
        ct.apply_overrides(RunConfig(), ["actor.optim.lrr=0.1"])
    msg = str(info.value)
    assert "'lrr'" in msg and "Did you mean 'lr'" in msg
    for key in ("lr", "betas", "schedule"):
        assert key in msg
    assert "actor.optim" in msg

    with pytest.raises(ValueError, match="Valid keys: seed, use_experience"):
        ct.apply_overrides(RunConfig(), ["nonsense=1"])


@pytest.mark.parametrize("override,field,expected_type", [
    ("seed=abc", "seed", "int"),
    ("seed=1.5", "seed", "int"),
    ("actor.optim.lr=fast", "actor.optim.lr", "float"),
    ("use_experience=maybe", "use_experience", "bool"),
    ("actor.optim.betas=1,2,3", "actor.optim.betas", "tuple"),
    ("actor.hidden_sizes=1,x", "actor.hidden_sizes", "tuple"),
    ("advantage=ppo", "advantage", "Literal"),
])
def test_type_errors_name_field_type_and_text(override, field, expected_type):
    text = override.partition("=")[2]
    with pytest.raises(ValueError) as info:
        ct.apply_overrides(RunConfig(), [override])
    msg = str(info.value)
    assert repr(field) in msg and expected_type in msg and repr(text) in msg


def test_choices_metadata_is_enforced():
    with pytest.raises(ValueError, match=r"one of \('constant', 'cosine'\)"):
        ct.apply_overrides(RunConfig(), ["actor.optim.schedule=linear"])


def test_malformed_and_structural_errors():
    with pytest.raises(ValueError, match="must look like"):
        ct.apply_overrides(RunConfig(), ["seed"])
    with pytest.raises(ValueError, match="nested config"):
        ct.apply_overrides(RunConfig(), ["actor=big"])
    with pytest.raises(ValueError, match="not a nested config"):
        ct.apply_overrides(RunConfig(), ["seed.x=1"])


def test_json_round_trip_is_exact():
    cfg = ct.apply_overrides(RunConfig(), ["eval_every=none", "actor.checkpoint=/x"])
    data = json.loads(json.dumps(ct.config_to_dict(cfg)))
    assert data["actor"]["hidden_sizes"] == [64, 64]
    assert ct.config_from_dict(RunConfig, data) == cfg


def test_from_dict_is_strict():
    data = ct.config_to_dict(RunConfig())
    data["actor"]["optim"]["momentum"] = 0.9
    with pytest.raises(ValueError, match="'momentum'.*actor.optim"):
        ct.config_from_dict(RunConfig, data)

    with pytest.raises(ValueError, match="'seed'.*int.*'3'"):
        ct.config_from_dict(RunConfig, {"seed": "3"})
    with pytest.raises(ValueError, match="seed"):
        ct.config_from_dict(RunConfig, {"seed": True})
    with pytest.raises(ValueError, match="one of"):
        ct.config_from_dict(RunConfig, {"actor": {"optim": {"schedule": "linear"}}})
    # Missing keys take defaults; ints are accepted for float fields.
    cfg = ct.config_from_dict(RunConfig, {"actor": {"optim": {"lr": 1}}})
    assert cfg.actor.optim.lr == 1.0 and isinstance(cfg.actor.optim.lr, float)
    assert cfg.extractor == RunConfig().extractor


def test_json_file_helpers(tmp_path):
    cfg = ct.apply_overrides(RunConfig(), ["seed=5"])
    ct.save_config_json(cfg, str(tmp_path / "c.json"))
    assert ct.load_config_json(RunConfig, str(tmp_path / "c.json")) == cfg


def test_format_config_lists_every_leaf():
    text = ct.format_config(RunConfig())
    lines = text.splitlines()
    keys = [line.split("=")[0].strip() for line in lines]
    assert keys[:5] == ["seed", "use_experience", "envs", "advantage", "eval_every"]
    assert "actor.optim.lr" in keys and "extractor.optim.schedule" in keys
    assert len(keys) == 5 + 2 * (4 + 3)
    assert "extractor.num_layers" in text and text.count(" = ") == len(lines)
    assert dict(zip(keys, (l.split(" = ", 1)[1] for l in lines)))["extractor.name"] == "'ext'"


@pytest.fixture()
def presets_package(tmp_path, monkeypatch):
    pkg = tmp_path / "fake_presets_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha_cpu.py").write_text(textwrap.dedent("""
        from tests.test_config_tools import RunConfig
        def get_config():
            return RunConfig(seed=11)
    """))
    (pkg / "beta.py").write_text("def get_config():\n    return 'beta'\n")
    (pkg / "_shared.py").write_text("X = 1\n")
    (pkg / "broken.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "fake_presets_pkg"


def test_load_preset(presets_package):
    assert ct.list_presets(presets_package) == ["alpha_cpu", "beta", "broken"]
    assert ct.load_preset("alpha_cpu", presets_package) == RunConfig(seed=11)
    assert ct.load_preset("beta", presets_package) == "beta"
    with pytest.raises(ValueError) as info:
        ct.load_preset("alpha", presets_package)
    assert "Did you mean 'alpha_cpu'" in str(info.value)
    assert "alpha_cpu, beta, broken" in str(info.value)
    with pytest.raises(ValueError, match="no get_config"):
        ct.load_preset("broken", presets_package)
    with pytest.raises(ValueError, match="Unknown preset '_shared'"):
        ct.load_preset("_shared", presets_package)
