"""Code on the line that a text tool runs: a sed script, an awk program.

sed and awk are the person's text tools, and their scripts are on the line
for the reader to see; but sed's `e` command (and `s///e`) runs a shell
command, `w`/`r` read and write files the line does not name, and awk's
`system`, `getline` and pipes run programs. A script is local only when it
is made of the commands known to do none of that.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# sed: a script made only of addresses and the commands that print, delete,
# substitute, transliterate or add text (no `e`, `w`, `r`, `W`, `R`, `F`,
# and no `s///e` or `s///w`).
_SED_ADDR = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/I?)"
_SED_DELIMITED = r"(?P<{0}>[^\\\n\w\s;{{}}])(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})"
_SED_STEP = re.compile(
    r"\s*(?:[;\n}]"
    rf"|(?:{_SED_ADDR}(?:\s*,\s*(?:{_SED_ADDR}|[+~]\d+))?)?\s*!?\s*"
    r"(?:\{"
    r"|(?:[pPdDqQ=nNgGhHxlz](?:[ \t]*\d+)?"
    rf"|s{_SED_DELIMITED.format('s')}[gpiImM0-9]*"
    rf"|y{_SED_DELIMITED.format('y')}"
    r"|[aic]\\?[^\n]*)(?=\s*(?:[;\n}]|$))))",
)


def sed_script_ok(script: str) -> bool:
    """Whether a sed script is made only of the commands that print, delete,
    substitute, transliterate or add text."""
    pos = 0
    while script[pos:].strip():
        match = _SED_STEP.match(script, pos)
        if match is None or match.end() == pos:
            return False
        pos = match.end()
    return True


#: awk programs that can run a command, read one's output or open a socket.
_AWK_RUNS = re.compile(r"system|getline|\||/inet|@|ENVIRON\s*\[")


def awk_program_ok(program: str) -> bool:
    """Whether an awk program runs nothing and reads nothing but its input."""
    return _AWK_RUNS.search(program) is None


# ─── python -c and node -e: code judged by what it imports ──────────────────


class CodeDoubt(NamedTuple):
    """Why code on the line is untrusted, in the words a person is shown,
    and whether that is because it reaches the network (`network`): what
    such code prints is a stranger's text, which no vouch can make the
    person's; any other doubt (a module that runs programs, code that does
    not parse) is the reader's, which the person may answer."""

    why: str
    network: bool = False


#: Python modules that reach the network, or download what they load: the
#: standard library's and the common third-party ones. A module not here is
#: the machine's own code (installed, or the project's), as a program the
#: table lists is.
PYTHON_NETWORK = frozenset(
    {
        "socket", "ssl", "http", "urllib", "urllib2", "urllib3", "httplib", "httplib2", "ftplib", "smtplib", "poplib",
        "imaplib", "nntplib", "telnetlib", "xmlrpc", "xmlrpclib", "socketserver", "asyncore", "asynchat", "wsgiref",
        "webbrowser", "antigravity", "requests", "httpx", "aiohttp", "websocket", "websockets", "grpc", "paramiko",
        "fabric", "boto", "boto3", "botocore", "pycurl", "treq", "twisted", "tornado", "mechanize", "selenium",
        "playwright", "scrapy", "huggingface_hub", "datasets", "openai", "anthropic", "pip", "ensurepip", "dns",
        "ldap", "pymongo", "redis", "psycopg2", "pymysql", "smbclient", "ftputil", "gdown", "wget", "yt_dlp",
    }
)
#: Python modules that run other programs, or code the line does not show.
PYTHON_RUNS = frozenset(
    {"subprocess", "pty", "pexpect", "sh", "plumbum", "ctypes", "cffi", "importlib", "imp", "runpy", "code", "codeop",
     "pydoc", "multiprocessing", "concurrent", "commands", "popen2", "shlex_run", "distutils", "setuptools"}
)
#: Names and attributes through which Python code runs other code or programs.
_PYTHON_ESCAPES = frozenset(
    {"exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals", "vars",
     "breakpoint", "system", "popen", "startfile", "posix_spawn", "posix_spawnp", "open_connection",
     "create_connection", "create_subprocess_exec", "create_subprocess_shell", "start_server", "from_pretrained",
     "load_dataset", "snapshot_download", "hf_hub_download", "urlretrieve", "urlopen", "hub"}
)
#: Dunder attributes that only describe (`cupy.__version__`).
_PLAIN_DUNDERS = frozenset({"__version__", "__file__", "__name__", "__doc__", "__path__"})


def _escape(name: str) -> bool:
    return name in _PYTHON_ESCAPES or name.startswith(("exec", "spawn")) or (
        name.startswith("__") and name not in _PLAIN_DUNDERS
    )


def python_code_doubt(code: str) -> CodeDoubt | None:
    """Why `python -c CODE` may bring in someone else's text or run what
    the line does not show, or `None` when it imports only modules of this
    machine and calls nothing that runs other code."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return CodeDoubt("its code does not parse as Python, so the reader cannot see what it runs")
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                continue  # a relative import: the project's own package
            modules = [node.module or ""]
            names = [alias.name for alias in node.names]
            if any(_escape(n) or n == "*" for n in names) and modules[0].split(".", 1)[0] not in PYTHON_NETWORK:
                return CodeDoubt(f"its code imports `{names[0]}` from `{node.module}`, which runs code the line does not show")
        for module in modules:
            top = module.split(".", 1)[0]
            if top in PYTHON_NETWORK:
                return CodeDoubt(f"its code imports `{module}`, which reaches the network: what it prints is someone else's text", network=True)
            if top in PYTHON_RUNS:
                return CodeDoubt(f"its code imports `{module}`, which runs programs or code the line does not show")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and _escape(name):
            return CodeDoubt(f"its code calls `{name}`, which runs programs or code the line does not show")
    return None


#: Node's modules that reach the network or run programs.
NODE_NETWORK = frozenset({"http", "https", "http2", "net", "tls", "dgram", "dns", "undici", "axios", "node-fetch", "ws", "got", "request", "superagent"})
NODE_RUNS = frozenset({"child_process", "cluster", "worker_threads", "vm", "module", "inspector", "repl", "v8", "wasi"})
#: Node code that fetches, runs code, or reaches a module the reader cannot name.
_NODE_ESCAPES = re.compile(
    r"\b(?:fetch|eval|Function|WebSocket|XMLHttpRequest|EventSource|constructor|binding|dlopen|_linkedBinding|mainModule|globalThis|global|process\s*\[|import\s*\()"
)
_NODE_MODULE = re.compile(r"""\brequire\s*\(\s*(['"])([^'"]+)\1\s*\)|\bfrom\s*(['"])([^'"]+)\3|\bimport\s*(['"])([^'"]+)\5""")


def node_code_doubt(code: str) -> CodeDoubt | None:
    """Why `node -e CODE` may bring in someone else's text or run what the
    line does not show, or `None` when it requires only modules of this
    machine, each by a name on the line."""
    escape = _NODE_ESCAPES.search(code)
    if escape is not None:
        return CodeDoubt(f"its code uses `{escape.group(0).strip()}`, which fetches or runs code the line does not show")
    named = [m.group(2) or m.group(4) or m.group(6) for m in _NODE_MODULE.finditer(code)]
    if len(named) != len(re.findall(r"\brequire\b", code)) + len(re.findall(r"\bimport\b", code)):
        return CodeDoubt("its code loads a module by a name the line does not show")
    for module in named:
        top = module.removeprefix("node:").split("/", 1)[0]
        if top in NODE_NETWORK:
            return CodeDoubt(f"its code requires `{module}`, which reaches the network: what it prints is someone else's text", network=True)
        if top in NODE_RUNS:
            return CodeDoubt(f"its code requires `{module}`, which runs programs or code the line does not show")
    return None
