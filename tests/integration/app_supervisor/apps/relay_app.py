"""Throwaway stdio app for the supervisor tests: echoes every stdin line back on stdout, bytes
unchanged. A line that is a JSON object with one of these keys does something else instead:
`{"big": n}` prints a line of n bytes; `{"stderr": text}` writes text to stderr;
`{"env": [names]}` prints `{"env": {name: value or null}}`; `{"exit": code}` exits."""

from __future__ import annotations

import json
import os
import sys


def handle(line: bytes) -> None:
    out = sys.stdout.buffer
    try:
        command = json.loads(line)
    except ValueError:
        command = None
    if isinstance(command, dict) and len(command) == 1:
        if "big" in command:
            out.write(b'"' + b"x" * (int(command["big"]) - 2) + b'"\n')
        elif "stderr" in command:
            sys.stderr.write(str(command["stderr"]) + "\n")
            sys.stderr.flush()
            return
        elif "env" in command:
            values = {name: os.environ.get(name) for name in command["env"]}
            out.write(json.dumps({"env": values, "cwd": os.getcwd()}).encode() + b"\n")
        elif "exit" in command:
            sys.exit(int(command["exit"]))
        else:
            out.write(line)
    else:
        out.write(line)
    out.flush()


def main() -> None:
    for line in sys.stdin.buffer:
        handle(line)


if __name__ == "__main__":
    main()
