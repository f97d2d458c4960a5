"""Sandbox launcher: confine this process, then exec the command.

Run as a script by crl_jax.envs.swe.sandbox (``python -I -S _launcher.py
CONFIG_JSON``), never imported: confinement is applied in a fresh process,
because doing it in a ``preexec_fn`` of a multi-threaded trainer can
deadlock. Standard library only.

Order matters: the user/net/pid namespaces first (the uid map and bringing
up loopback need capabilities that exist only before Landlock and exec),
then resource limits and the pids cgroup, then dropping capabilities, then
Landlock (which needs no_new_privs), then fork:
with a new pid namespace the child is its pid 1, so when it exits the kernel
kills every process it left behind (including ones that called setsid).

Modes: ``{"probe": true}`` tries every mechanism in a throw-away child and
prints one JSON line {mechanism: [ok, detail]}; otherwise the config names
the mechanisms to apply and any failure exits 125 with a message.
"""
import ctypes
import fcntl
import json
import os
import resource
import signal
import socket
import struct
import sys

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# Filesystem rights (linux/landlock.h). Every right that creates, changes or
# removes something is handled, and granted only beneath the writable roots;
# with a list of readable paths, reading and executing are handled too and
# granted only beneath those (Landlock binds root as well).
FS_EXECUTE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 2, 1 << 3
FS_WRITE_FILE, FS_REMOVE_DIR, FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG, PR_CAPBSET_DROP = 38, 1, 24
CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x10000000, 0x40000000, 0x20000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _fail(what):
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


def landlock_abi():
    abi = _libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None,
                        ctypes.c_long(0), ctypes.c_long(LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 0:
        _fail("landlock_create_ruleset(version)")
    return int(abi)


def apply_landlock(writable_dirs, writable_files, readable=None):
    """Allow writes only beneath ``writable_dirs`` (and to the listed files);
    with ``readable``, reads and execution only beneath those paths (files
    or directories) and the writable ones; on ABI >= 6 also stop signals and
    abstract unix sockets leaving the sandbox."""
    abi = landlock_abi()
    handled = FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE
    file_rights = FS_WRITE_FILE
    reads = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    if readable is not None:
        handled |= reads
        file_rights |= FS_READ_FILE
    if abi >= 2:
        handled |= FS_REFER
    if abi >= 3:
        handled |= FS_TRUNCATE
        file_rights |= FS_TRUNCATE
    if abi >= 6:
        attr = struct.pack("QQQ", handled, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    elif abi >= 4:
        attr = struct.pack("QQ", handled, 0)
    else:
        attr = struct.pack("Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), buf,
                            ctypes.c_long(len(attr)), ctypes.c_long(0))
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    rules = [(d, handled) for d in writable_dirs] + [(f, file_rights) for f in writable_files]
    for path in readable or ():  # a file takes only the file rights
        rules.append((path, reads if os.path.isdir(path) else FS_EXECUTE | FS_READ_FILE))
    for path, rights in rules:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        if _libc.syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_long(ruleset),
                         ctypes.c_long(LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_long(0)) < 0:
            _fail(f"landlock_add_rule({path})")
        os.close(fd)
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(NO_NEW_PRIVS)")
    if _libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset),
                     ctypes.c_long(0)) < 0:
        _fail("landlock_restrict_self")
    os.close(ruleset)
    return abi


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def enter_namespaces(user, net, pid):
    """unshare the requested namespaces; with a user namespace, map our own
    uid/gid to themselves (allowed without privileges)."""
    uid, gid = os.geteuid(), os.getegid()
    flags = (CLONE_NEWUSER if user else 0) | (CLONE_NEWNET if net else 0) | (CLONE_NEWPID if pid else 0)
    if flags and _libc.unshare(flags) != 0:
        _fail(f"unshare(user={user}, net={net}, pid={pid})")
    if user:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    if net:  # loopback starts down in a new network namespace; tests may need it
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            ifr = struct.pack("16sH14s", b"lo", 0, b"")
            flags_now = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, ifr)[:18])[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags_now | IFF_UP, b""))


def drop_capabilities():
    """Empty the bounding set and the effective, permitted and inheritable
    sets: uid 0 keeps owning root's files (Landlock keeps it from them) but
    can no longer override permissions, mount, trace or change ids."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and cap < 32:
            _fail(f"prctl(PR_CAPBSET_DROP, {cap})")
    header = ctypes.create_string_buffer(struct.pack("Ii", CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)  # two (effective, permitted, inheritable)
    if _libc.capset(header, data) != 0:
        _fail("capset")


def join_pids_cgroup(path, max_pids):
    """Put this process (and so everything it starts) in the pids cgroup the
    sandbox made for the command, capped at ``max_pids``: binds uid 0 too."""
    _write(os.path.join(path, "pids.max"), str(max_pids))
    _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))


def set_limits(limits):
    for name, value in limits.items():
        res = getattr(resource, name)
        hard = value + 1 if name == "RLIMIT_CPU" else value  # SIGXCPU first, then SIGKILL
        resource.setrlimit(res, (value, hard))


def _try_in_child(fn):
    """Run fn in a forked child; (ok, detail)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            detail = fn()
            os.write(w, json.dumps([True, detail]).encode())
        except BaseException as err:  # noqa: BLE001  (report any failure)
            os.write(w, json.dumps([False, f"{type(err).__name__}: {err}"]).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else [False, "probe child died"]


def probe(cfg):
    def userns():
        enter_namespaces(True, True, True)
        return "user+net+pid namespaces"

    def rootns():
        enter_namespaces(False, True, True)
        return "net+pid namespaces (no user namespace)"

    def landlock():
        return apply_landlock([cfg["root"]], [os.devnull])

    def landlock_reads():
        apply_landlock([cfg["root"]], [os.devnull], cfg.get("readable", []))
        return "reads confined"

    def no_caps():
        drop_capabilities()
        return "capabilities dropped"

    out = {"userns": _try_in_child(userns), "netns_pidns": _try_in_child(rootns),
           "landlock": _try_in_child(landlock)}
    out["landlock_reads"] = _try_in_child(landlock_reads)
    out["capabilities"] = _try_in_child(no_caps)
    out["landlock_abi"] = _try_in_child(landlock_abi)
    out["rlimits"] = _try_in_child(lambda: set_limits(cfg.get("rlimits", {})) or "ok")
    print(json.dumps(out), flush=True)


def run(cfg):
    try:
        if cfg["namespaces"]:
            enter_namespaces(cfg["namespaces"] == "user", True, True)
        set_limits(cfg["rlimits"])
        if cfg.get("pids_cgroup"):
            join_pids_cgroup(cfg["pids_cgroup"], cfg["max_processes"])
        if cfg.get("drop_capabilities"):
            drop_capabilities()
        if cfg["landlock"]:
            apply_landlock([cfg["root"]], [os.devnull], cfg.get("readable"))
    except OSError as err:
        sys.stderr.write(f"crl-sandbox: could not confine the command: {err}\n")
        sys.stderr.flush()
        os._exit(125)
    pid = os.fork()
    if pid == 0:
        try:
            _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.chdir(cfg["cwd"])
            os.execve(cfg["shell"], [cfg["shell"], "-c", cfg["command"]], cfg["env"])
        except BaseException as err:  # noqa: BLE001
            sys.stderr.write(f"crl-sandbox: exec failed: {err}\n")
            sys.stderr.flush()
        os._exit(126)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    config = json.loads(sys.argv[1])
    probe(config) if config.get("probe") else run(config)
