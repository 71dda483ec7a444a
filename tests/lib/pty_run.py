#!/usr/bin/env python3
"""pty_run.py - run a command with its stderr on a pseudo-terminal, as a
person at a terminal would see it; for tests/client/client_progress.sh.

    pty_run.py OUT ERR -- CMD [ARGS...]

stdout goes to the file OUT, stderr to a new pty whose every byte is
copied to the file ERR (carriage returns and escapes kept). Exits with the
command's exit status (or 124 after 300 s). Standard library only (pty, os).
"""
import os
import pty
import select
import subprocess
import sys
import time


def main():
    out, err, sep, *cmd = sys.argv[1:]
    if sep != '--' or not cmd:
        sys.exit('usage: pty_run.py OUT ERR -- CMD [ARGS...]')
    master, slave = pty.openpty()
    with open(out, 'wb') as o, open(err, 'wb') as e:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=o, stderr=slave)
        os.close(slave)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the last writer closed the pty
                    break
                if not data:
                    break
                e.write(data)
            elif p.poll() is not None:
                break
        else:
            p.kill()
            p.wait()
            sys.exit(124)
    sys.exit(p.wait())


if __name__ == '__main__':
    main()
