"""The distribution's version, read by the build (`pyproject.toml` names this
attribute) and by the server's `initialize` reply, which must not pay for
`importlib.metadata` on the harness's cold path; and the identity of the
code (`code_identity`), which keys what the block cache keeps: the full
server writes the cache, the first stage reads it, and both import this."""

import os

import mecha.core
import mecha.protocol
import mecha.sidecar

__version__ = "0.1.0"


def code_identity() -> list[object]:
    """The identity of the code that renders every answer the cache keeps:
    the version, and name, inode, size and mtime of each module of the three
    packages. An upgrade, a reinstall or an edited checkout all change it,
    so no answer rendered by other code is ever served."""
    out: list[object] = [__version__]
    files: list[list[object]] = []
    for package in (mecha.core, mecha.protocol, mecha.sidecar):
        for folder in package.__path__:
            _module_files(package.__name__, folder, "", files)
    files.sort()
    out.extend(files)
    return out


def _module_files(package: str, folder: str, prefix: str, out: list[list[object]]) -> None:
    """Every `.py` file under `folder`, its subpackages' included (the store,
    the passes, … render answers too), as `[package, relative name, inode,
    size, mtime]`."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".py"):
                st = entry.stat()
                out.append([package, prefix + entry.name, st.st_ino, st.st_size, st.st_mtime_ns])
            elif entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__" and not entry.name.startswith("."):
                _module_files(package, entry.path, prefix + entry.name + "/", out)
