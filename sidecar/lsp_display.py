"""What any LSP client is shown when a command has run.

A client without our extension runs the server's commands from a code
action or a lens and drops their results: eglot and lsp-mode ignore what
`workspace/executeCommand` returns. So for such a client the server shows
the result itself, through what every client handles:

- an accept, a rejection, a proposed retirement: its `message` as
  `window/showMessage`;
- a proposal's diff: the diff written to a file in the store's cache
  (`core.editor.diff_file`) and opened with `window/showDocument` when the
  client can open documents; a client that cannot (eglot 1.9, lsp-mode 8)
  is shown the diff as a message, with the file's path to open it from;
- what the code lenses run (lsp-mode shows them): the rules block a run
  gets, the proposals listed, and whether a learn pass started, each as a
  message.

Our own extensions say they show results themselves
(`protocol.commands.ClientExtensions.shows_results`) and get none of this,
or they would show everything twice. The decision is `display_for`, pure
but for writing the diff file; the server sends what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from mecha.core.editor.diff_file import write_proposal_diff
from mecha.core.editor.results import Act
from mecha.protocol import methods as m


class Display(msgspec.Struct, frozen=True):
    """What to send a client after a command: a file to open, and the
    message to show — at once when there is no file, or when the client
    would not open it."""

    message: str | None = None
    document: Path | None = None


#: The commands whose answer is a review's outcome, said in its `message`.
_REVIEWS = (Act.ACCEPT_PROPOSAL, Act.REJECT_PROPOSAL, Act.PROPOSE_RETIREMENT)


def diff_message(proposal_id: str, diff: str, path: Path) -> str:
    """The diff as a message, for a client that cannot open the file."""
    return f"mecha: proposal {proposal_id} (the diff is also in {path}):\n{diff.rstrip()}"


def display_for(act: Act, result: Any, root: Path, *, shows_results: bool, opens_documents: bool) -> Display | None:
    """What a client should be shown of `result`, the answer of the command
    that runs `act`; `None` when there is nothing to show, or the client
    shows it itself."""
    if shows_results:
        return None
    if act in _REVIEWS and isinstance(result, m.ReviewedProposalResult):
        return Display(message=f"mecha: {result.message}")
    if act is Act.SHOW_PROPOSAL_DIFF and isinstance(result, m.ShowProposalDiffResult):
        path = write_proposal_diff(root, result.id, result.diff)
        message = diff_message(result.id, result.diff, path)
        return Display(message=message, document=path if opens_documents else None)
    if act is Act.LEARN_NOW:
        return Display(message=learn_message(msgspec.convert(result, m.LearnResult)))
    if act is Act.LIST_PROPOSALS and isinstance(result, m.ProposalListResult):
        return Display(message=list_message(result))
    if act is Act.SHOW_RULES_BLOCK:
        return Display(message=block_message(msgspec.convert(result, m.RulesPromptBlockResult)))
    return None


def learn_message(result: m.LearnResult) -> str:
    """What a learn-now lens or action started, or why nothing."""
    if result.job is None:
        return f"mecha: no learn pass started: {result.reason or 'nothing to learn'}"
    return (
        f"mecha: started a learn pass (job {result.job.id}); "
        "a proposal it files shows on the first line of the learned rules file"
    )


def list_message(result: m.ProposalListResult) -> str:
    """The proposals a pending-count lens lists, one a line, in the
    server's words."""
    if not result.summaries:
        return "mecha: no proposals"
    lines = [f"{s.id}  {s.title}" for s in result.summaries]
    head = f"mecha: {len(lines)} proposal(s); review each from the code actions on its learned file's first line:"
    return "\n".join([head, *lines])


def block_message(result: m.RulesPromptBlockResult) -> str:
    """The rules block a run would get, which the counting lenses show."""
    if not result.block:
        return "mecha: no active rules here: a run gets no rules block"
    return f"mecha: the rules block a run gets:\n{result.block.rstrip()}"
