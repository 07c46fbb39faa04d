"""The Rust toolchain and the crates the harness-side client builds with.

crates.io is not reachable where the tests run, so the client's
dependencies (serde, serde_derive, serde_json) come from Debian's packaged
crates, which `apt-get` installs under `/usr/share/cargo/registry` and the
crate's `.cargo/config.toml` points cargo at. `cargo` itself is whatever is
on the machine (rustup's `~/.cargo/bin` is looked in too). The build goes to
a target folder in the cache, outside the checkout, and is built once here
so the test that runs `cargo test` finds it warm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import cache_dir

PACKAGES = ("librust-serde-dev", "librust-serde-derive-dev", "librust-serde-json-dev")
REGISTRY = Path("/usr/share/cargo/registry")
CRATE = Path(__file__).resolve().parents[2] / "protocol" / "rust"


def target_dir() -> Path:
    """The build folder, one per checkout: two checkouts building into one
    folder would overwrite each other's binaries, which cargo names by crate
    alone."""
    import hashlib

    return cache_dir() / "rust-target" / hashlib.blake2b(str(CRATE).encode(), digest_size=6).hexdigest()


def find_cargo() -> str | None:
    found = shutil.which("cargo")
    if found:
        return found
    rustup = Path.home() / ".cargo" / "bin" / "cargo"
    return str(rustup) if rustup.is_file() else None


def _have_crates() -> bool:
    return all(any(REGISTRY.glob(f"{name}-1.*")) for name in ("serde", "serde_derive", "serde_json"))


def install() -> dict[str, Any]:
    cargo = find_cargo()
    if cargo is None:
        raise RuntimeError("no cargo on this machine: install Rust (rustup, or apt-get install cargo)")
    if not _have_crates():
        print(f"realparts: rust: $ apt-get install -y {' '.join(PACKAGES)}", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, env=env)
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir())}
    subprocess.run([cargo, "build", "--release", "--all-targets", "--offline"], cwd=CRATE, check=True, env=env)
    version = subprocess.run([cargo, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return {"cargo": cargo, "cargo_version": version, "target_dir": str(target_dir()), "registry": str(REGISTRY)}
