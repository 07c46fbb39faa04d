"""Personal data: what the detector finds, what it leaves alone, and how a
finding is named and redacted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mecha.core.learning.personal import (
    PersonalKind,
    describe_findings,
    find_personal_data,
    has_personal_data,
    is_generic_host,
    redact_personal_data,
)


def kinds(text: str) -> list[tuple[PersonalKind, str]]:
    return [(f.kind, f.text) for f in find_personal_data(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Send the report to pat.lee@acme-corp.com when done.", [(PersonalKind.EMAIL, "pat.lee@acme-corp.com")]),
        ("Sign commits as Pat <pat+ci@mail.fastbox.io>.", [(PersonalKind.EMAIL, "pat+ci@mail.fastbox.io")]),
        ("Build on build-07.corp.acme.net, not locally.", [(PersonalKind.HOST, "build-07.corp.acme.net")]),
        ("The GPU runs on gpubox.local.", [(PersonalKind.HOST, "gpubox.local")]),
        ("Deploy with rsync to staging.acme.com.", [(PersonalKind.HOST, "staging.acme.com")]),
        ("pat@devbox:~/proj$ make", [(PersonalKind.HOST, "pat@devbox")]),
        ("The database listens on 10.0.3.17 port 5432.", [(PersonalKind.HOST, "10.0.3.17")]),
        ("See alice.github.io for the notes.", [(PersonalKind.HOST, "alice.github.io")]),
        ("Read files under /home/pat/app only.", [(PersonalKind.HOME_PATH, "/home/pat")]),
        ("Logs are in /Users/jsmith/Library/Logs.", [(PersonalKind.HOME_PATH, "/Users/jsmith")]),
        ("Open C:\\Users\\Pat\\src\\app.sln in Visual Studio.", [(PersonalKind.HOME_PATH, "C:\\Users\\Pat")]),
    ],
)
def test_each_kind_of_personal_data_is_found_with_its_span(text, expected):
    # Pins: the four kinds the issue names (email, host, token, home path),
    # each with the exact text a redaction would replace.
    assert kinds(text) == expected
    for f in find_personal_data(text):
        assert text[f.start:f.end] == f.text


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-Xq7bV9kLmN2pQ4rS6tU8wY0zA1cE3gI5",
        "sk-proj-4f8Hq2LmZx9Vb7Nc1Rt6Yw3Ke5Ju0Pa",
        "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "glpat-Ab3Cd5Ef7Gh9Ij1Kl3Mn",
        "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
        "AKIAIOSFODNN7EXAMPLE",
        "AIzaSyD3x4mpl3K3yW1thTh1rtyF1veCh4rsXYZab",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "q8Z3vR7mK2pX9wL4nB6tY1cF5hJ0dG3sA7eU",
    ],
)
def test_tokens_and_secrets_are_found_wherever_they_sit(secret):
    # Pins: a key pasted into a session riding into every prompt as part of
    # a rule.
    text = f"Call the API with {secret} set."
    assert kinds(text) == [(PersonalKind.TOKEN, secret)]


def test_a_value_assigned_to_a_secret_name_is_a_secret_and_a_reference_to_one_is_not():
    # Pins: `password = hunter2Go!` leaking, and `api_key = $API_KEY` (which
    # names nothing) refusing a good rule about configuration.
    assert kinds('Set api_key = "c0ffee42Beans" in config.') == [(PersonalKind.TOKEN, "c0ffee42Beans")]
    assert kinds("DB_PASSWORD=Tr0ub4dor3 in the env file") == [(PersonalKind.TOKEN, "Tr0ub4dor3")]
    assert kinds("Curl with Authorization: Bearer abcdEFGH1234ijklMNOP5678") == [
        (PersonalKind.TOKEN, "abcdEFGH1234ijklMNOP5678")
    ]
    for fine in (
        "Read the key from api_key = $OPENAI_API_KEY, never inline it.",
        "Pass token: os.environ['GH_TOKEN'] to the client.",
        "A password: required field must be validated.",
        "Set api_key = <your key> in the example config.",
    ):
        assert find_personal_data(fine) == [], fine


@pytest.mark.parametrize(
    "text",
    [
        # Ordinary rules: files, versions, public services, placeholders.
        "Run the tests with pytest -x before committing.",
        "Use pnpm, never npm, in this repository; see pnpm.io for the lockfile format.",
        "Do not edit files under src/generated/; regenerate them with scripts/gen.py.",
        "Keep README.md, CHANGELOG.md and setup.py in step; the crate's main.rs too.",
        "Pin numpy==1.26.4 and check docs.python.org before using a new stdlib API.",
        "Publish to pypi.org only from CI; push to github.com/org/repo over ssh as git@github.com.",
        "Compile with nvcc -I/usr/local/cuda-12.6/targets/x86_64-linux/include.",
        "Write example addresses as dev@example.com or a.b@host.test, never a real one.",
        "Paths in docs use /home/user/project or ~/project, not a real home.",
        "Store config under $HOME/.config and %USERPROFILE% on Windows, e.g. C:\\Users\\<name>.",
        "Bind the dev server to 127.0.0.1 or 0.0.0.0 and document 192.0.2.10 as the sample.",
        "Reference commits by full hash, e.g. 3f9c2a7e4b1d8f6a0c5e9b2d7a4f1c8e3b6d9a0f.",
        "Name handlers like handleUserAccountDeletionRequestAsync in this codebase.",
        "Prefer msgspec.Struct over dataclasses.dataclass for wire types.",
        "Call os.path.join, not string concatenation, and keep config.toml at the root.",
    ],
)
def test_ordinary_rule_text_carries_no_personal_data(text):
    # Pins: a detector so eager that the gate refuses good rules (the figure
    # "good lost: 0" rests on this).
    assert find_personal_data(text) == []
    assert not has_personal_data(text)


def test_a_public_service_is_generic_only_under_generic_prefixes():
    assert is_generic_host("github.com") and is_generic_host("docs.github.com")
    assert is_generic_host("raw.githubusercontent.com") and is_generic_host("en.wikipedia.org")
    assert not is_generic_host("alice.github.io")
    assert not is_generic_host("acme.com")
    assert is_generic_host("ci.example.org") and is_generic_host("box.test")


def test_an_address_is_one_finding_not_an_address_and_a_host():
    # Pins: overlapping findings doubling a redaction ("[email]" inside "[host]").
    text = "Mail ops@build.acme.net about build.acme.net."
    assert kinds(text) == [(PersonalKind.EMAIL, "ops@build.acme.net"), (PersonalKind.HOST, "build.acme.net")]


def test_the_description_names_kinds_and_never_the_value():
    # Pins: a refusal that repeats the address it refused to file.
    text = "Email pat@acme.io from gpubox.local with ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ."
    found = find_personal_data(text)
    said = describe_findings(found)
    assert said == "an email address, a host name and an API token or secret"
    assert "pat" not in said and "gpubox" not in said and "ghp_" not in said


def test_redaction_replaces_each_finding_and_keeps_the_rest():
    text = "Copy /home/pat/app/.env to pat@acme.io's box db1.acme.io using key sk-ant-api03-Xq7bV9kLmN2pQ4rS6tU8wY0zA1cE3gI5."
    assert redact_personal_data(text) == "Copy ~/app/.env to [email]'s box [host] using key [secret]."
    assert find_personal_data(redact_personal_data(text)) == []


@given(st.text(max_size=300))
def test_findings_are_ordered_disjoint_and_exact_on_any_text(text):
    # Pins: a crash or an overlapping span on text no test thought of.
    found = find_personal_data(text)
    pos = 0
    for f in found:
        assert f.start >= pos and text[f.start:f.end] == f.text
        pos = f.end
    redact_personal_data(text, found)


@pytest.mark.parametrize(
    "text",
    [
        "Check user.name and user.email in git config.",
        "Run git config --get user.email before committing; set sendemail.to per repository.",
        "Decorate it with @property and install react@latest with @types/node.",
        "defmodule A do\n  @moduledoc false\n  @impl true\n  @spec run() :: :ok\nend",
        "    27→\n    28→  @impl true\n    29→  def mount(_, _, socket), do: {:ok, socket}",
        "In the git log, Author: lines name the committer; the tests passed: 12 of 12.",
        "Run the benchmarks on the MacBook Pro only after plugging it in.",
    ],
)
def test_git_config_keys_decorators_and_words_holding_auth_are_not_personal_data(text):
    # Pins: "Check user.name and user.email in git config." refused as
    # carrying "a host name", and prompts showing `git config --get [host]`.
    assert find_personal_data(text) == [], [(f.kind, f.text) for f in find_personal_data(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Ask @pat-lee before merging.", [(PersonalKind.HANDLE, "@pat-lee")]),
        ("thanks,\ncc @pat-lee", [(PersonalKind.HANDLE, "@pat-lee")]),
        ("Clone from github.com/patlee/dotfiles.", [(PersonalKind.HANDLE, "patlee")]),
        ("[sudo] password for pat: ", [(PersonalKind.LOGIN, "pat")]),
        ("ssh pat@devbox-07 uptime", [(PersonalKind.LOGIN, "pat"), (PersonalKind.HOST, "devbox-07")]),
        ("pat@Pats-MacBook-Pro ~ % make", [(PersonalKind.HOST, "pat@Pats-MacBook-Pro")]),
        ("Author: Pats-MacBook-Pro", [(PersonalKind.HOST, "Pats-MacBook-Pro")]),
    ],
)
def test_handles_logins_and_a_laptops_name_are_found_by_their_real_kind(text, found):
    # Pins: a handle and a pasted sudo prompt reaching the prompts
    # unredacted, and a laptop's name reported as "an API token or secret".
    assert kinds(text) == found


def test_a_refusal_names_each_finding_by_its_kind_and_redaction_keeps_the_sense():
    text = "Ask @pat-lee on Pats-MacBook-Pro; [sudo] password for pat"
    assert describe_findings(find_personal_data(text)) == "an account handle, a host name and a login name"
    assert redact_personal_data(text) == "Ask [handle] on [host]; [sudo] password for [user]"


@pytest.mark.parametrize(
    "text",
    [
        # A field or a call in code: the last label reads as a top-level
        # domain (`id` Indonesia, `at` Austria, `run`, `build`, `home`).
        "Compare session.id with project.id before the write.",
        "Use subprocess.run(cmd, check=True) rather than os.system.",
        "Enum.at(list, 0) returns nil on an empty list; Regex.run/2 too.",
        "Call ReviewContextBuilder.build() once per review, then LLMChain.run.",
        "Path.home() is the person's home, not the project's.",
        "Read socket.assigns.subagent.id from the assigns, not msg1.id.",
        "The app id is com.example.app in the manifest.",
        # Elixir assigns and module attributes inside a template or a call.
        "<%= if is_nil(@project) do %>",
        "<div :if={Phoenix.Flash.get(@flash, :info)}>",
        "case :ets.lookup(@table, token) do",
        "<%= if @line[:render_mode] == :code do %>",
        "<%= for ann <- @annotations do %>",
        # Public project hosts anyone reads.
        "Search cs.android.com, then android.googlesource.com and developer.android.com.",
        "Mirror it from gitee.com or look it up on sourcegraph.com.",
    ],
)
def test_names_in_code_and_public_project_hosts_are_not_personal_data(text):
    # Pins: prompts showing `[host]` for `session.id` and `Enum.at`, and
    # Elixir assigns (`@flash`, `@table`) redacted as account handles.
    assert find_personal_data(text) == [], [(f.kind, f.text) for f in find_personal_data(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Deploy to api.acme.id before noon.", [(PersonalKind.HOST, "api.acme.id")]),
        ("The portal is at shop.co.id, not the staging one.", [(PersonalKind.HOST, "shop.co.id")]),
        ("Run it on Acme.dev's staging box.", [(PersonalKind.HOST, "Acme.dev")]),
        ("Ping @pat-lee, then (cc @sam).", [(PersonalKind.HANDLE, "@pat-lee"), (PersonalKind.HANDLE, "@sam")]),
        ("The build host is ci.acme.run; deploy from there.", [(PersonalKind.HOST, "ci.acme.run")]),
    ],
)
def test_hosts_and_handles_next_to_code_names_are_still_found(text, found):
    # The code-name exemptions are narrow: a real host under the same
    # top-level domains, and a mention in prose, are still personal data.
    assert kinds(text) == found


def test_a_public_organizations_account_is_not_a_handle_and_a_persons_is():
    assert kinds("See github.com/anthropics/claude-code/issues for it.") == []
    assert kinds("See github.com/patlee/claude-code/issues for it.") == [(PersonalKind.HANDLE, "patlee")]
