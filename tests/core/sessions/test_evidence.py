"""What fills a steer's or a denial's context budget: each test is a shape
met in real Claude Code sessions, read through the real reader and miner."""

from __future__ import annotations

from mecha.core.sessions.claude_code import read_claude_code
from mecha.core.sessions.evidence import ContextPieces, evidence_context, gather_context, render_call
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
from mecha.core.sessions.mining import CONTEXT_BUDGET, DENIAL_PREFIX, Trigger, Voices, context_sources
from mecha.core.sessions.survey import survey_session
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from tests.core.ccfixture import REJECTION, Claude, text, use

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"])

NVCC = (
    "nvcc -I/usr/local/cuda-12.6/targets/x86_64-linux/include -L/usr/local/cuda-12.6/targets/x86_64-linux/lib "
    "-lcublas -O3 -arch=sm_89 -o build/matmul_bench src/bench/matmul_bench.cu src/kernels/tiled_gemm.cu"
)
CLAIM = (
    "I looked through the kernels directory and the headers: there is no matrix multiplication function in this "
    "library, so I will write a tiled GEMM kernel of our own and benchmark it against cuBLAS."
)


def interventions(cc: Claude):
    read = read_claude_code(cc.bytes())
    return [p.intervention for p in survey_session(read.messages, read.taint_timeline, voices=VOICES)]


def test_a_refused_bash_call_is_shown_whole_with_the_claim_from_an_earlier_message():
    # Pins: the refused command cut mid-argument (`nvcc -I/usr/local/cuda-12.6/targets/x86_64-l…`)
    # and the claim the person reacted to left out because a later message held only calls.
    cc = Claude().user("Benchmark matrix multiplication on the GPU.")
    cc.assistant(text(CLAIM), use("g1", "Grep", pattern="matmul|gemm", path="src/"))
    cc.result("g1", "No matches found")
    cc.assistant(use("w1", "Write", file_path="src/kernels/tiled_gemm.cu", content="__global__ void gemm() {}\n"))
    cc.result("w1", "File created")
    cc.assistant(use("b1", "Bash", command=NVCC, description="Build the benchmark"))
    cc.result("b1", REJECTION, is_error=True)
    cc.user("There is one: cublasSgemm, and kernels/gemm.cuh wraps it. Use that.")
    cc.assistant(text("You're right, switching to the existing wrapper."))
    [denial] = interventions(cc)
    assert denial.trigger is Trigger.DENIAL
    assert f"Refused call: Bash: {NVCC}" in denial.context
    assert "there is no matrix multiplication function" in denial.context
    assert '"{' not in denial.context and "description" not in denial.context  # no JSON
    assert len(denial.context) <= CONTEXT_BUDGET
    # In the order it happened: the claim, the calls, the refused one last.
    assert denial.context.index("It said:") < denial.context.index("Write src/kernels") < denial.context.index("Refused call")


def test_a_refused_edit_names_its_file_and_what_it_would_have_replaced():
    # Pins: an Edit denial shown as `Edit {"file_path":"/home/…","old_string":"…` cut at 120 characters.
    old = "    retries = 3\n    timeout = 30\n"
    new = "    retries = 10\n    timeout = 300\n"
    cc = Claude().user("The uploads time out; make them more robust.")
    cc.assistant(text("I'll raise the retry count and the timeout."),
                 use("e1", "Edit", file_path="src/upload/client.py", old_string=old, new_string=new))
    cc.result("e1", REJECTION, is_error=True)
    cc.user("No, the timeout is the server's; fix the chunk size instead.")
    cc.assistant(text("Understood."))
    [denial] = interventions(cc)
    assert 'Refused call: Edit src/upload/client.py: "retries = 3 timeout = 30" → "retries = 10 timeout = 300"' in denial.context
    assert "It said: I'll raise the retry count and the timeout." in denial.context


def test_a_steer_beside_a_todo_list_shows_what_was_in_progress_not_a_json_blob():
    # Pins: a steer whose whole context was TodoWrite's JSON input.
    todos = [
        {"content": "Add the --json flag", "status": "completed", "activeForm": "Adding the --json flag"},
        {"content": "Rewrite the parser with regexes", "status": "in_progress", "activeForm": "Rewriting the parser"},
        {"content": "Update the docs", "status": "pending", "activeForm": "Updating the docs"},
    ]
    cc = Claude().user("Add a --json flag to the CLI.")
    cc.assistant(text("The flag is in; the parser is fragile, so I'll rewrite it with regexes."), use("t1", "TodoWrite", todos=todos))
    cc.user([{"type": "tool_result", "tool_use_id": "t1", "content": "Todos have been modified successfully."},
             {"type": "text", "text": "Leave the parser alone, only the flag was asked for."}])
    cc.assistant(text("Leaving the parser as it is."))
    [steer] = interventions(cc)
    assert steer.trigger is Trigger.STEER
    assert 'Its last call: TodoWrite: doing "Rewrite the parser with regexes", next "Update the docs", 1 done' in steer.context
    assert "activeForm" not in steer.context and "status" not in steer.context
    assert "the parser is fragile" in steer.context


def test_a_long_claim_keeps_its_beginning_and_its_end_and_leaves_room_for_the_call():
    # Pins: a long explanation cut at its head only, losing where it ended, and crowding out the call.
    long_claim = "There is no matrix multiplication function here. " + "Details of the search. " * 60 + "So I will write one."
    pieces = ContextPieces(
        claim=long_claim, claim_at=1,
        focus=Block.tool_use("b1", "Bash", {"command": NVCC}), focus_at=3,
        calls=[(1, Block.tool_use("g1", "Grep", {"pattern": "matmul", "path": "src/"}))],
    )
    context = evidence_context(pieces, "denial", CONTEXT_BUDGET)
    assert len(context) <= CONTEXT_BUDGET
    assert "There is no matrix multiplication function here." in context
    assert "So I will write one." in context
    assert f"Refused call: Bash: {NVCC}" in context
    assert 'It called: Grep "matmul" in src/' in context


def test_a_call_longer_than_the_whole_budget_is_cut_and_still_within_it():
    # Pins: a pasted 5 kB heredoc blowing the budget the reflector's prompt is sized for.
    huge = "cat > notes.md <<'EOF'\n" + "line\n" * 2000 + "EOF"
    pieces = ContextPieces(claim="Writing the notes.", claim_at=1, focus=Block.tool_use("b", "Bash", {"command": huge}), focus_at=1)
    context = evidence_context(pieces, "denial", CONTEXT_BUDGET)
    assert len(context) <= CONTEXT_BUDGET and context.startswith("Refused call: Bash: cat > notes.md")


def test_of_a_parallel_batch_the_refused_call_is_the_one_the_denial_answers():
    # Pins: a denial's context naming the batch's last call when the person refused the first.
    messages = [
        Message.user("clean up"),
        Message.assistant([Block.tool_use("a", "Bash", {"command": "rm -rf build/"}), Block.tool_use("b", "Read", {"file_path": "Makefile"})]),
        Message.tool_results([Block.tool_result("a", f"{DENIAL_PREFIX} keep build/, it is cached", True), Block.tool_result("b", "all:")]),
    ]
    pieces = gather_context(messages, 2, denial_prefix=DENIAL_PREFIX, denial=True, reason="keep build/, it is cached")
    assert pieces.focus is not None and pieces.focus.id == "a"
    assert "Refused call: Bash: rm -rf build/" in evidence_context(pieces, "denial", CONTEXT_BUDGET)


def test_calls_render_as_a_person_reads_them():
    assert render_call(Block.tool_use("1", "Bash", {"command": "make  test\n", "timeout": 60000})) == "Bash: make test"
    assert render_call(Block.tool_use("1", "shell", {"command": ["bash", "-lc", "git push origin main"]})) == "shell: git push origin main"
    assert render_call(Block.tool_use("1", "shell", {"command": ["git", "commit", "-m", "a b"]})) == "shell: git commit -m 'a b'"
    assert render_call(Block.tool_use("1", "Read", {"file_path": "src/a.py", "offset": 10})) == "Read src/a.py"
    assert render_call(Block.tool_use("1", "WebFetch", {"url": "https://example.org/x", "prompt": "summarise"})) == "WebFetch: https://example.org/x"
    assert render_call(Block.tool_use("1", "mcp__db__query", {"sql": "select 1", "limit": 5})) == "mcp__db__query sql=select 1 limit=5"
    assert render_call(Block.tool_use("1", "Bash", {"command": "x" * 50}), 20) == "Bash: " + "x" * 13 + "…"


def test_context_sources_name_every_message_the_context_quotes():
    # Pins: provenance judged on the last message while the claim quoted came from an earlier one.
    messages = [
        Message.user("task"),
        Message.assistant([Block.text_block("Here is the plan."), Block.tool_use("r", "Read", {"file_path": "a"})]),
        Message.tool_results([Block.tool_result("r", "a")]),
        Message.assistant([Block.tool_use("b", "Bash", {"command": "make"})]),
        Message.tool_results([Block.tool_result("b", "ok"), Block.text_block("not make, use ninja")]),
    ]
    from mecha.core.sessions.mining import extract_interventions

    [steer] = extract_interventions(messages)
    assert context_sources(messages, steer) == [1, 3]
    # The claim at 1 was written under untrusted taint; the call at 3 after a reset: withheld.
    timeline = [TaintCheckpoint(0, Taint(untrusted=True)), TaintCheckpoint(3, Taint(), reset=True)]
    [plan] = survey_session(messages, timeline)
    assert plan.intervention.context.startswith("(withheld")


def test_a_steer_answering_a_question_shows_the_question_asked():
    # Pins: `AskUserQuestion questions=[3 item(s)]` — the answer shown without what it answered.
    ask = Block.tool_use("q", "AskUserQuestion", {"questions": [
        {"question": "Which IP does the server have?", "header": "IP", "options": [{"label": "a"}]},
        {"question": "Is the router on?", "header": "Router", "options": []},
    ]})
    assert render_call(ask) == 'AskUserQuestion: "Which IP does the server have?" "Is the router on?"'


def test_a_refused_write_names_its_file_and_quotes_only_the_head_of_what_it_would_write():
    # Pins: a refused 166-line file quoted to the end of the budget, leaving no room for the claim.
    content = "#!/bin/bash\n# Enhanced pre-commit hook\n" + "echo check\n" * 300
    pieces = ContextPieces(
        claim="I'll replace the pre-commit hook with one that also scans for personal data.", claim_at=1,
        focus=Block.tool_use("w", "Write", {"file_path": ".git/hooks/pre-commit", "content": content}), focus_at=1,
    )
    context = evidence_context(pieces, "denial", CONTEXT_BUDGET)
    assert 'Refused call: Write .git/hooks/pre-commit (302 lines): "#!/bin/bash # Enhanced pre-commit hook' in context
    assert "It said: I'll replace the pre-commit hook" in context


def test_calls_that_do_not_fit_are_left_out_and_counted_never_cut_to_a_stub():
    calls = [(1, Block.tool_use(f"b{n}", "Bash", {"command": f"step {n} " + "x" * 120})) for n in range(8)]
    pieces = ContextPieces(claim="Running the steps.", claim_at=1, calls=calls,
                           focus=Block.tool_use("f", "Bash", {"command": "make install"}), focus_at=2)
    context = evidence_context(pieces, "denial", CONTEXT_BUDGET)
    assert len(context) <= CONTEXT_BUDGET and "earlier call(s))" in context
    for line in context.splitlines():
        if line.startswith("It called: "):
            assert line.endswith("x"), f"a call cut short: {line!r}"


def test_texts_are_cut_at_a_word_and_a_short_cut_is_not_counted():
    # Pins: "It said: I see th [… 183 characters cut …] ally:" — a cut
    # mid-word, with a count nobody needed in the middle of a sentence.
    from mecha.core.sessions.evidence import COUNT_CUT_FROM, cut_at_word, head_and_tail

    claim = ("It said: I see the problem now. The function returns early when the list is empty, and the caller "
             "then reads a value that is not there at all, which is exactly why it failed so unexpectedly:")
    cut = head_and_tail(claim, 120)
    assert len(cut) <= 120 and " … " in cut and "characters cut" not in cut
    head, tail = cut.split(" … ")
    assert claim.startswith(head) and claim.endswith(tail)
    assert claim[len(head)] == " " and claim[-len(tail) - 1] == " ", "both ends are whole words"
    paste = "log line\n" * 400
    assert "characters cut" in head_and_tail(paste, 300) and len(paste) - 300 >= COUNT_CUT_FROM
    assert cut_at_word("Run the test suite before saying done.", 20) == "Run the test suite…"
    assert cut_at_word("x" * 50, 20) == "x" * 19 + "…", "a run with no space is cut where it must be"
