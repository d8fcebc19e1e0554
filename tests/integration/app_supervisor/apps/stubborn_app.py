"""Throwaway stdio app for the supervisor tests: ignores SIGTERM and the end of stdin, and
starts a child process (announced as `{"child": pid}` on stdout) that ignores SIGTERM too.
Only SIGKILL of the whole process group ends both. The line `exit` makes it exit with code 5,
leaving its child behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    sys.stdout.write(json.dumps({"child": child.pid}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if line.strip() == "exit":
            sys.exit(5)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
