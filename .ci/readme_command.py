"""Print one of the README's two commands for a fresh machine, exactly as the README prints it: `main` (set up and
run the main job) or `tests` (set up and run the test suite). They are the ``sh`` blocks marked
``<!-- ci: main -->`` and ``<!-- ci: tests -->``; `.ci/run` runs both, so the README cannot drift from CI."""

import re
import sys
from pathlib import Path


def readme_commands(readme: Path) -> dict[str, str]:
    text = readme.read_text()
    found = {}
    for m in re.finditer(r"<!--\s*ci:\s*(\w+)\s*-->\s*\n```sh\n(.*?)\n```", text, re.S):
        lines = [ln for ln in m.group(2).splitlines() if ln.strip() and not ln.strip().startswith("#")]
        if len(lines) != 1:
            raise SystemExit(f"README: the ci block {m.group(1)!r} must be one command line, found {len(lines)}")
        found[m.group(1)] = lines[0].strip()
    return found


if __name__ == "__main__":
    commands = readme_commands(Path(__file__).resolve().parents[1] / "README.md")
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        raise SystemExit(f"usage: readme_command.py {{{'|'.join(commands) or 'main|tests'}}}")
    print(commands[sys.argv[1]])
