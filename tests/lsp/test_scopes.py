"""A project's rules files in the editor: they are rules documents of their
own scope — checked against their own sibling, shown their own scope's
proposals — and the hover and the lens name the project they apply in."""

from __future__ import annotations

from lsprotocol import types as lsp

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET, domain_rules_section
from tests.builders import rule

from .conftest import MechaClient, Store, has_code

RULES = [rule("Indent with two spaces", "r-app-1"), rule("Run make check before committing", "r-app-2")]


def project_dir(store: Store) -> str:
    app = store.root.parent / "app"
    (app / ".git").mkdir(parents=True, exist_ok=True)
    return str(app)


def titles(lenses: list[lsp.CodeLens]) -> list[str]:
    return [lens.command.title for lens in lenses if lens.command is not None]


def hover_head(h: lsp.Hover | None) -> str:
    assert h is not None and isinstance(h.contents, lsp.MarkupContent)
    return h.contents.value.splitlines()[0]


async def test_a_projects_learned_file_is_checked_and_names_its_project(client: MechaClient, store: Store) -> None:
    app = project_dir(store)
    path = store.learned("behavior", RULES, app)
    assert path.name.startswith("behavior@app-") and f'project = "{app}"' in path.read_text()
    uri, diags = await client.open(path)
    assert diags == [], "the project's own `project` key is no unknown key"

    assert hover_head(await client.hover(uri, path.read_text().splitlines().index("[[rules]]") + 1)).endswith(
        f"· active · project {app}"
    )
    lenses = await client.lenses(uri)
    chars = len(domain_rules_section("behavior", [], RULES, project=True) or "")
    assert titles(lenses) == [
        f"2/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules",
        f"{chars}/{RULES_CHAR_BUDGET} chars",
        f"scope: project {app}",
    ]
    for lens in lenses:
        assert lens.command is not None and list(lens.command.arguments or []) == ["behavior", app]
    # Clicked, a lens shows the block a run in that project gets: the
    # global rules, then the project's.
    shown = await client.command("mecha.showRulesBlock", "behavior", app)
    assert shown == await client.request("mecha/rulesPromptBlock", {"domain": "behavior", "project": app})
    assert "### behavior (this project)\n- Indent with two spaces" in shown["block"]


async def test_a_projects_user_file_is_checked_against_the_projects_learned_rules(
    client: MechaClient, store: Store
) -> None:
    app = project_dir(store)
    learned = store.learned("behavior", RULES, app)
    store.learned("behavior", [rule("Answer in English", "r-global")])
    luri, diags = await client.open(learned)
    assert diags == []
    # The project's own user file restates the project's learned rule (not
    # the global one): that is what its learned sibling is told.
    user = store.path("behavior", "user", app)
    user.write_text('[[rules]]\ntext = "Indent with two spaces"\n')
    uuri, diags = await client.open(user)
    assert diags == []
    assert hover_head(await client.hover(uuri, 1)).endswith(f"· active · project {app}"), "named by its sibling's key"
    since = client.mark()
    await client.change(uuri, '[[rules]]\ntext = "Answer in English"\n')
    diags = await client.wait_diagnostics(luri, since=since, where=lambda d: not d)
    assert diags == [], "a global rule is not the project's sibling"
    since = client.mark()
    await client.change(uuri, '[[rules]]\ntext = "Indent with two spaces"\n')
    diags = await client.wait_diagnostics(luri, since=since, where=has_code("restates-user-rule"))
    assert [d.code for d in diags] == ["restates-user-rule"]


async def test_a_proposal_shows_on_its_own_scopes_file_only(client: MechaClient, store: Store) -> None:
    app = project_dir(store)
    project_file = store.learned("behavior", RULES, app)
    global_file = store.learned("behavior", [rule("Answer in English", "r-global")])
    puri, _ = await client.open(project_file)
    guri, _ = await client.open(global_file)

    since = client.mark()
    store.proposal("p-app", [*RULES, rule("Prefer tabs in Makefiles", "r-app-3")], project=app)
    diags = await client.wait_diagnostics(puri, since=since, where=has_code("pending-proposal"))
    assert [(d.code, d.data["proposal_id"]) for d in diags] == [("pending-proposal", "p-app")]
    assert "1 pending proposal" in titles(await client.lenses(puri))
    assert all(d.code != "pending-proposal" for d in client.diagnostics_of(guri))
    assert "1 pending proposal" not in titles(await client.lenses(guri))
    assert titles(await client.lenses(guri))[-1] == "scope: global"


async def test_the_review_commands_say_what_the_server_computed(client: MechaClient, store: Store) -> None:
    # Pins: a client left to count active rules or to word an accept itself
    # (two clients, two spellings), or a project's proposal listed and
    # accepted as if it were global.
    app = project_dir(store)
    store.learned("behavior", RULES, app)
    store.proposal("p-app", [*RULES, rule("Prefer tabs in Makefiles", "r-app-3")], project=app)
    store.proposal("p-global", [rule("Answer in English", "r-global")])

    listed = await client.command("mecha.listProposals", {"status": "pending"})
    assert [p["id"] for p in listed["proposals"]] == ["p-app", "p-global"]
    by_id = {s["id"]: s for s in listed["summaries"]}
    assert by_id["p-app"] == {
        "id": "p-app",
        "title": f"behavior · 2 → 3 active rules · project {app}",
        "active_before": 2,
        "active_after": 3,
        "scope": app,
        "writes": store.path("behavior", "learned", app).name,
        "scope_label": f"project {app}",
    }
    shown = await client.request("mecha/proposal", {"id": "p-app"})
    assert shown["scope"] == by_id["p-app"]["scope"], "`scope` means the project's root in the listing and the diff alike"
    assert by_id["p-global"]["title"] == "behavior · 0 → 1 active rules"
    assert (by_id["p-global"]["scope"], by_id["p-global"]["scope_label"]) == ("global", "global")
    assert by_id["p-global"]["writes"] == "behavior.learned.toml"

    accepted = await client.command("mecha.acceptProposal", "p-app")
    assert accepted["proposal"]["status"] == "accepted"
    assert accepted["message"] == f"accepted proposal p-app; behavior now has 3 active learned rules in project {app}"
    assert accepted["exports"] == []
    rejected = await client.command("mecha.rejectProposal", "p-global", "not mine")
    assert rejected["message"] == "rejected proposal p-global"
    retiring = await client.command("mecha.proposeRetirement", "behavior", "r-app-1", "regressed")
    assert retiring["message"] == f"proposal {retiring['proposal']['id']} would retire the rule; review it like any other"
