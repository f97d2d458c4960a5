"""Train Complementary RL.

    python experiments/run.py --config=alfworld_cpu [--train.steps=3 --experience.mode=none ...]

``--config`` names a preset (experiments/configs/<name>.py); every key of its
configuration can be changed with ``--section.key=value``; ``--help`` lists
the presets and every key with its description.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Annotated


def _dry_run_devices(argv: list[str]) -> None:
    """--dry_run lays the models out on --devices fake CPU devices. XLA reads
    the device count when jax is first imported, so it is set here, first."""
    if "--dry_run" not in argv:
        return
    n = "16"
    for i, arg in enumerate(argv):
        if arg.startswith("--devices="):
            n = arg.split("=", 1)[1]
        elif arg == "--devices" and i + 1 < len(argv):
            n = argv[i + 1]
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


if __name__ == "__main__":
    _dry_run_devices(sys.argv[1:])

import tyro  # noqa: E402

from crl_jax.training import config_io  # noqa: E402
from crl_jax.training.config import RunConfig  # noqa: E402
from crl_jax.training import run_dir  # noqa: E402
from crl_jax.training.run_dir import CONFIG_FILENAME, RunDirError, prepare_run_dir  # noqa: E402
from experiments.configs import PRESETS  # noqa: E402

DEFAULT_PRESET = "alfworld_cpu"


@dataclasses.dataclass(frozen=True)
class Command:
    """How to run (the options above) and what to run (the preset's
    configuration, every key of which can be changed below)."""

    cfg: Annotated[RunConfig, tyro.conf.arg(name=""), tyro.conf.FlagConversionOff]
    config: str = DEFAULT_PRESET
    """The preset: a module of experiments/configs/ (listed above)."""
    out_dir: str | None = None
    """The run directory (default: the preset's train.out_dir, runs/<preset>). It
    is recorded in config.json as train.out_dir."""
    resume: bool = False
    """Continue the run in the run directory from its latest checkpoint, with
    the configuration it started with (keys given now are changes to it)."""
    accept_changed_config: bool = False
    """With --resume: continue even though the configuration differs from the
    saved one (the differing keys are printed)."""
    start_fresh: bool = False
    """With --resume of a run that saved no checkpoint yet: train it again from
    step 0, continuing any warm-start progress it saved (without this flag
    that is an error: nothing would be resumed)."""
    preflight: bool = False
    """Check the configuration against this machine and exit: the checkpoints,
    the environments' data and each role's devices (crl_jax/training/preflight.py);
    status 0 when ready, else 2 with every problem. Every run does it first."""
    print_config: bool = False
    """Print the resolved configuration, one key a line, and exit."""
    dry_run: bool = False
    """Check that the preset fits its devices, without a checkpoint or a GPU:
    both models as shapes on --devices fake CPU devices, their training
    programs compiled at the preset's sizes, memory per device printed
    against --device (crl_jax/training/dry_run.py). Give each role its devices
    with --actor.devices=first:N --extractor.devices=last:N."""
    devices: int = 16
    """--dry_run: how many devices to lay the models out on."""
    device: str = "h100"
    """--dry_run: the device whose memory the verdict is against (h100, h200, v5p, a100)."""
    distributed: bool = False
    """Join a multi-process JAX job: start this same command once per host
    (SLURM, a TPU pod slice, or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES
    and JAX_PROCESS_ID set by hand). Set by itself when those variables are
    set. BUILD.md "Multi-host (GPU clusters, TPU pods) and several processes"."""
    cpu_processes: int = 0
    """Run as this many local CPU processes of one JAX job (gloo collectives),
    each process one CPU device: multi-host behaviour on one machine."""


def _description() -> str:
    def profiles(name: str) -> str:
        names = PRESETS.profiles(name)
        return f" Profiles: {', '.join(names)} (--config={name}:{names[-1]})." if names else ""
    presets = "\n".join(f"  {name:<18} {PRESETS.summary(name)}{profiles(name)}"
                        for name in PRESETS.names())
    return (f"{__doc__.strip()}\n\nPresets (--config=NAME, default {DEFAULT_PRESET}):\n{presets}\n\n"
            "A run writes config.json, metrics.jsonl, TensorBoard events, log.txt and "
            "checkpoints/ to its run directory.")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _saved_config(preset: RunConfig, argv: list[str]) -> RunConfig:
    """With --resume, the configuration the run in the run directory started
    with: the keys on the command line are then changes to it."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--out_dir", default=None)
    pre.add_argument("--resume", action="store_true")
    known = pre.parse_known_args(argv)[0]
    saved = os.path.join(known.out_dir or preset.train.out_dir, CONFIG_FILENAME)
    if not (known.resume and os.path.exists(saved)):
        return preset
    try:
        return config_io.load_config_json(RunConfig, saved)
    except ValueError as err:
        sys.exit(_fail(f"{saved} does not load as a configuration of this version ({err})"))


def parse_command(argv: list[str]) -> Command:
    return config_io.parse_preset_command(Command, argv, DEFAULT_PRESET, _description(),
                                          presets=PRESETS, base=_saved_config)


def _without_flag(argv: list[str], flag: str) -> list[str]:
    """``argv`` without ``--flag=V`` / ``--flag V``."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(flag + "="):
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = parse_command(argv)
    if command.cpu_processes:
        from crl_jax.training import processes

        if processes.ENV_NUM_PROCESSES in os.environ:
            return _fail("--cpu_processes starts the job's processes itself; it cannot run "
                         "inside a multi-process job")
        # the command line that started this process (python run.py / python -m ...)
        head = [sys.executable] + sys.orig_argv[1:len(sys.orig_argv) - len(sys.argv) + 1]
        return processes.launch_local(head + _without_flag(argv, "--cpu_processes"),
                                      command.cpu_processes)
    out_dir = command.out_dir or command.cfg.train.out_dir
    cfg = dataclasses.replace(command.cfg, train=dataclasses.replace(command.cfg.train,
                                                                      out_dir=out_dir))
    if command.print_config:
        from crl_jax.training.config_notes import profile_keys, unused_keys
        print(config_io.format_config(cfg, {**profile_keys(PRESETS, command.config, cfg),
                                            **unused_keys(cfg)}))
        return 0
    if command.dry_run:
        return _dry_run(cfg, command.devices, command.device)
    distributed = command.distributed or "JAX_NUM_PROCESSES" in os.environ
    # Before the run directory and the models: devices only once a job has
    # joined (JAX must not start before jax.distributed.initialize).
    status = _preflight(cfg, with_devices=not distributed, alone=command.preflight)
    if status is not None:
        return status
    share = None
    if distributed:
        from crl_jax.training import processes

        try:
            share = processes.initialize_from_environment()
        except processes.NoClusterError as err:
            return _fail(str(err))
        problem = processes.unsupported(cfg) if share.count > 1 else None
        if problem:
            return _fail(f"with {share.count} processes: {problem}")
        status = _preflight(cfg, with_devices=True, alone=command.preflight, only_devices=True)
        if status is not None:
            return status
    error, before = None, None
    if share is None or share.is_main:  # process 0 makes the run directory, the others wait
        before = None if command.resume else run_dir.entries(out_dir)
        try:
            prepare_run_dir(cfg, out_dir, resume=command.resume,
                            accept_changed_config=command.accept_changed_config,
                            start_fresh=command.start_fresh)
        except RunDirError as err:
            error = str(err)
    if share is not None:
        error = share.gather(error)[0]
    if error:
        return _fail(error)
    from crl_jax.training.logs import setup_logging
    from crl_jax.training.loop import run_training

    setup_logging(out_dir)
    try:
        history = run_training(cfg, out_dir, resume=command.resume)
    except BaseException:
        if (share is None or share.is_main) and not command.resume \
                and run_dir.discard_untrained(out_dir, before):
            print(f"the run stopped before it trained anything: {out_dir} is as it was, so the "
                  "same command can run again", file=sys.stderr)
        raise
    if share is not None and not share.is_main:
        return 0
    from crl_jax.training.metrics import METRICS_FILENAME, read_metrics
    from crl_jax.training.run_summary import format_summary

    # the run's whole record (a resumed run's history starts at the resume)
    print(format_summary(read_metrics(os.path.join(out_dir, METRICS_FILENAME))))
    final = history[-1] if history else {}
    summary = {k: v for k, v in final.items() if k.startswith(("eval", "train/success"))}
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def _preflight(cfg: RunConfig, with_devices: bool, alone: bool,
               only_devices: bool = False) -> int | None:
    """The preflight's exit status: 2 with its problems, 0 when --preflight
    ran it alone and found none, None to go on."""
    from crl_jax.training import preflight

    count = None
    if with_devices:
        import jax
        count = jax.device_count()
    found = (preflight.device_problems(cfg, count) if only_devices
             else preflight.problems(cfg, count))
    if found:
        print(preflight.report(found), file=sys.stderr)
        if any(".checkpoint=" in line or "embedder=" in line for line in found):
            from experiments.configs._common import CHECKPOINTS
            print(f"(the paper presets read checkpoints under $CRL_CHECKPOINTS, now {CHECKPOINTS})",
                  file=sys.stderr)
        return 2
    if alone and with_devices:
        print(f"preflight: {cfg.name} is ready to run here ({count} device"
              f"{'s' if count != 1 else ''})")
        return 0
    return None


def _dry_run(cfg: RunConfig, devices: int, device: str) -> int:
    import jax

    from crl_jax.training import dry_run

    if device not in dry_run.DEVICE_GB:
        return _fail(f"--device={device!r}; valid: {', '.join(dry_run.DEVICE_GB)}")
    if len(jax.devices()) != devices:
        return _fail(f"--dry_run needs {devices} devices and this process has "
                     f"{len(jax.devices())} (run it as a command: it sets XLA_FLAGS itself)")
    print(f"dry run of {cfg.name!r} on {devices} fake devices (no checkpoint read); "
          "compiling the training programs of each model...", flush=True)
    try:
        roles = dry_run.estimate(cfg)
    except ValueError as err:
        return _fail(str(err))
    table, fits = dry_run.report(roles, device)
    print(table)
    print(f"verdict: {'fits' if fits else 'does NOT fit'} on {devices} x {device} "
          f"({dry_run.DEVICE_GB[device]} GB each); XLA CPU compiler's estimate, see "
          "crl_jax/training/dry_run.py")
    from crl_jax.training.cost_model import device_hours
    hours = device_hours(cfg, device)
    parts = f"actor {hours['actor']:,.0f}" + (f", extractor {hours['extractor']:,.0f}"
                                               if hours["extractor"] else "")
    print(f"cost: about {hours['total']:,.0f} {device}-hours for the whole run ({parts}): an "
          "estimate at the sequence budget and a roofline, not a measurement "
          "(crl_jax/training/cost_model.py)")
    return 0 if fits else 1


if __name__ == "__main__":
    sys.exit(main())
