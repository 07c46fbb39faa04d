"""`python -m tests.realparts [PART ...]`: install the real parts the tests
run against (all of them by default), each at most once per machine."""

from __future__ import annotations

import argparse
import importlib
import sys
import time

#: Part name → module (in this package) with `install() -> dict`.
PARTS = {
    "llama": "tests.realparts.llama",
    "vscode": "tests.realparts.vscode",
    "emacs": "tests.realparts.emacs",
    "agents": "tests.realparts.agents",
    "rust": "tests.realparts.rust",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.realparts", description=__doc__)
    p.add_argument("parts", nargs="*", metavar="PART", help=f"parts to install: {', '.join(PARTS)} (default: all)")
    args = p.parse_args(argv)
    unknown = [x for x in args.parts if x not in PARTS]
    if unknown:
        p.error(f"unknown part(s) {', '.join(unknown)}; expected {', '.join(PARTS)}")
    from . import write_manifest

    for part in args.parts or list(PARTS):
        start = time.monotonic()
        print(f"realparts: {part}: installing (cached after the first time)", flush=True)
        module = importlib.import_module(PARTS[part])
        data = module.install()
        path = write_manifest(part, data)
        print(f"realparts: {part}: ready in {time.monotonic() - start:.0f} s ({path})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
