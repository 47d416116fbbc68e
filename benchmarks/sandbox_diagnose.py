"""Print what a sandbox is here: the protections the judge reads from /proc, and what the runner sees of a file
shared with it (`Sandbox.share_file`). For machines where a sandboxed candidate cannot start or read its file.

    python benchmarks/sandbox_diagnose.py [--gpu]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    from argus.eval.sandbox import Sandbox, _accessible_to_others

    gpu = "--gpu" in sys.argv
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    print("judge uid", os.getuid(), "umask", oct(os.umask(0o022)))
    print("readable by others:", {p: _accessible_to_others(p) for p in (*paths, os.path.realpath(sys.executable))})
    with Sandbox(gpu=gpu, device="cuda" if gpu else None) as sandbox:
        print("protections", json.dumps(sandbox.protections))
        shared = sandbox.share_file(__file__)
        print(json.dumps(sandbox.call("diagnose", timeout_s=30, path=shared), indent=1))


if __name__ == "__main__":
    main()
