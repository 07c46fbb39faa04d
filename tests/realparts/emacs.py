"""A real Emacs with the two LSP clients its users reach for: Debian's
`emacs-nox` (28.2), `elpa-eglot` (eglot 1.9) and `elpa-lsp-mode` (8.0).

They come from apt, not from an Emacs package archive: the tests drive
`emacs --batch`, which loads Debian's site-lisp (where the elpa-* packages
put their files) and nothing from the person's own init, so what is tested
is exactly what `apt-get install` gives a person. `apt-get update` runs only
when a package is missing; a rerun on the same machine installs nothing.

The manifest names the `emacs` binary and the version each package reports,
so a failing test says which Emacs and which client it ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

APT_PACKAGES = ("emacs-nox", "elpa-eglot", "elpa-lsp-mode")


def _say(msg: str) -> None:
    print(f"realparts: emacs: {msg}", flush=True)


def _run(cmd: list[str], **kw: Any) -> None:
    _say("$ " + " ".join(cmd))
    started = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    _say(f"  done in {time.monotonic() - started:.0f} s")


def _version(package: str) -> str | None:
    """The installed version of a Debian package, or `None`."""
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\t${Version}", package], capture_output=True, text=True, check=False
    )
    status, _, version = done.stdout.partition("\t")
    return version if done.returncode == 0 and "install ok installed" in status else None


def install() -> dict[str, Any]:
    missing = [p for p in APT_PACKAGES if _version(p) is None]
    if missing:
        if shutil.which("apt-get") is None:
            raise SystemExit(f"realparts: emacs: need {', '.join(missing)} but there is no apt-get; install them")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        _run(["apt-get", "update", "-q"], env=env)
        _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], env=env)
    else:
        _say(f"apt packages present ({', '.join(APT_PACKAGES)})")
    emacs = shutil.which("emacs")
    if emacs is None:
        raise SystemExit("realparts: emacs: apt installed emacs-nox but there is no `emacs` on PATH")
    probe = subprocess.run(
        [emacs, "--batch", "--eval", "(progn (require 'eglot) (require 'lsp-mode) (princ emacs-version))"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    if probe.returncode != 0:
        raise SystemExit(f"realparts: emacs: eglot or lsp-mode does not load: {probe.stderr.strip()[-500:]}")
    versions = {p: _version(p) for p in APT_PACKAGES}
    _say(f"emacs {probe.stdout.strip()}; " + ", ".join(f"{p} {v}" for p, v in versions.items()))
    return {"emacs": emacs, "emacs_version": probe.stdout.strip(), "packages": versions}
