"""Personal data in text: what of it a rule or a prompt must not carry.

A learned rule rides in every future run's system prompt, and the prompts
that produce rules carry what the person's sessions held. A session is full
of things that identify a person or open their accounts — an email address
in a commit line, the host a build ran on, a token pasted into a shell, a
home directory that spells the person's login. None of it is a lesson; all
of it would leak into every run, and into a CLAUDE.md or AGENTS.md that may
be committed. This module finds it; the learn gate refuses a rule that
carries any, and a prompt builder may redact it before a model sees it.

Four kinds, each found by one small pure function over the text:

- **email** — an address, unless it is plainly not a person's: a reserved
  example domain (`example.com`, `*.test`, `*.invalid`, RFC 2606/6761), or a
  role-less service address such as `git@github.com` or `noreply@…`.
- **host** — a host name that is not generic: any name under a private-use
  suffix (`.local`, `.lan`, `.internal`, `.corp`, `.home.arpa`, …), any dotted
  name ending in a real top-level domain that is not a well-known public
  service, the `user@host:` of a shell prompt, and an IPv4 address that is
  not loopback, unspecified or a documentation range. Failing closed on
  purpose: a company's own domain *is* personal data here (it says where the
  person works), so only a short list of public services everyone uses is
  generic; a rule that needs to name a niche site is refused, which costs a
  rule, where the other way round costs a leak in every prompt.
  File names are not host names: the final label must be a top-level domain
  that is not also a common file extension (`.py` is Paraguay, `.md`
  Moldova, `.rs` Serbia, `.sh` St Helena — all files here). Nor are names
  in code, though their last label reads as a domain: a call
  (`subprocess.run(`), a capitalized module's member (`Enum.at`,
  `Path.home`), a field (`session.id`, `msg.id`).
- **token** — an API key or secret: the published prefixes of the common
  providers (`sk-`, `ghp_`, `github_pat_`, `glpat-`, `xox?-`, `AKIA…`,
  `AIza…`, `hf_`, `npm_`, `pypi-`), a JWT, a PEM private key, a bearer
  token, the value of an assignment to a name like `api_key` or `password`,
  and any long run of letters and digits mixed the way only generated
  secrets are (upper case, lower case and digits, high entropy).
- **home_path** — a home directory that names its owner: `/home/<user>`,
  `/Users/<user>`, `C:\\Users\\<user>`. A placeholder owner (`user`,
  `you`, `$USER`, `<name>`, `runner`, …) names nobody and is not reported.
- **handle** — an account's handle: `@name` in prose (not a decorator or
  a module attribute, which stand first on their line, not an assign in a
  line of code such as `<%= if @project do %>` or an argument
  `get(@flash)`, not an npm scope or a version tag), and `github.com/name`
  (or GitLab's, Bitbucket's, Codeberg's) — the account a person's
  repositories live under, unless it is a public organization's.
- **login** — a login name a terminal printed: `[sudo] password for
  <user>`, and the user of `ssh user@host`.

Each finding is named by what it is, never by the nearest detector: git's
config keys (`user.email`, `sendemail.to`) are not host names, though they
end in what reads as a top-level domain; a laptop's name
(`Pats-MacBook-Pro`) is a host, not "an API token", and a word holding
"auth" or "pass" (`Author:`, `passed:`) names no secret.

`find_personal_data` returns every finding in text order with its span, so a
caller can name what was found (`describe_findings`, which never repeats the
value) or replace it (`redact_personal_data`). Detection is deliberately a
handful of regular expressions and word lists, no model: it has to run on
every rule the learner proposes and every prompt a pass builds, and a person
must be able to read why a rule was refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from enum import Enum

import msgspec


class PersonalKind(str, Enum):
    """What kind of personal data a finding is."""

    EMAIL = "email"
    HOST = "host"
    TOKEN = "token"
    HOME_PATH = "home_path"
    HANDLE = "handle"
    LOGIN = "login"


#: How a finding of each kind is named to a person (a refusal's reason) and
#: what replaces it in redacted text. A home path becomes `~`, which keeps
#: the meaning ("a file in your home directory") and loses the owner.
KIND_NAMES: dict[PersonalKind, str] = {
    PersonalKind.EMAIL: "an email address",
    PersonalKind.HOST: "a host name",
    PersonalKind.TOKEN: "an API token or secret",
    PersonalKind.HOME_PATH: "a home directory naming its owner",
    PersonalKind.HANDLE: "an account handle",
    PersonalKind.LOGIN: "a login name",
}
REDACTIONS: dict[PersonalKind, str] = {
    PersonalKind.EMAIL: "[email]",
    PersonalKind.HOST: "[host]",
    PersonalKind.TOKEN: "[secret]",
    PersonalKind.HOME_PATH: "~",
    PersonalKind.HANDLE: "[handle]",
    PersonalKind.LOGIN: "[user]",
}


class PersonalFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One piece of personal data in a text: its kind, the text itself and
    where it is (`text[start:end]`)."""

    kind: PersonalKind
    text: str
    start: int
    end: int


# ─── Word lists ──────────────────────────────────────────────────────────

#: Domains reserved for examples and tests (RFC 2606, RFC 6761): an address
#: or host under one names nobody.
_RESERVED_SUFFIXES = ("example", "test", "invalid", "localhost")
_RESERVED_DOMAINS = frozenset({"example.com", "example.org", "example.net", "localhost"})

#: Local parts of addresses that belong to a service, not a person.
_SERVICE_LOCAL_PARTS = frozenset({"git", "noreply", "no-reply", "donotreply", "do-not-reply", "hg"})

#: Public services whose names appear in ordinary instructions ("publish to
#: pypi.org", "see docs.python.org"). A host is generic when its registered
#: domain is one of these and every label before it is a generic prefix
#: (`www`, `docs`, `api`, …): `alice.github.io` names a person's site,
#: `docs.github.com` names GitHub's documentation.
_PUBLIC_DOMAINS = frozenset({
    "anthropic.com", "claude.ai", "openai.com", "github.com", "githubusercontent.com", "github.io",
    "gitlab.com", "bitbucket.org", "pypi.org", "python.org", "npmjs.com", "npmjs.org", "crates.io",
    "docs.rs", "rust-lang.org", "golang.org", "go.dev", "nodejs.org", "readthedocs.io",
    "readthedocs.org", "stackoverflow.com", "google.com", "googleapis.com", "microsoft.com",
    "apple.com", "mozilla.org", "wikipedia.org", "docker.com", "docker.io", "kubernetes.io",
    "debian.org", "ubuntu.com", "archlinux.org", "gnu.org", "kernel.org", "w3.org", "ietf.org",
    "json-schema.org", "yaml.org", "toml.io", "sqlite.org", "postgresql.org", "mysql.com",
    "amazon.com", "aws.amazon.com", "cloudflare.com", "vercel.com", "netlify.com", "jsdelivr.net",
    "unpkg.com", "huggingface.co", "conda.io", "anaconda.org", "astral.sh", "pnpm.io", "yarnpkg.com",
    "typescriptlang.org", "reactjs.org", "react.dev", "nvidia.com", "llvm.org", "cmake.org",
    "visualstudio.com", "code.visualstudio.com", "neovim.io", "vim.org", "json.org", "semver.org",
    "googlesource.com", "android.com", "chromium.org", "sourcegraph.com", "gitee.com", "codeberg.org",
})
_GENERIC_PREFIXES = frozenset({
    "www", "docs", "doc", "api", "raw", "gist", "pkg", "pkgs", "registry", "cdn", "static",
    "developer", "developers", "dev", "en", "objects", "packages", "download", "downloads",
    "files", "blog", "status", "platform", "console", "help", "support", "learn", "upload",
    "test", "index", "codeload", "marketplace", "code", "deb", "security", "ftp", "mirrors",
    "source", "cs", "android", "chromium", "go",
})

#: Suffixes only private networks use: a name under one is always a
#: particular machine.
_PRIVATE_SUFFIXES = frozenset({"local", "lan", "internal", "intranet", "corp", "home", "localdomain", "private"})

#: Top-level domains a dotted name must end in to be read as a host. Country
#: codes that are also common file extensions are left out on purpose (see
#: the module docstring); the generic ones here are rarely extensions.
_TLDS = frozenset({
    "com", "net", "org", "edu", "gov", "mil", "int", "io", "ai", "app", "dev", "co", "me", "info",
    "biz", "cloud", "tech", "site", "online", "xyz", "us", "uk", "de", "fr", "nl", "be", "ch", "at",
    "se", "no", "dk", "fi", "es", "it", "pt", "ie", "eu", "ca", "au", "nz", "jp", "cn", "kr", "in",
    "br", "ru", "ua", "cz", "sk", "hu", "ro", "bg", "gr", "tr", "il", "za", "mx", "ar", "cl",
    "tw", "hk", "sg", "vn", "id", "th", "is", "lt", "lv", "ee", "si", "hr", "so", "to",
    "tv", "fm", "gg", "ly", "arpa", "systems", "network", "company", "studio", "works",
    "zone", "space", "world", "digital", "email", "host", "page", "run", "build", "codes",
})

#: Owners of a home directory that name nobody: placeholders and the stock
#: accounts of CI runners, containers and cloud images.
_PLACEHOLDER_OWNERS = frozenset({
    "user", "username", "you", "your", "yourname", "your-name", "your_name", "me", "name",
    "someone", "example", "runner", "ubuntu", "debian", "vscode", "node", "codespace", "ec2-user",
    "admin", "default", "public", "all users", "shared", "guest", "foo", "bar", "<user>", "<name>", "<username>", "{user}", "{username}", "...", "…",
})


#: The sections of git's configuration: `user.email` is a key, not a host
#: (its last label reads as a top-level domain), and prompts once showed
#: `git config --get [host]`.
_GIT_CONFIG_SECTIONS = frozenset({
    "user", "core", "remote", "branch", "sendemail", "alias", "init", "pull", "push", "credential", "http",
    "https", "diff", "merge", "commit", "gpg", "color", "fetch", "rebase", "tag", "log", "status", "url",
    "submodule", "safe", "github", "gitlab", "filter", "pack", "gc", "advice", "help", "format", "blame",
    "include", "includeif", "lfs", "maintenance", "feature", "rerere", "worktree", "apply", "am", "clone",
})

#: The hosts whose first path segment is an account: `github.com/name`.
_ACCOUNT_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
#: First path segments on those hosts that are pages, not accounts.
_ACCOUNT_PAGES = frozenset({
    "orgs", "settings", "features", "marketplace", "topics", "apps", "login", "about", "pricing", "sponsors",
    "notifications", "new", "explore", "search", "issues", "pulls", "trending", "collections", "enterprise",
    "security", "site", "contact", "join", "users", "help", "dashboard",
})
#: Accounts of public organizations whose repositories everyone reads
#: (`github.com/anthropics/claude-code`): they name no person.
_PUBLIC_ACCOUNTS = frozenset({
    "anthropics", "openai", "microsoft", "google", "googleapis", "facebook", "meta-llama", "huggingface",
    "rust-lang", "python", "nodejs", "golang", "kubernetes", "docker", "npm", "github", "actions", "vercel",
    "astral-sh", "pytorch", "tensorflow", "nvidia", "apple", "mozilla", "aosp-mirror", "android", "llvm",
})
#: Accounts that name nobody, in examples: `github.com/org/repo`.
_PLACEHOLDER_ACCOUNTS = frozenset({
    "org", "owner", "orgname", "organization", "your-org", "your-username", "my-org", "myorg", "someone",
    "repo", "account", "<org>", "<owner>", "{owner}", "{org}", ":owner", ":org",
})
#: Words after `@` that are code, not a handle: decorators, doc tags, npm
#: dist-tags and chat keywords.
_NOT_HANDLES = frozenset({
    "property", "staticmethod", "classmethod", "dataclass", "override", "param", "params", "returns",
    "return", "throws", "throw", "raises", "deprecated", "pytest", "types", "latest", "next", "beta",
    "canary", "stable", "example", "everyone", "here", "channel", "all", "type", "see", "link", "since",
    "todo", "fixme", "import", "media", "keyframes", "font-face", "apply", "tailwind", "layer", "use",
    "mixin", "include", "extend", "component", "injectable", "input", "output", "test", "before", "after",
    "interface", "implementation", "end", "author", "version", "brief", "file", "code", "main",
})
#: Top-level domains that are also the names of fields and methods
#: (`Enum.at`, `Path.home`, `LLMChain.run`): a dotted name under one whose
#: first label is capitalized is a module or a class's member, not a host.
_CODE_WORD_TLDS = frozenset({"id", "at", "run", "build", "home", "to", "is", "in", "it", "no", "so", "me", "page", "host", "email", "info", "int"})
#: Of those, the ones a two-label lower-case name is a field or a method
#: under far more often than a site: `session.id`, `subprocess.run`.
_FIELD_TLDS = frozenset({"id", "run", "build"})
#: Indonesia's second-level domains: `shop.co.id` is a site, `msg.id` a field.
_ID_SECOND_LEVEL = frozenset({"co", "ac", "go", "or", "web", "my", "net", "sch", "biz", "mil", "desa", "ponpes"})
#: What makes a line code rather than prose, for a word after `@`: a
#: template tag, a block opener, a comparison, an arrow, a pipe.
_CODE_LINE_RE = re.compile(r"<%|%>|\bdo\s*$|==|!=|<-|->|=>|\|>|::|\{.*\}")

#: Words of a machine's name: a hyphenated name holding one is a host.
_MACHINE_WORDS = ("macbook", "imac", "mac-mini", "mac-studio", "thinkpad")


# ─── The detectors ───────────────────────────────────────────────────────

_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24})(?![\w-])"
)
# A shell prompt's `user@host:`, `user@host ~]$` or zsh's `user@host ~ %`:
# the host need not be dotted.
_PROMPT_RE = re.compile(
    r"(?<![\w.@-])([a-z_][a-z0-9_.-]{0,31})@([A-Za-z][A-Za-z0-9-]{0,62})"
    r"(?=:[~/]|\s+~?[\w/~.-]*\][$#]|\s+[~\w/.-]+\s+[%$#](?:\s|$))"
)
# `ssh user@host` (and its kin): the user is a login, the host a machine.
_SSH_RE = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh)\s+(?:-\S+\s+)*([a-z_][a-z0-9_.-]{0,31})@([A-Za-z0-9][A-Za-z0-9.-]{0,62})")
_MACHINE_RE = re.compile(r"(?<![\w.@/-])([A-Za-z0-9'’]+(?:-[A-Za-z0-9'’]+)+)(?![\w@/-])")
# A file read with its line numbers (`  28→`, `cat -n`'s `  28\t`).
_GUTTER_RE = re.compile(r"^\s*\d+(?:→|\t)")
_SUDO_RE = re.compile(r"\[sudo\] password for ([^\s:]+)")
_AT_HANDLE_RE = re.compile(r"(?:^|(?<=[\s(\[,;\"'“]))@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))(?![\w/.@(\[-])", re.MULTILINE)
_ACCOUNT_URL_RE = re.compile(
    r"(?<![\w.-])(?:https?://)?(?:www\.)?(" + "|".join(re.escape(h) for h in _ACCOUNT_HOSTS) + r")/([A-Za-z0-9](?:[A-Za-z0-9_.-]{0,38}))"
)
_HOST_RE = re.compile(
    r"(?<![\w@./-])((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,23})(?![\w-]|\.[A-Za-z0-9])"
)
_IPV4_RE = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w]|\.\d)")
_HOME_RE = re.compile(
    r"(?:(?<![\w.])/home/|(?<![\w.])/Users/|(?<![A-Za-z])[A-Za-z]:[\\/]+Users[\\/]+)"
    r"([^\\/\s'\"`:;,)\]}>]+)"
)
_TOKEN_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w-])sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?<!\w)(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"),
    re.compile(r"(?<!\w)github_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"(?<![\w-])glpat-[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?<![\w-])xox[abprse]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    re.compile(r"(?<![\w-])AIza[A-Za-z0-9_-]{35}"),
    re.compile(r"(?<!\w)hf_[A-Za-z0-9]{20,}"),
    re.compile(r"(?<!\w)npm_[A-Za-z0-9]{30,}"),
    re.compile(r"(?<![\w-])pypi-[A-Za-z0-9_-]{30,}"),
    re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----(?:.|\n)*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|$)"),
)
# `Bearer <token>` and `api_key = "<value>"`: the value is the finding.
_BEARER_RE = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/=-]{16,})")
# The name must hold the secret word as a word of its own (`AUTH_TOKEN`,
# `db-password`), not inside another (`Author:`, `tests passed:`).
_ASSIGNED_RE = re.compile(
    r"(?i)\b(?:[\w-]*[_-])?(?:api[_-]?key|secret|token|passwd|password|passphrase|pass|pwd|auth)(?:[_-][\w-]*)?"
    r"[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{8,})"
)
_LONG_RUN_RE = re.compile(r"(?<![\w/+=-])[A-Za-z0-9_\-+/=]{32,}(?![\w/+=-])")

#: How long and how random a bare run of characters must be to read as a
#: generated secret: 32 characters (the shortest common key length), upper
#: case, lower case and at least three digits, and 4 bits of entropy per
#: character. CamelCase identifiers and words joined by hyphens fall short
#: of the mix; a git hash (hex, one case) of the letters.
SECRET_MIN_LENGTH = 32
SECRET_MIN_ENTROPY = 4.0


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    n = len(text)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def looks_generated(run: str) -> bool:
    """Whether a run of key characters reads as a generated secret (see
    `SECRET_MIN_LENGTH`)."""
    core = run.strip("=")
    if len(core) < SECRET_MIN_LENGTH or "/" in core.strip("/"):
        return False
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    digits = sum(c.isdigit() for c in core)
    return upper >= 2 and lower >= 2 and digits >= 3 and _entropy(core) >= SECRET_MIN_ENTROPY


def _labels(host: str) -> list[str]:
    return host.lower().rstrip(".").split(".")


def _is_reserved(host: str) -> bool:
    """A name under a domain reserved for examples and tests."""
    labels = _labels(host)
    return labels[-1] in _RESERVED_SUFFIXES or ".".join(labels[-2:]) in _RESERVED_DOMAINS


def is_generic_host(host: str) -> bool:
    """Whether a host name names no one's machine or employer: a reserved
    example name, or a public service's domain under generic prefixes only."""
    labels = _labels(host)
    if _is_reserved(host):
        return True
    for cut in range(len(labels) - 1):
        if ".".join(labels[cut:]) in _PUBLIC_DOMAINS:
            return all(label in _GENERIC_PREFIXES for label in labels[:cut])
    return False


def _is_code_name(candidate: str, called: bool) -> bool:
    """Whether a dotted name is a name in code: a call (`subprocess.run(`),
    a member of a capitalized module or class (`Enum.at`, `Path.home`), a
    field under a top-level domain that is mostly a field's name
    (`session.id`, `socket.assigns.subagent.id`), or a reverse-domain
    package of the example domain (`com.example.app`)."""
    labels = _labels(candidate)
    raw = candidate.split(".")
    if called or (labels[-1] in _CODE_WORD_TLDS and any(not r.islower() for r in raw[:-1])):
        return True
    if labels[-1] == "id" and labels[-2] not in _ID_SECOND_LEVEL and labels[0] not in _GENERIC_PREFIXES:
        return True
    if len(labels) == 2 and labels[-1] in _FIELD_TLDS:
        return True
    return len(labels) >= 3 and labels[0] in ("com", "org", "net", "io") and labels[1] in _RESERVED_SUFFIXES


def _is_host_name(candidate: str) -> bool:
    labels = _labels(candidate)
    if len(labels) < 2 or any(not label for label in labels):
        return False
    if len(labels) == 2 and labels[0] in _GIT_CONFIG_SECTIONS:
        return False  # `user.email`: a git config key
    if labels[-1] in _PRIVATE_SUFFIXES or (labels[-2:] == ["home", "arpa"]):
        return True
    return labels[-1] in _TLDS


def _emails(text: str) -> list[PersonalFinding]:
    out = []
    for m in _EMAIL_RE.finditer(text):
        local, domain = m.group(1), m.group(2)
        if _is_reserved(domain) or (local.lower() in _SERVICE_LOCAL_PARTS and is_generic_host(domain)):
            continue
        out.append(PersonalFinding(kind=PersonalKind.EMAIL, text=m.group(0), start=m.start(), end=m.end()))
    return out


def _hosts(text: str) -> list[PersonalFinding]:
    out = []
    for m in _PROMPT_RE.finditer(text):
        if m.group(2).lower() in ("localhost",):
            continue
        out.append(PersonalFinding(kind=PersonalKind.HOST, text=m.group(0), start=m.start(), end=m.end()))
    for m in _HOST_RE.finditer(text):
        host = m.group(1)
        called = text.startswith("(", m.end(1))
        if _is_host_name(host) and not is_generic_host(host) and not _is_code_name(host, called):
            out.append(PersonalFinding(kind=PersonalKind.HOST, text=host, start=m.start(1), end=m.end(1)))
    for m in _SSH_RE.finditer(text):
        if m.group(2).lower() != "localhost" and not is_generic_host(m.group(2)):
            out.append(PersonalFinding(kind=PersonalKind.HOST, text=m.group(2), start=m.start(2), end=m.end(2)))
    for m in _MACHINE_RE.finditer(text):
        if any(w in m.group(1).lower() for w in _MACHINE_WORDS):
            out.append(PersonalFinding(kind=PersonalKind.HOST, text=m.group(1), start=m.start(1), end=m.end(1)))
    for m in _IPV4_RE.finditer(text):
        octets = [int(g) for g in m.groups()]
        if any(o > 255 for o in octets) or not _personal_ipv4(octets):
            continue
        out.append(PersonalFinding(kind=PersonalKind.HOST, text=m.group(0), start=m.start(), end=m.end()))
    return out


def _personal_ipv4(octets: Sequence[int]) -> bool:
    """Every address but loopback, the unspecified one, broadcast and the
    documentation ranges (RFC 5737) points at some network's machine."""
    a, b, c, _ = octets
    if a in (0, 127, 255):
        return False
    return (a, b, c) not in ((192, 0, 2), (198, 51, 100), (203, 0, 113))


def _tokens(text: str) -> list[PersonalFinding]:
    out = []
    for pattern in _TOKEN_RES:
        out += [PersonalFinding(kind=PersonalKind.TOKEN, text=m.group(0), start=m.start(), end=m.end()) for m in pattern.finditer(text)]
    for pattern in (_BEARER_RE, _ASSIGNED_RE):
        for m in pattern.finditer(text):
            value = m.group(1)
            if pattern is _ASSIGNED_RE and not _secret_value(value):
                continue
            out.append(PersonalFinding(kind=PersonalKind.TOKEN, text=value, start=m.start(1), end=m.end(1)))
    for m in _LONG_RUN_RE.finditer(text):
        if looks_generated(m.group(0)):
            out.append(PersonalFinding(kind=PersonalKind.TOKEN, text=m.group(0), start=m.start(), end=m.end()))
    return out


def _secret_value(value: str) -> bool:
    """Whether the value assigned to a secret-sounding name is a secret
    rather than a reference to one (`$API_KEY`, `os.environ[...]`, `<your
    key>`, `***`) or a word (`password: required`)."""
    if value[0] in "$%<{[*(" or value.startswith(("os.", "env.", "process.", "getenv")):
        return False
    if value.isalpha() and value.islower():
        return False
    return any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])


def _home_paths(text: str) -> list[PersonalFinding]:
    out = []
    for m in _HOME_RE.finditer(text):
        owner = m.group(1)
        if owner.lower() in _PLACEHOLDER_OWNERS or owner[0] in "$%<{" or owner.startswith("~"):
            continue
        out.append(PersonalFinding(kind=PersonalKind.HOME_PATH, text=m.group(0), start=m.start(), end=m.end()))
    return out


def _handles(text: str) -> list[PersonalFinding]:
    """`@name` in prose, `github.com/name`, and the logins a terminal
    printed (`[sudo] password for pat`, `ssh pat@host`)."""
    out = []
    for m in _AT_HANDLE_RE.finditer(text):
        if m.group(1).lower() in _NOT_HANDLES or m.group(1).isdigit():
            continue
        line_start, line_end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
        if not _GUTTER_RE.sub("", text[line_start : m.start()]).strip():
            continue  # first on its line: a decorator or a module attribute (`@impl true`), not a mention
        if _CODE_LINE_RE.search(text[line_start : None if line_end < 0 else line_end]):
            continue  # an assign or an attribute in a line of code (`<%= if @project do %>`)
        if m.start() >= 2 and text[m.start() - 1] == "(" and (text[m.start() - 2].isalnum() or text[m.start() - 2] == "_"):
            continue  # an argument: `lookup(@table, token)`
        out.append(PersonalFinding(kind=PersonalKind.HANDLE, text=m.group(0), start=m.start(), end=m.end()))
    for m in _ACCOUNT_URL_RE.finditer(text):
        if m.group(2).lower() in _ACCOUNT_PAGES | _PLACEHOLDER_OWNERS | _PLACEHOLDER_ACCOUNTS | _PUBLIC_ACCOUNTS:
            continue
        out.append(PersonalFinding(kind=PersonalKind.HANDLE, text=m.group(2), start=m.start(2), end=m.end(2)))
    for pattern in (_SUDO_RE, _SSH_RE):
        for m in pattern.finditer(text):
            if m.group(1).lower() in _PLACEHOLDER_OWNERS or m.group(1)[0] in "$%<{":
                continue
            out.append(PersonalFinding(kind=PersonalKind.LOGIN, text=m.group(1), start=m.start(1), end=m.end(1)))
    return out


def find_personal_data(text: str) -> list[PersonalFinding]:
    """Every piece of personal data in `text`, in text order, none
    overlapping another: where two findings overlap, the one that starts
    first wins, and of two that start together the longer (an address is
    one email finding, not an email and its domain as a host)."""
    found = _emails(text) + _tokens(text) + _home_paths(text) + _hosts(text) + _handles(text)
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    out: list[PersonalFinding] = []
    for f in found:
        if out and f.start < out[-1].end:
            continue
        out.append(f)
    return out


def has_personal_data(text: str) -> bool:
    """Whether `text` carries any personal data."""
    return bool(find_personal_data(text))


def describe_findings(findings: Sequence[PersonalFinding]) -> str:
    """What was found, by kind, in a person's words — never the value
    itself, so a refusal that names it does not carry it on: "an email
    address and a host name"."""
    kinds = list(dict.fromkeys(f.kind for f in findings))
    names = [KIND_NAMES[k] for k in kinds]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def redact_personal_data(text: str, findings: Sequence[PersonalFinding] | None = None) -> str:
    """`text` with each finding replaced by its kind's stand-in
    (`REDACTIONS`). `findings` defaults to `find_personal_data(text)`."""
    if findings is None:
        findings = find_personal_data(text)
    parts = []
    pos = 0
    for f in sorted(findings, key=lambda f: f.start):
        if f.start < pos:
            continue
        parts.append(text[pos:f.start])
        parts.append(REDACTIONS[f.kind])
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)
