"""Running a process with its outgoing connections blocked and recorded, for ``tests/engine/test_offline.py`` and its
dashboard session (``tests/offline_app_session.py``). Three layers, each used where the machine allows it:

1. **No network.** ``unshare -n`` (or ``unshare -rn`` without root) starts the process in a new network namespace
   where only loopback exists (``tests/netguard/lo_up_exec.py`` brings it up): nothing can leave.
2. **A Python guard** (always): ``tests/netguard/sitecustomize.py`` first on ``PYTHONPATH``, so every Python process
   and its Python children record and refuse a connection or name lookup outside loopback.
3. **strace** ``-f -e trace=connect,sendto,sendmsg,sendmmsg`` of the process tree: the attempts made below Python
   (onnxruntime's C++ telemetry, the JVM), refused by layer 1 but still seen here.

The environment given to the process has rageval's opt-outs (:data:`rageval.offline.OPT_OUTS`) removed: this
test process set them when it imported rageval, and a child must get them from rageval, not from its parent.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rageval.offline import OPT_OUTS

REPO = Path(__file__).resolve().parent.parent
GUARD_DIR = Path(__file__).resolve().parent / "netguard"
LO_UP = GUARD_DIR / "lo_up_exec.py"
TRACED_CALLS = "connect,sendto,sendmsg,sendmmsg"
_INET_ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def netns_prefix() -> tuple[str, ...]:
    """The command prefix that runs a command in a new network namespace with loopback up; () where not allowed."""
    if not shutil.which("unshare"):
        return ()
    for flags in ("-n", "-rn"):  # root (or CAP_SYS_ADMIN), else an unprivileged user namespace
        prefix = ("unshare", flags, sys.executable, "-I", str(LO_UP))
        probe = "import socket; socket.socket().bind(('127.0.0.1', 0))"
        if _works([*prefix, sys.executable, "-I", "-c", probe]):
            return prefix
    return ()


@functools.cache
def strace_flags() -> tuple[str, ...]:
    """strace's options (``--seccomp-bpf`` where supported: only the traced calls stop the process); () where
    strace is missing or ptrace is not allowed."""
    if not shutil.which("strace"):
        return ()
    for extra in (("--seccomp-bpf",), ()):
        flags = ("strace", "-f", "-qq", *extra, "-e", f"trace={TRACED_CALLS}")
        if _works([*flags, "-o", os.devnull, "true"]):
            return flags
    return ()


def strace_prefix(out: Path) -> list[str]:
    """``strace ... -o out`` to put before a command, or [] where strace cannot run."""
    flags = strace_flags()
    return [*flags, "-o", str(out)] if flags else []


def layers() -> str:
    """Which layers this machine allows, in words (test output)."""
    return ", ".join(["network namespace" if netns_prefix() else "no network namespace (unshare not allowed)",
                      "Python guard", "strace" if strace_flags() else "no strace (missing or ptrace not allowed)"])


def guarded_env(log: Path, **extra: str) -> dict[str, str]:
    """This environment without rageval's opt-outs, with the guard first on PYTHONPATH, logging to ``log``."""
    env = {name: value for name, value in os.environ.items() if name not in OPT_OUTS}
    env.update(PYTHONPATH=os.pathsep.join([str(GUARD_DIR), str(REPO)]), RAGEVAL_NETGUARD_LOG=str(log),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    return env


def guard_events(log: Path) -> list[dict]:
    """The guard's records (loaded / import / blocked), in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _is_local(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def strace_attempts(path: Path) -> list[str]:
    """The traced calls that addressed a host outside loopback (a DNS query to the resolver included)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if "sa_family=AF_INET" not in line:
            continue  # Unix sockets, netlink
        addresses = [v4 or v6 for v4, v6 in _INET_ADDRESS.findall(line)]
        if any(not _is_local(address) for address in addresses):
            found.append(line)
    return found


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the TCP sockets listening on ``port`` (``/proc/net/tcp`` and ``tcp6``)."""
    found = set()
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, port_hex = fields[1].split(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
            found.add(str(ipaddress.ip_address(raw if width == 16 else raw[:4])))
    return found
