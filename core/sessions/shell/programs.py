"""The curated table of programs: what each can bring into a conversation.

The shell decision (this package) trusts a command's output as the person's
own machine only when every program the line runs is in this table (with a
subcommand the table lists, where the program has a list). The table is
built by one question per family — *can what this program prints come from
someone else?* — and says its answer beside each family, because the answer
is what a reviewer has to check when a program is added:

- **Files and text** (`cat`, `grep`, `sed`, `jq`, …): they print what is in
  the person's files. A cloned stranger's repository is a stranger's text
  read this way too; docs/trust-model.md says so and names the
  switches.
- **Compilers, build tools and checkers** (`make`, `cmake`, `ninja`, `gcc`,
  `rustc`, `javac`, `go build`, `mix compile`, `nvcc`, `pdflatex`,
  `bibtex`, `pytest`, `ruff`, …): they print diagnostics about the
  project's own sources, and run the project's own code (a Makefile's
  recipes, a test suite) — which the trust model already reads as the
  person's. A build that downloads (CMake's FetchContent, a Maven plugin)
  prints a log of it, not the fetched text.
- **Debuggers and profilers** (`gdb`, `valgrind`, `perf`, `strace`, …):
  they report on a program the person built; the program they run is
  checked in turn, and a debugger's own shell escape (`gdb -ex 'shell …'`)
  is not trusted.
- **System and package queries** (`nvidia-smi`, `lspci`, `uname`,
  `systemctl status`, `zfs list`, `dpkg -l`, `apt-cache policy`, `pip list`, …): they
  describe this machine from what it already holds. Only the querying
  subcommands are here: `apt update`, `pip install`, `docker pull` fetch.
- **A shell checking syntax only** (`bash -n build.sh`): it reads the
  script and runs none of it (`families.shell`).
- **Programs of the project's own tree** (`./build/bench`,
  `tests/unit_tests`): a relative path with no `..` is a program the
  project holds or built (`names.project_program`); one named like a
  network client (`tools/curl`) is not trusted by its folder.

Not here, and so untrusted: **network clients** (`curl`, `wget`, `gh`,
`ssh`, `scp`, `rsync`, `nc`, …) and **fetching subcommands** (`git
fetch|pull|clone|ls-remote|submodule`, `pip|npm|cargo|go install`, `npm
view`, `apt install|update`, `docker pull|run`, `npx`, `mix deps.get`, …)
— they print a stranger's text by design; **subcommands that send to a
remote** (`git push`, `npm publish`: `SENDING`), whose replies are the
remote's — each one the person may trust by name, as their own remote;
**interpreters given code not on
the line** (a script outside the project, their input; `python -c` and `node
-e` code is read, `scripts.py`); and **every program nobody listed**: a
list of network programs can never be complete, a list of local ones can.
`NETWORK` names the first two families only so that a person is told *why*
(`shell.Verdict`); nothing is decided by it except that a project-tree
program or script named like one is not trusted by its folder, nor is such a
name found on a project folder added to `PATH`.
"""

from __future__ import annotations

#: Reading, listing, searching, comparing and filtering the person's files.
FILES = frozenset(
    {
        "cat", "head", "tail", "wc", "ls", "tree", "file", "stat", "du", "df", "realpath", "readlink",
        "basename", "dirname", "pwd", "nl", "tac", "rev", "od", "xxd", "hexdump", "strings",
        "grep", "egrep", "fgrep", "diff", "cmp", "comm", "colordiff",
        "sort", "uniq", "cut", "tr", "paste", "join", "fold", "fmt", "column", "expand", "unexpand", "jq", "yq",
        "base64", "md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "cksum", "tee", "seq", "yes", "iconv",
        "mkdir", "rmdir", "touch", "cp", "mv", "rm", "ln", "chmod", "chown", "install", "truncate",
        "gzip", "gunzip", "zcat", "bzip2", "xz", "unxz", "unzip", "zstd",
        "less", "more", "locate", "patch", "dos2unix", "unix2dos",
    }
)

#: The shell's own builtins and the state of the session.
SHELL_BUILTINS = frozenset(
    {
        "cd", "pushd", "popd", "dirs", "echo", "printf", "true", "false", ":", "test", "[", "set", "shift",
        "exit", "return", "read", "wait", "sleep", "date", "clear", "break", "continue", "umask", "ulimit",
        "printenv", "type", "which", "whereis", "kill", "jobs", "fg", "bg", "disown", "history",
    }
)

#: Compilers, build systems, typesetters and the project's checkers: they
#: report on the project's own sources and run its own code.
BUILD = frozenset(
    {
        "make", "gmake", "cmake", "ctest", "cpack", "ninja", "meson", "scons", "bazel", "bazelisk", "autoreconf",
        "autoconf", "automake", "libtool", "pkg-config", "ccache",
        "gcc", "g++", "cc", "c++", "clang", "clang++", "clang-tidy", "clang-format", "cpp", "ld", "lld", "ar",
        "as", "nm", "objdump", "objcopy", "readelf", "strip", "ldd", "size", "addr2line", "c++filt",
        "nvcc", "cuobjdump", "nvdisasm", "ptxas",
        "rustc", "rustfmt", "javac", "jar", "javap",
        "gofmt", "swiftc", "tsc", "esbuild", "elixirc", "erlc",
        "pdflatex", "xelatex", "lualatex", "latex", "latexmk", "bibtex", "biber", "makeindex", "dvips",
        "dvipdfm", "dvipdfmx", "chktex", "lacheck",
        "pytest", "py.test", "ruff", "black", "isort", "flake8", "pyflakes", "pylint", "mypy", "pyright",
        "eslint", "prettier", "jest", "vitest", "mocha", "shellcheck", "shfmt", "hadolint", "cppcheck",
    }
)

#: Debuggers and profilers that report on a program (the program they run,
#: where they run one, is checked in turn: `families.py`).
DEBUGGERS = frozenset({"gprof", "callgrind_annotate", "cg_annotate", "ms_print", "addr2line", "heaptrack_print"})

#: Questions about this machine: its hardware, its system and its installed
#: packages, answered from what it already holds.
SYSTEM = frozenset(
    {
        "uname", "hostname", "whoami", "id", "groups", "who", "w", "uptime", "nproc", "lscpu", "lspci", "lsusb",
        "lsblk", "lsb_release", "lshw", "free", "vmstat", "iostat", "mpstat", "top", "ps", "pgrep", "pstree",
        "lsof", "nvidia-smi", "nvtop", "rocm-smi", "sensors", "dmesg", "locale", "getconf", "arch", "env",
        "dpkg-query", "ldconfig", "mount", "findmnt", "ulimit", "tput", "stty", "tty", "journalctl",
        "dpkg-architecture",
        # Stopping the person's own processes: what they print is a count or
        # a process's name, read from this machine.
        "killall", "pkill",
    }
)

#: Programs trusted whatever their arguments (the families above).
PROGRAMS = FILES | SHELL_BUILTINS | BUILD | DEBUGGERS | SYSTEM

#: Programs whose subcommand decides: only these subcommands are local.
SUBCOMMANDS: dict[str, frozenset[str]] = {
    # build, test and check; never install, update, add, fetch, publish
    "cargo": frozenset({"test", "build", "check", "clippy", "fmt", "run", "doc", "bench", "clean", "--version", "version"}),
    "go": frozenset({"test", "build", "vet", "fmt", "version", "env", "list", "doc", "tool"}),
    "npm": frozenset({"test", "t", "ls", "list", "--version", "version"}),
    "yarn": frozenset({"test", "--version"}),
    "pnpm": frozenset({"test", "--version"}),
    "mvn": frozenset({"compile", "test", "package", "verify", "clean", "test-compile", "-v", "--version"}),
    "gradle": frozenset({"build", "test", "check", "assemble", "clean", "compileJava", "--version"}),
    "dotnet": frozenset({"build", "test", "--version", "--info"}),
    "rustup": frozenset({"show", "--version", "which"}),
    "java": frozenset({"-version", "--version"}),
    # system and package queries; never install, update, upgrade, source
    "systemctl": frozenset({"status", "list-units", "list-unit-files", "is-active", "is-enabled", "is-failed", "show", "cat", "list-timers", "list-sockets"}),
    "apt-cache": frozenset({"show", "showpkg", "policy", "search", "depends", "rdepends", "madison", "stats", "pkgnames", "showsrc"}),
    "apt": frozenset({"list", "show", "search", "policy", "depends", "rdepends"}),
    "pip": frozenset({"list", "show", "freeze", "check", "--version", "-V"}),
    "pip3": frozenset({"list", "show", "freeze", "check", "--version", "-V"}),
    "conda": frozenset({"list", "info", "--version"}),
    "brew": frozenset({"list", "--version", "--prefix", "config"}),
    "docker": frozenset({"ps", "images", "version", "info", "inspect"}),
    # storage pools and containers of this machine; never send, receive, pull, shell or login
    "zfs": frozenset({"list", "get", "version"}),
    "zpool": frozenset({"list", "status", "get", "iostat", "version"}),
    "machinectl": frozenset({"list", "list-images", "status", "show", "image-status", "show-image"}),
    "perf": frozenset({"report", "annotate", "list", "script", "diff"}),
}

#: `mix` tasks that fetch packages or install from elsewhere; every other
#: task (`compile`, `test`, `format`, `phx.server`, `ecto.migrate`, a task
#: the project or its dependencies define) runs the project's own code, as a
#: Makefile's recipes do.
MIX_FETCHING = frozenset({"deps.get", "deps.update", "hex.info", "hex.search", "hex.outdated", "hex.audit", "archive.install", "escript.install", "local.hex", "local.rebar", "local.phx", "igniter.install", "phx.new"})
MIX_FETCHING_PREFIXES = ("hex.", "archive.", "local.")

#: `dpkg`'s query options: the only ones read from what is installed.
DPKG_QUERIES = frozenset({"-l", "--list", "-s", "--status", "-L", "--listfiles", "-S", "--search", "-p", "--print-avail", "--print-architecture", "--get-selections", "--version"})

#: `python -m MODULE` for these modules: test runners and checkers.
PYTHON_MODULES = frozenset({"pytest", "unittest", "mypy", "ruff", "black", "isort", "flake8", "pyflakes", "pylint", "py_compile", "compileall", "json.tool", "doctest", "pip"})
#: `python -m pip` is a query only with these subcommands.
PIP_QUERIES = SUBCOMMANDS["pip"]

#: git subcommands that work on the local repository only (`fetch`, `pull`,
#: `push`, `clone`, `ls-remote`, `submodule`, `remote update`, … are not here).
GIT_SUBCOMMANDS = frozenset(
    {
        "status", "diff", "log", "show", "blame", "annotate", "branch", "rev-parse", "rev-list", "ls-files",
        "ls-tree", "cat-file", "grep", "describe", "shortlog", "reflog", "stash", "tag", "add", "commit",
        "restore", "checkout", "switch", "reset", "rm", "mv", "merge", "rebase", "cherry-pick", "revert",
        "init", "config", "worktree", "merge-base", "name-rev", "range-diff", "whatchanged", "show-ref",
        "symbolic-ref", "for-each-ref", "count-objects", "fsck", "gc", "clean", "apply", "format-patch",
        "diff-tree", "diff-files", "diff-index", "check-ignore", "check-attr", "var", "version", "help",
        "remote", "filter-branch", "notes", "bisect", "mailmap", "hash-object", "update-index", "write-tree",
        "read-tree", "commit-tree", "update-ref", "prune", "repack", "verify-commit", "verify-tag",
    }
)

#: Network clients and fetching subcommands, by what a person is told; the
#: decision never consults this (anything unlisted is untrusted anyway).
NETWORK = frozenset(
    {
        "curl", "wget", "gh", "glab", "hub", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp",
        "lynx", "w3m", "links", "http", "https", "xh", "aria2c", "httpie", "socat", "npx", "bunx", "pnpx", "dig",
        "nslookup", "host", "whois", "ping", "traceroute", "mosh", "s3cmd", "aws", "gcloud", "az", "kubectl",
        "git fetch", "git pull", "git clone", "git ls-remote", "git submodule", "git archive",
        "pip install", "pip download", "pip3 install", "pip3 download", "npm install", "npm i", "npm ci", "npm view",
        "npm info", "npm exec", "npm update", "cargo install", "cargo fetch", "cargo update", "cargo add", "go get",
        "go install", "go mod", "apt install", "apt update", "apt upgrade", "apt-get", "yum", "dnf", "pacman",
        "docker pull", "docker run", "docker build", "docker exec", "mix deps.get", "mix deps.update", "mix hex.info",
        "brew install", "brew info", "brew update", "conda install", "uv pip", "uv add", "uvx", "pipx",
    }
)


#: Subcommands that talk to a remote, of programs the table does not know
#: (`bd`) or knows only partly (`git push`): trusting the program
#: (`Bash(bd)`, `Bash(git)`) never trusts them — each is its own entry
#: (`Bash(bd sync)`), and what it printed is a remote's text. The table's
#: own fetching subcommands (`programs.NETWORK`: `git fetch`, `npm
#: install`, …) are added to these.
REMOTE_SUBCOMMANDS = frozenset(
    {
        "git push", "bd sync", "npm publish", "yarn publish", "pnpm publish", "cargo publish", "cargo login", "poetry publish",
        "twine upload", "gem push", "docker push", "docker login", "helm push", "dvc push", "dvc pull", "dvc fetch",
        "hg push", "hg pull", "svn update", "svn checkout", "jj git", "git-lfs fetch", "git-lfs pull", "git-lfs push",
        "mix hex.publish", "dotnet nuget",
    }
)


#: Of those, the subcommands that only send: they hand the person's own
#: work (commits, a package, an image) to a remote the person named, and
#: what they print back is that remote's acknowledgement — `git push`'s
#: `remote:` lines, a registry's "published". That text is the remote's,
#: so it stays untrusted by default and no vouch answers it; but whether
#: the person's own remote is theirs is the person's to say, so each may be
#: offered and trusted as its own entry (`Bash(git push)`), never inside its
#: program's. Anything that also fetches (`bd sync`, which pulls; `git
#: fetch`; `dvc pull`) is not here: what a fetch brings is a stranger's
#: text whoever owns the remote, and is never offered.
SENDING = frozenset(
    {
        "git push", "npm publish", "yarn publish", "pnpm publish", "cargo publish", "poetry publish", "twine upload",
        "gem push", "docker push", "helm push", "dvc push", "hg push", "git-lfs push", "mix hex.publish",
    }
)


def talks_to_remote(program: str, subcommand: str | None) -> bool:
    """Whether `program subcommand` is a network client, a fetching
    subcommand, or a subcommand known to talk to a remote
    (`REMOTE_SUBCOMMANDS`) — whatever program of that name runs."""
    return is_network(program, subcommand) or (subcommand is not None and f"{program} {subcommand}" in REMOTE_SUBCOMMANDS)


def is_network(program: str, subcommand: str | None = None) -> bool:
    """Whether `program` (or `program subcommand`) is a network client or a
    fetching subcommand this table knows by name."""
    return program in NETWORK or (subcommand is not None and f"{program} {subcommand}" in NETWORK)
