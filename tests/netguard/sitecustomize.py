"""The network guard of ``tests/engine/test_offline.py``, loaded first by every Python process started with this
folder at the head of ``PYTHONPATH`` (children inherit it: job workers, the indexer's parent, the Streamlit server).

It records to ``$RAGEVAL_NETGUARD_LOG`` (JSON lines, appended by every process) and refuses:

- any ``connect`` / ``connect_ex`` / ``sendto`` of a socket, ``socket.create_connection``, and any name lookup
  (``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``) whose host is not loopback (``localhost``,
  127.0.0.0/8, ``::1``; the unspecified address and Unix sockets are local too): ``{"event": "blocked", ...}``
  with the call, host, port and the Python stack that asked;
- nothing else: ``{"event": "loaded", ...}`` once per process (so a test knows the guard ran where it looked), and
  ``{"event": "import", "module": ..., "env": ...}`` when ``onnxruntime`` or ``huggingface_hub`` is first imported,
  with the opt-out variables as they were at that moment (onnxruntime reads ``ORT_DISABLE_TELEMETRY`` when it
  loads: set later, it is too late).

Connections made below Python (onnxruntime's C++ telemetry, the JVM) never pass through here: the test traces
those with strace where it can.
"""

from __future__ import annotations

import errno
import importlib.abc
import ipaddress
import json
import os
import socket
import sys
import traceback

LOG = os.environ.get("RAGEVAL_NETGUARD_LOG")
WATCHED_IMPORTS = {"onnxruntime": ("ORT_DISABLE_TELEMETRY",),
                   "huggingface_hub": ("HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")}
_LOCAL_NAMES = {"", "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def _record(event: str, **fields) -> None:
    if not LOG:
        return
    line = json.dumps({"event": event, "pid": os.getpid(), "argv": sys.orig_argv[:6], **fields}, default=str) + "\n"
    handle = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(handle, line.encode("utf-8"))
    finally:
        os.close(handle)


def is_local(host) -> bool:
    """Whether connecting to / looking up ``host`` stays on this machine."""
    if host is None:
        return True  # getaddrinfo(None, port): the local (passive) address
    if isinstance(host, bytes):
        host = host.decode("utf-8", errors="replace")
    host = str(host).strip().strip("[]").lower().rstrip(".")
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # any other name: a lookup that may leave the machine
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _blocked(call: str, host, port) -> OSError:
    _record("blocked", call=call, host=host, port=port, stack=traceback.format_stack(limit=12)[:-2])
    return OSError(errno.ENETUNREACH, f"network guard: {call} to {host}:{port} refused (not loopback)")


def _split(address):
    if isinstance(address, tuple) and len(address) >= 2:
        return address[0], address[1]
    return None, None  # a Unix socket path, or a bytes address


_connect, _connect_ex, _sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto
_getaddrinfo, _create_connection = socket.getaddrinfo, socket.create_connection
_gethostbyname, _gethostbyname_ex = socket.gethostbyname, socket.gethostbyname_ex


def _is_inet(sock) -> bool:
    return sock.family in (socket.AF_INET, socket.AF_INET6)


def connect(self, address):
    host, port = _split(address)
    if _is_inet(self) and not is_local(host):
        raise _blocked("connect", host, port)
    return _connect(self, address)


def connect_ex(self, address):
    host, port = _split(address)
    if _is_inet(self) and not is_local(host):
        return _blocked("connect_ex", host, port).errno
    return _connect_ex(self, address)


def sendto(self, data, *args):
    host, port = _split(args[-1]) if args else (None, None)
    if _is_inet(self) and not is_local(host):
        raise _blocked("sendto", host, port)
    return _sendto(self, data, *args)


def getaddrinfo(host, port, *args, **kwargs):
    if not is_local(host):
        raise socket.gaierror(socket.EAI_NONAME, str(_blocked("getaddrinfo", host, port)))
    return _getaddrinfo(host, port, *args, **kwargs)


def create_connection(address, *args, **kwargs):
    host, port = _split(address)
    if not is_local(host):
        raise _blocked("create_connection", host, port)
    return _create_connection(address, *args, **kwargs)


def gethostbyname(host):
    if not is_local(host):
        raise socket.gaierror(socket.EAI_NONAME, str(_blocked("gethostbyname", host, None)))
    return _gethostbyname(host)


def gethostbyname_ex(host):
    if not is_local(host):
        raise socket.gaierror(socket.EAI_NONAME, str(_blocked("gethostbyname_ex", host, None)))
    return _gethostbyname_ex(host)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Records the opt-out variables at the first import of a watched package; finds nothing itself."""

    def __init__(self):
        self.seen: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname in WATCHED_IMPORTS and fullname not in self.seen:
            self.seen.add(fullname)
            _record("import", module=fullname, env={name: os.environ.get(name) for name in WATCHED_IMPORTS[fullname]})
        return None


if LOG:
    socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto = connect, connect_ex, sendto
    socket.getaddrinfo, socket.create_connection = getaddrinfo, create_connection
    socket.gethostbyname, socket.gethostbyname_ex = gethostbyname, gethostbyname_ex
    sys.meta_path.insert(0, _ImportWatcher())
    _record("loaded", executable=sys.executable)
