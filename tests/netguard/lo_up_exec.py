"""``python -I lo_up_exec.py COMMAND...``: bring the loopback interface up, then become COMMAND.

Run as the first process of a new, empty network namespace (``unshare -n``), where ``lo`` starts down: afterwards
127.0.0.1 works and nothing else is reachable. Uses the SIOCSIFFLAGS ioctl, so it needs no ``ip`` command.
"""

import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    request = struct.pack("16sH14x", b"lo", 0)
    flags = struct.unpack("16sH14x", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
    fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
os.execvp(sys.argv[1], sys.argv[1:])
