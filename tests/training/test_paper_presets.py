"""Paper-scale presets on tiny random checkpoints in the Hugging Face layout."""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from crl_jax.training.config_io import apply_overrides
from kernels.policy_losses import PolicyLossConfig

from experiments.configs import load_preset
from crl_jax.training.metrics import read_metrics
from crl_jax.training.components import build_run
from crl_jax.training.loop import run_training
from models.checkpoint import save_checkpoint
from models.config import DecoderConfig
from models.decoder import init_decoder
from models.tokenizer import load_tokenizer
from models.tokenizer_training import train_lossless_tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = ["You are in the middle of a room. Looking quickly around you, you see a cabinet 1.",
        "Your task is to: put a mug in cabinet. <think>go</think><action>go to cabinet 1</action>",
        '[{"op": "add", "entry": {"title": "mug", "content": "look in cabinets"}}]'] * 20


# The folders BUILD.md's step 2 names (the alfworld preset's checkpoints).
FOLDERS = {"actor": "Qwen2.5-7B-Instruct", "extractor": "Qwen3-4B-Thinking-2507",
           "embedder": "Qwen3-Embedding-0.6B"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Tiny random checkpoints in the Hugging Face layout, each in the folder
    a paper preset reads under $CRL_CHECKPOINTS (the fixture's root)."""
    root = tmp_path_factory.mktemp("ckpt")
    tok_dir = str(root / "tok")
    train_lossless_tokenizer(TEXT, 400, tok_dir, kind="bpe")
    tok = load_tokenizer(tok_dir)
    paths = {"root": str(root)}
    for name, family in (("actor", "qwen2"), ("extractor", "qwen3"), ("embedder", "qwen3")):
        cfg = DecoderConfig(family=family, vocab_size=tok.vocab_size, hidden_size=32,
                            intermediate_size=64, num_layers=2, num_heads=4, num_kv_heads=2,
                            head_dim=8, tie_embeddings=True, qkv_bias=family == "qwen2",
                            qk_norm=family == "qwen3", eos_token_id=tok.eos_id,
                            pad_token_id=tok.pad_id, param_dtype="bfloat16", dtype="bfloat16")
        path = str(root / FOLDERS[name])
        save_checkpoint(init_decoder(cfg, seed=len(paths) - 1), path)
        for f in os.listdir(tok_dir):
            shutil.copy(os.path.join(tok_dir, f), path)
        paths[name] = path
    return paths


# The generated games: CI has no ALFWorld data.
GENERATED = ["env.train_split=generated", "env.eval_split=generated_eval", "env.num_generated=4"]


def small_run(preset: str) -> list[str]:
    """A paper preset cut to one short step on tiny checkpoints."""
    return ([] if preset == "swe" else GENERATED) + [
        "env.num_eval_tasks=1",
        # evaluation once (its own sampler shapes compile: seconds a preset)
        "train.steps=1", "train.tasks_per_step=1", "train.group_size=2",
        f"train.eval_every={int(preset == 'alfworld')}",
        "train.checkpoint_every=1", "rollout.max_turns=2", "rollout.max_new_tokens=16",
        "rollout.judge_max_new_tokens=16", "rollout.max_prompt_tokens=4096",
        "experience.extractor_max_new_tokens=16", "experience.extractor_max_prompt_tokens=1024",
        "train.actor_train_after=0"]


# multitask6 is multitask3's mix with three more environments, each run here
# alone: with the slow tests (the default suite's time budget).
@pytest.mark.parametrize("preset", [
    "alfworld", "alfworld:paper", "minihack_room", "webshop", "multitask3",
    pytest.param("multitask6", marks=pytest.mark.slow), "swe"])
def test_paper_preset_runs_a_step_on_tiny_checkpoints(preset, checkpoints, tmp_path):
    cfg = apply_overrides(load_preset(preset), small_run(preset) + [
        f"actor.checkpoint={checkpoints['actor']}", f"extractor.checkpoint={checkpoints['extractor']}",
        f"experience.embedder={checkpoints['embedder']}", f"train.out_dir={tmp_path}"])
    assert cfg.rollout.format == "chat" and cfg.actor.dtype == "bfloat16"
    assert cfg.rollout.conversation and cfg.train.sample_unit == "episode"
    run_training(cfg, str(tmp_path))
    last = read_metrics(str(tmp_path / "metrics.jsonl"))[-1]
    assert last["step"] == 1 and last["train/episodes"] == 2 * len(cfg.env.names)
    assert last["actor/updates"] >= 1 and last["actor/num_tokens"] > 0
    assert os.path.isdir(tmp_path / "checkpoints" / "1")


def five_steps() -> dict[str, list[str]]:
    """BUILD.md's "Paper scale in five steps": the command lines of the code
    block after each ``<!-- five-steps: NAME -->`` marker."""
    text = open(os.path.join(ROOT, "BUILD.md")).read()
    section = text.split("## Paper scale in five steps", 1)[1].split("\n## ", 1)[0]
    steps, name = {}, None
    for line in section.splitlines():
        marker = re.match(r"\s*<!-- five-steps: ([a-z-]+) -->", line)
        if marker:
            name = marker.group(1)
            steps[name] = []
        elif name and line.startswith(" " * 7) and line.strip():
            steps[name].append(line.strip())
        elif name and line.strip() and steps[name]:
            name = None  # the text after the block
    return steps


def test_the_five_steps_of_build_md_run_on_tiny_checkpoints(checkpoints, tmp_path):
    """Step 2's folders are the preset's; step 4's preflight passes on them;
    step 5's one-host command runs a step (cut short, on generated games)."""
    steps = five_steps()
    folders = [re.search(r"--local-dir \$CRL_CHECKPOINTS/(\S+)", c).group(1)
               for c in steps["checkpoints"] if c.startswith("huggingface-cli download")]
    preset = load_preset("alfworld")
    assert folders == [os.path.basename(p) for p in (
        preset.actor.checkpoint, preset.extractor.checkpoint, preset.experience.embedder)]
    assert folders == list(FOLDERS.values())
    env = {**os.environ, "CRL_CHECKPOINTS": checkpoints["root"], "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}  # one host, 8 devices

    def run(command: str, *extra: str) -> subprocess.CompletedProcess:
        words = shlex.split(command)
        assert words[:2] == ["python", "experiments/run.py"], command
        return subprocess.run([sys.executable, *words[1:], *extra], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=900)

    preflight = steps["preflight"][0]
    assert preflight.endswith(" --preflight")
    done = run(preflight, *(f"--{o}" for o in GENERATED))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "alfworld is ready to run here (8 devices)" in done.stdout
    one_host = steps["one-host"][0]
    assert "--config=alfworld " in one_host + " "
    out = tmp_path / "run"
    done = run(one_host, *(f"--{o}" for o in small_run("alfworld")), f"--out_dir={out}")
    assert done.returncode == 0, done.stderr[-3000:]
    last = read_metrics(str(out / "metrics.jsonl"))[-1]
    assert last["step"] == 1 and last["actor/updates"] >= 1


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    cfg = apply_overrides(load_preset("alfworld"), [
        f"actor.checkpoint={tmp_path}/nowhere", "env.train_split=generated",
        "env.eval_split=generated_eval", f"train.out_dir={tmp_path}"])
    with pytest.raises(FileNotFoundError, match="nowhere.*BUILD.md"):
        build_run(cfg, str(tmp_path))


PAPER_PRESETS = ("alfworld", "minihack_room", "webshop", "multitask3", "multitask6", "swe")


def _rows(cfg):
    """The settings of BUILD.md's side-by-side table that issue 55 settled."""
    bank = cfg.experience.bank
    return {
        "extractor loss aggregation": cfg.extractor_loss.aggregation,
        "extractor CISPO clip": (cfg.extractor_loss.loss_type, cfg.extractor_loss.eps_low,
                                 cfg.extractor_loss.eps_high),
        "Eq. 6 s_rank": bank.diversity_score,
        "Eq. 6 lambda, N, K": (bank.diversity_lambda, bank.oversample_n, bank.top_k),
        "Eq. 6 top-1 dropout": (bank.released_top1_shuffle, bank.released_shuffle_prob),
        "training temperature (actor, extractor)": (cfg.actor_optim.temperature,
                                                    cfg.extractor_optim.temperature),
        "sampling temperature (actor, extractor)": (cfg.rollout.temperature,
                                                    cfg.experience.extractor_temperature),
        "advantage std": cfg.advantages.normalize_std,
    }


# The authors' settings (pUmpKin-Co/ComplementaryRL ab2574f):
RELEASED = {
    # roll/pipeline/agentic/multi_agentic_config.py memory_loss_agg_mode default
    # (single_task_complementaryrl.yaml leaves its override commented out)
    "extractor loss aggregation": "seq-mean-token-mean",
    # yaml memory_pg_variant: cispo; memory_model_worker.py L434-435: epsilons 0.1 / 0.1
    "extractor CISPO clip": ("cispo", 0.1, 0.1),
    # async_memory_manager.py _diversify_uids_by_usage: score = -rank - penalties
    "Eq. 6 s_rank": "rank",
    # yaml searcher: diversity_lambda 0.4, diversity_candidate_multiplier 16, memory_fetch_num 1
    "Eq. 6 lambda, N, K": (0.4, 16, 1),
    "Eq. 6 top-1 dropout": (True, 0.5),  # yaml searcher: diversity_dropout_p 0.5
    # megatron_strategy.py op_compute_log_probs reads raw logits; vLLM samples at 0.99
    "training temperature (actor, extractor)": (1.0, 1.0),
    "sampling temperature (actor, extractor)": (0.99, 1.0),
    "advantage std": False,  # yaml reward_normalization method: mean
}
# The paper's text: Eq. 3 over all tokens, Eq. 6 with the similarity, Eq. 5 with std.
PAPER = {**RELEASED, "extractor loss aggregation": "token-mean", "Eq. 6 s_rank": "similarity",
         "Eq. 6 top-1 dropout": (False, 0.5),
         "training temperature (actor, extractor)": (0.99, 1.0), "advantage std": True}


@pytest.mark.parametrize("preset", PAPER_PRESETS)
@pytest.mark.parametrize("profile, want", [("released", RELEASED), ("paper", PAPER)])
def test_profiles_follow_their_source_row_by_row(preset, profile, want):
    assert _rows(load_preset(f"{preset}:{profile}")) == want


def test_released_cispo_differs_from_the_paper_only_in_aggregation():
    assert PolicyLossConfig.cispo_released() == PolicyLossConfig.cispo_paper(
        aggregation="seq-mean-token-mean")
