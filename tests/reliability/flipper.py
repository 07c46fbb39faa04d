"""A process that flips one directory between writable and read-only, as
fast as the kernel lets it, until it is told to stop (SIGTERM), and leaves
it writable.

As root, whom permission bits do not stop, the directory is bind-mounted
over itself and remounted read-only and back (`mount(2)` through ctypes: a
`mount` command per flip would be a hundred times slower and miss the
windows a race lives in). As anyone else, its write permission is taken
away and given back (`chmod`). Run: `python -m tests.reliability.flipper DIR`;
it prints `ready` once the first flip is possible (a file of its own:
run by path, it needs nothing of the project).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import signal
import sys
import time

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096

#: The pause after each flip, in seconds: short against a write (which
#: takes a few hundred microseconds), long enough to leave the writer a core.
PAUSE_S = 0.0003


def main(target: str) -> int:
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    if os.geteuid() == 0:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        path = target.encode()

        def mount(flags: int) -> None:
            while libc.mount(path, path, None, flags, None) != 0:
                err = ctypes.get_errno()
                # A file open for writing on the mount holds it writable
                # (EBUSY): the flip waits for the writer to close it.
                if err != errno.EBUSY:
                    raise OSError(err, os.strerror(err), target)
                time.sleep(PAUSE_S / 10)

        mount(MS_BIND)
        try:
            print("ready", flush=True)
            while not stop:
                mount(MS_REMOUNT | MS_BIND | MS_RDONLY)
                time.sleep(PAUSE_S)
                mount(MS_REMOUNT | MS_BIND)
                time.sleep(PAUSE_S)
        finally:
            mount(MS_REMOUNT | MS_BIND)
            while libc.umount2(path, 0) != 0:
                err = ctypes.get_errno()
                if err != errno.EBUSY:
                    raise OSError(err, os.strerror(err), target)
                time.sleep(PAUSE_S)
        return 0
    mode = os.stat(target).st_mode & 0o777
    try:
        print("ready", flush=True)
        while not stop:
            os.chmod(target, mode & ~0o222)
            time.sleep(PAUSE_S)
            os.chmod(target, mode)
            time.sleep(PAUSE_S)
    finally:
        os.chmod(target, mode)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
