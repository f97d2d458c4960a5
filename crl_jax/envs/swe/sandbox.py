"""Run shell commands confined to one directory.

    box = Sandbox("/tmp/episode")               # writable root of the episode
    res = box.run("python -m unittest", cwd="/tmp/episode/repo")
    res.output, res.exit_code, res.timed_out, res.truncated
    box.enforced   # {"filesystem": True, "network": True, ...} on this kernel

What is enforced, and how (each applied by ``_launcher.py`` in a fresh
process before it execs ``bash -c COMMAND``):

- time limit: the wall clock is watched here; on expiry the whole process
  group is killed. The command runs as pid 1 of its own pid namespace, so
  anything it left behind (even after ``setsid``) dies with it.
- output cap: stdout and stderr share one pipe read incrementally; once more
  than ``max_output_bytes`` arrive the command is killed and the result says
  it was truncated. At most the cap is ever held in memory.
- no network: a new network namespace (only a loopback of its own).
- writes: Landlock allows creating, changing or removing files only beneath
  the root (plus writing to /dev/null); on Landlock ABI >= 6 signals and
  abstract unix sockets cannot leave the sandbox either.
- reads: Landlock allows reading and executing only beneath the root, the
  interpreter's prefixes and the system's programs and libraries
  (``readable_paths``), so neither root-only files (/etc/shadow) nor other
  episodes' or the project's files can be read. Landlock binds uid 0 too.
- capabilities: all dropped (bounding set included) before exec, so a
  command run by root cannot override file permissions, mount or trace.
  It keeps uid 0: an interpreter installed under /root (pyenv) would be out
  of reach of any other uid.
- resource limits: file size, CPU seconds, address space, process count.
  RLIMIT_NPROC does not bind uid 0, so as root the count is capped by a pids
  cgroup made for each command (cgroup v1 or v2, where it is writable).
- environment: only PATH, HOME and TMPDIR (both inside the root), LANG and
  PYTHONDONTWRITEBYTECODE (keeps __pycache__ out of the working copy).

A mechanism the kernel lacks is not silently skipped: ``enforced`` records
False for it, ``warnings`` says why, and a ``warnings.warn`` is issued once.
``require=("filesystem", "network")`` turns a missing mechanism into an error.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
import warnings

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_launcher.py")
MECHANISMS = ("time_limit", "output_cap", "environment", "filesystem", "reads", "network",
              "process_cleanup", "rlimits", "max_processes", "capabilities")
# Read and executed beneath these (besides the root and the interpreter's
# prefixes): system programs and libraries, devices and kernel views, and the
# few files of /etc that programs read (not /etc itself: /etc/shadow).
SYSTEM_READABLE = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/dev", "/proc",
                   "/sys", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
                   "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                   "/etc/localtime", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf",
                   "/etc/gai.conf", "/etc/bash.bashrc", "/etc/inputrc", "/etc/profile",
                   "/etc/ssl", "/etc/mime.types", "/etc/locale.alias", "/etc/os-release")
PIDS_CGROUP_BASES = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup")


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """Per-command limits. ``timeout_s`` is wall-clock; CPU time is capped at
    the same number of seconds (rounded up) as a second line of defence."""

    timeout_s: float = 30.0
    max_output_bytes: int = 1 << 20
    max_file_bytes: int = 256 << 20
    max_memory_bytes: int = 4 << 30
    max_processes: int = 512

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"SandboxLimits.{f.name} must be > 0, got {getattr(self, f.name)!r}")


@dataclasses.dataclass(frozen=True)
class CommandResult:
    output: str            # stdout and stderr interleaved, utf-8 (bad bytes replaced)
    exit_code: int | None  # None when the command was killed (timeout / output cap)
    timed_out: bool
    truncated: bool        # more than max_output_bytes were produced; the command was killed
    output_bytes: int      # bytes read (at most the cap plus one read chunk)


def readable_paths(root: str) -> list[str]:
    """Where a sandboxed command may read: its root, this interpreter's
    prefixes (the venv and the installation it points to) and SYSTEM_READABLE."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    paths = [root, *sorted(prefixes), *SYSTEM_READABLE]
    return [p for p in dict.fromkeys(paths) if os.path.exists(p)]


@functools.lru_cache(maxsize=None)
def pids_cgroup_base() -> str | None:
    """A pids-controller cgroup directory this process may make children in
    (root, cgroup v1 or v2), or None."""
    for base in PIDS_CGROUP_BASES:
        probe = os.path.join(base, f"crl-sandbox-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            if os.path.exists(os.path.join(probe, "pids.max")):
                return base
        finally:
            os.rmdir(probe)
    return None


@functools.lru_cache(maxsize=None)
def probe_mechanisms(probe_root: str = "/") -> dict:
    """What this kernel lets an unprivileged (or root) process enforce; one
    launcher run per process, cached."""
    cfg = {"probe": True, "root": probe_root, "readable": readable_paths(probe_root),
           "rlimits": {"RLIMIT_FSIZE": 1 << 30, "RLIMIT_CORE": 0}}
    try:
        out = subprocess.run([sys.executable, "-I", "-S", LAUNCHER, json.dumps(cfg)],
                             capture_output=True, text=True, timeout=60, check=False)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as err:
        fail = [False, f"launcher probe failed: {err}"]
        return {k: fail for k in ("userns", "netns_pidns", "landlock", "landlock_reads",
                                  "capabilities", "landlock_abi", "rlimits")}


def _plan(probe: dict) -> tuple[dict, dict, str | None, bool]:
    """(enforced, warnings, namespaces mode, landlock) from a probe."""
    # Enforced here, in the parent, whatever the kernel offers.
    enforced = {"time_limit": True, "output_cap": True, "environment": True}
    why = {}
    if probe["userns"][0]:
        ns = "user"
    elif probe["netns_pidns"][0]:
        ns = "root"
    else:
        ns = None
        why["network"] = f"no network namespace: {probe['netns_pidns'][1]}"
        why["process_cleanup"] = ("no pid namespace: only the process group is killed; "
                                  "processes that called setsid may survive")
    enforced["network"] = enforced["process_cleanup"] = ns is not None
    enforced["filesystem"] = bool(probe["landlock"][0])
    if not enforced["filesystem"]:
        why["filesystem"] = f"Landlock unavailable ({probe['landlock'][1]}): writes outside the root are not blocked"
    enforced["reads"] = bool(probe["landlock_reads"][0])
    if not enforced["reads"]:
        why["reads"] = (f"Landlock cannot confine reads ({probe['landlock_reads'][1]}): files "
                        "outside the root are readable as the trainer's user may read them")
    enforced["capabilities"] = bool(probe["capabilities"][0])
    if not enforced["capabilities"]:
        why["capabilities"] = f"could not drop capabilities: {probe['capabilities'][1]}"
    enforced["rlimits"] = bool(probe["rlimits"][0])
    if not enforced["rlimits"]:
        why["rlimits"] = f"setrlimit failed: {probe['rlimits'][1]}"
    # RLIMIT_NPROC never binds uid 0 (of the initial user namespace, which
    # ours maps to itself): as root the count is capped by a pids cgroup.
    if os.geteuid() != 0:
        enforced["max_processes"] = enforced["rlimits"]
    else:
        enforced["max_processes"] = pids_cgroup_base() is not None
        if not enforced["max_processes"]:
            why["max_processes"] = ("running as root, where RLIMIT_NPROC does not apply, and no "
                                    f"writable pids cgroup (tried {PIDS_CGROUP_BASES})")
    return enforced, why, ns, enforced["filesystem"]


_WARNED: set = set()
_CGROUP_IDS = itertools.count()


def _remove_cgroup(path: str | None) -> None:
    """rmdir once its processes are gone (the pid namespace's end kills them)."""
    if path is None:
        return
    for _ in range(200):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY: a process is still exiting
            time.sleep(0.01)
    warnings.warn(f"sandbox: could not remove the cgroup {path}", RuntimeWarning, stacklevel=2)


class Sandbox:
    """Runs commands with the limits above; files may change only under ``root``."""

    def __init__(self, root: str, limits: SandboxLimits = SandboxLimits(),
                 require: tuple[str, ...] = (), shell: str = "/bin/bash"):
        if not os.path.isdir(root):
            raise ValueError(f"sandbox root {root!r} is not a directory")
        unknown = set(require) - set(MECHANISMS)
        if unknown:
            raise ValueError(f"unknown mechanisms {sorted(unknown)}; valid: {MECHANISMS}")
        self.root = os.path.realpath(root)
        self.limits = limits
        self.shell = shell if os.path.exists(shell) else shutil.which("sh") or "/bin/sh"
        self.enforced, self.warnings, self._ns, self._landlock = _plan(probe_mechanisms())
        missing = [m for m in require if not self.enforced[m]]
        if missing:
            raise RuntimeError(f"sandbox mechanisms required but unavailable: "
                               f"{ {m: self.warnings[m] for m in missing} }")
        for mech, msg in self.warnings.items():
            if mech not in _WARNED:
                _WARNED.add(mech)
                warnings.warn(f"sandbox: {mech} not enforced: {msg}", RuntimeWarning, stacklevel=2)
        self.home = os.path.join(self.root, ".home")
        self.tmpdir = os.path.join(self.root, ".tmp")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.tmpdir, exist_ok=True)

    def environment(self) -> dict[str, str]:
        """The scrubbed environment: nothing of the caller's (no proxies, tokens)."""
        python_dir = os.path.dirname(sys.executable)  # `python` is this interpreter
        return {"PATH": f"{python_dir}:/usr/local/bin:/usr/bin:/bin",
                "HOME": self.home, "TMPDIR": self.tmpdir, "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1"}

    def _config(self, command: str, cwd: str, timeout_s: float) -> dict:
        lim = self.limits
        rlimits = {"RLIMIT_FSIZE": lim.max_file_bytes, "RLIMIT_AS": lim.max_memory_bytes,
                   "RLIMIT_CPU": int(timeout_s) + 1, "RLIMIT_CORE": 0}
        if self.enforced["max_processes"] and os.geteuid() != 0:
            rlimits["RLIMIT_NPROC"] = lim.max_processes
        return {"namespaces": self._ns, "landlock": self._landlock, "root": self.root,
                "readable": readable_paths(self.root) if self.enforced["reads"] else None,
                "drop_capabilities": self.enforced["capabilities"],
                "max_processes": lim.max_processes,
                "cwd": cwd, "shell": self.shell, "command": command,
                "env": self.environment(), "rlimits": rlimits if self.enforced["rlimits"] else {}}

    def run(self, command: str, cwd: str | None = None,
            timeout_s: float | None = None) -> CommandResult:
        if not isinstance(command, str):
            raise TypeError(f"command must be a str, got {type(command).__name__}")
        cwd = os.path.realpath(cwd or self.root)
        if os.path.commonpath([cwd, self.root]) != self.root:
            raise ValueError(f"cwd {cwd!r} is outside the sandbox root {self.root!r}")
        timeout_s = float(timeout_s or self.limits.timeout_s)
        cfg = self._config(command, cwd, timeout_s)
        cgroup = self._new_cgroup()
        cfg["pids_cgroup"] = cgroup
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-S", LAUNCHER, json.dumps(cfg)],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    close_fds=True, env={"LANG": "C.UTF-8"})
            try:
                data, total, timed_out, truncated = self._read(proc, timeout_s)
            finally:
                self._kill_group(proc)
                proc.stdout.close()
            code = proc.wait()
        finally:
            _remove_cgroup(cgroup)
        killed = timed_out or truncated
        return CommandResult(output=bytes(data).decode("utf-8", errors="replace"),
                             exit_code=None if killed else code, timed_out=timed_out,
                             truncated=truncated, output_bytes=total)

    def _read(self, proc, timeout_s):
        cap = self.limits.max_output_bytes
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        data, total = bytearray(), 0
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return data, total, True, False
                if not sel.select(min(remaining, 0.25)):
                    # Exited but the pipe is still held open by a leftover
                    # (only possible without a pid namespace): stop waiting.
                    if proc.poll() is not None:
                        return data, total, False, False
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    return data, total, False, False
                total += len(chunk)
                data += chunk[:max(0, cap - len(data))]
                if total > cap:
                    return data, total, False, True

    def _new_cgroup(self) -> str | None:
        """As root: a fresh pids cgroup for one command (the launcher joins it)."""
        base = pids_cgroup_base() if os.geteuid() == 0 and self.enforced["max_processes"] else None
        if base is None:
            return None
        path = os.path.join(base, f"crl-sandbox-{os.getpid()}-{next(_CGROUP_IDS)}")
        os.mkdir(path)
        return path

    @staticmethod
    def _kill_group(proc) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
