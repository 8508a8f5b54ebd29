# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 8: coding agents and CLIs, Haystack and Strands agents, MCP clients, heartbeat agents and computer-use agents, written blind.

Each situation is what happened in one public issue thread or pull request the corpus and
batches 1 to 7 had not cited (a coding agent that keeps announcing the summary it never
writes, an agent re-reading one window of a file, a coding agent re-applying an edit that
already landed, an MCP server whose ``nextCursor`` never advances, a Strands agent's
structured output failing validation the same way, a heartbeat turn re-running its
successful check, a desktop agent whose clicks never reach the app; and the healthy runs
that look like them: a Haystack agent's parallel research that ends in ``finish``, a
test-fix loop whose failures shrink, an edit recovered by re-reading the file, cursor
pagination that ends, validate-and-retry that converges, a watch that ends when the reply
arrives, and a "Load more" button clicked until the list is complete), labelled from the
situation itself: ``loop`` when the run spends its steps learning nothing new and ends
without getting further, ``healthy`` when the repetition is the work.
Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch8"
WRITTEN = "2026-12-03"
AUTHOR = "written blind"

#: The renderings of this batch: the corpus's three conventions and every further shape,
#: including ``pydantic-ai``, first used here.
CONVENTIONS = (
    "genai",
    "openinference",
    "openllmetry",
    "genai-events",
    "openinference-langgraph",
    "openai-content-events",
    "vercel-ai-sdk",
    "pydantic-ai",
)

SITUATIONS: dict[str, Situation] = {}
situation = registrar(SITUATIONS)


# ======================================================================================
# A summary announced but never written; parallel research that ends
# ======================================================================================


def _docs(k: Kit, topic: str, angles: tuple[str, ...]) -> list[dict]:
    return [
        {"id": f"doc-{k.hex(6)}", "title": f"{topic}: {angle}", "score": round(0.9 - i * 0.07 + k.n(0, 5) / 100, 2), "content": f"{angle.capitalize()} of {topic}: {k.word(5)} {k.word(7)} {k.n(2, 98)}%."}
        for i, angle in enumerate(angles)
    ]


@situation(
    "coding-agent-restates-it-will-write-summary",
    LOOP,
    "At the end of a coding task the agent says it is in a loop and will now write the summary, and then says so again, turn after turn, without writing it",
    (gh("earendil-works/pi", 9104),),
    "The work itself is done early (an edit and a passing test run). From then on each model turn is text only: "
    "a sentence saying it is stuck and will just write the summary, in slightly different words, sometimes after "
    "re-reading the file it already changed (same content). The summary never comes, no tool does anything new, "
    "and the user aborts the run.",
)
def coding_agent_restates_it_will_write_summary(k: Kit) -> Run:
    shell, key = k.shell_tool()
    read, rkey = k.read_tool()
    path = f"{k.pick(('src', 'app', 'lib', 'backend'))}/{k.pick(('sorting', 'ranking', 'ordering'))}.py"
    sentences = (
        "OK I'm in a dead loop. Let me just write the summary.",
        "OK, I'm in a dead loop. Let me just write the summary.",
        "I'm going in circles. Let me just write the summary now.",
        "OK I'm in a dead loop. Let me just write the summary",
        "I keep repeating myself. Writing the summary.",
    )
    content = f"def {k.word(6)}(items):\n    return sorted(items, key=lambda x: x.{k.word(4)})\n"
    turns = [
        *k.prelude(0, 2),
        Turn("Applying the fix.", [ToolUse("edit", {"path": path, "old_string": "return items", "new_string": content.splitlines()[1].strip()}, f"Edited {path}")]),
        Turn(None, [ToolUse(shell, {key: "pytest -q"}, f"{k.n(20, 90)} passed in {k.n(2, 9)}.{k.n(10, 99)}s")]),
        Turn("The fix works and the tests pass. Now the summary."),
    ]
    for _ in range(k.n(7, 13)):
        if k.maybe(0.2):
            turns.append(Turn(k.pick(sentences), [ToolUse(read, {rkey: path}, content)]))
        else:
            turns.append(Turn(k.pick(sentences)))
    return Run(
        f"Fix the sort order bug in {path} and summarise what you changed.",
        k.pick(("pi", "coder", "main")),
        k.pick(("gpt-5.6-luna", "gpt-5-mini", "glm-4.6")),
        turns,
        None,
        "AbortError: the request was aborted by the user",
    )


@situation(
    "haystack-parallel-searches-then-finish",
    HEALTHY,
    "A Haystack agent fans out parallel searches on one topic, searches again for two gaps it found, and then calls finish alone, which ends the run",
    (pr("deepset-ai/haystack", 11393),),
    "The same search tool runs five or six times with queries that share most of their words, several in one "
    "batch, and some documents come back twice, which looks like an agent searching in circles; but every query "
    "asks about a different aspect, each batch brings documents not seen before, the second round targets what "
    "the first lacked, and the single finish call ends the run with an answer built from all of them.",
    ("agent-rereads-same-file-window", "mcp-tools-list-cursor-never-advances"),
)
def haystack_parallel_searches_then_finish(k: Kit) -> Run:
    topic = k.pick(("heat pump subsidies in Austria", "the EU AI Act's transparency duties", "solid-state battery pilot lines"))
    search = k.pick(("search", "document_search", "web_search"))
    first = [("overview", ("overview", "history")), ("costs", ("costs", "funding")), ("timeline", ("timeline", "milestones"))]
    second = [("criticism", ("criticism",)), ("regional differences", ("regional differences", "overview"))]
    seen: dict[str, dict] = {}
    turns: list[Turn] = []
    for round_ in (first, second):
        calls = []
        for aspect, angles in round_:
            docs = _docs(k, topic, angles)
            for d in docs:
                seen.setdefault(d["title"], d)
            reused = [seen[f"{topic}: {a}"] for a in angles if f"{topic}: {a}" in seen]
            calls.append(ToolUse(search, {"query": f"{topic} {aspect}"}, _j({"documents": reused}), duration_ms=k.n(300, 1200)))
        say = "Searching the main aspects in parallel." if round_ is first else "Two gaps remain: criticism and regional differences."
        turns.append(Turn(say, calls))
    answer = " ".join(d["content"] for d in list(seen.values())[:5])
    turns.append(Turn(None, [ToolUse("finish", {"answer": answer}, answer, duration_ms=2)]))
    return Run(
        f"Give me a short, sourced summary of {topic}, including costs, timeline and criticism.",
        k.pick(("Agent", "research_agent")),
        k.pick(("gpt-4o", "claude-3-5-sonnet-20241022", "gemini-1.5-pro")),
        turns,
        answer,
    )


# ======================================================================================
# Coding agents: one file window, one test command, one edit
# ======================================================================================


@situation(
    "agent-rereads-same-file-window",
    LOOP,
    "Asked where a function is defined, a coding agent reads the same thirty-line window of a file again and again; the window never contains the definition",
    (gh("jwbron/egg", 3595),),
    "The read tool is called with the same path, offset and limit every turn and returns the same thirty lines, "
    "which only call the function. The agent's thoughts vary (maybe it is just above, let me look again) but it "
    "never moves the window, searches, or opens another file, so the answer is never found and nothing new is "
    "seen after the first read; the run ends when its budget is cut.",
)
def agent_rereads_same_file_window(k: Kit) -> Run:
    read = k.pick(("read_file", "Read", "view_file"))
    fn = k.pick(("compute_window", "merge_spans", "resolve_alias"))
    path = k.pick(("src/pipeline/window.py", "lib/spans/merge.py", "app/config/aliases.py"))
    offset = k.n(400, 900)
    body = "\n".join(f"{offset + i:>5}\t    {k.word(5)} = {fn}({k.word(4)}, {k.word(3)})" if i % 7 == 3 else f"{offset + i:>5}\t    {k.word(6)}.{k.word(4)}({k.word(5)})" for i in range(30))
    thoughts = (
        f"The definition of {fn} must be near here. Let me read this section again.",
        f"I see calls to {fn} but not its definition; it is probably just above. Reading again.",
        "Let me look at this part of the file once more.",
        f"I need to find where {fn} is defined.",
        None,
    )
    args = {"path": path, "offset": offset, "limit": 30}
    turns = [Turn(f"Looking for the definition of {fn}.", [ToolUse(read, dict(args), body)])]
    for _ in range(k.n(8, 14)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(read, dict(args), body, duration_ms=k.n(5, 40))]))
    return Run(
        f"Find where {fn} is defined and report the line number.",
        k.pick(("egg-agent", "coder", "assistant")),
        k.pick(("gpt-5.4-mini", "qwen3-coder-plus", "deepseek-chat")),
        turns,
        None,
        k.pick(("agent-call budget exhausted (613 calls)", "AbortError: the request was aborted by the user", None)),
    )


@situation(
    "test-fix-loop-failures-shrink",
    HEALTHY,
    "A coding agent runs the same test command after each fix; the failure list shrinks each time until the suite passes",
    (gh("jikig-ai/soleur", 216),),
    "The identical test command runs four or five times and most of its output (the header, the passing count's "
    "shape, the same test file) repeats, like an agent re-running one diagnostic; but an edit comes between every "
    "two runs, each run reports fewer failures and names different ones, and the last run passes, after which "
    "the agent stops and reports.",
    ("agent-rereads-same-file-window", "edit-reapplied-after-it-landed"),
)
def test_fix_loop_failures_shrink(k: Kit) -> Run:
    shell, key = k.shell_tool()
    files = k.paths(4)
    names = [f"test_{k.word(5)}_{k.word(4)}" for _ in range(4)]
    passed = k.n(40, 120)
    cmd = k.pick(("pytest -q", "npm test --silent", "pytest -q -x --no-header"))
    remaining = list(range(4))
    turns = [*k.prelude(0, 2)]
    fixes = k.shuffle(list(range(4)))
    while remaining:
        lines = [f"FAILED tests/{files[i].split('/')[-1].split('.')[0]}_test::{names[i]} - AssertionError: expected {k.n(1, 9)} got {k.n(10, 19)}" for i in remaining]
        out = "\n".join(lines) + f"\n{len(remaining)} failed, {passed + 4 - len(remaining)} passed in {k.n(3, 12)}.{k.n(10, 99)}s"
        turns.append(Turn(k.say(("Running the tests.", "Re-running the suite.", "Checking the tests again.")), [ToolUse(shell, {key: cmd}, out, duration_ms=k.n(3000, 12000))]))
        batch = fixes[: k.n(1, 2)] if len(fixes) > 1 else fixes[:]
        for i in batch:
            turns.append(Turn(f"Fixing {names[i]}: the off-by-one is in {files[i]}.", [ToolUse("edit_file", {"path": files[i], "old_string": "range(1, n)", "new_string": "range(0, n)"}, f"Edited {files[i]}: 1 replacement")]))
            fixes.remove(i)
            remaining.remove(i)
    turns.append(Turn(None, [ToolUse(shell, {key: cmd}, f"{passed + 4} passed in {k.n(3, 12)}.{k.n(10, 99)}s", duration_ms=k.n(3000, 12000))]))
    return Run(
        "Make the test suite pass; fix the code, not the tests.",
        k.pick(("coder", "test-fixer", "main")),
        k.model(),
        turns,
        f"All {passed + 4} tests pass; four off-by-one errors fixed in " + ", ".join(files) + ".",
    )


@situation(
    "edit-reapplied-after-it-landed",
    LOOP,
    "A coding agent's edit succeeds, then it sends the identical edit again and again, each time told the text to replace is not found, while apologising for repeating itself",
    (gh("agentscope-ai/QwenPaw", 6116),),
    "The first edit adds the rule to AGENTS.md and succeeds. The agent then issues the same edit with the same "
    "arguments, and since the old text is gone the tool answers that it was not found; the agent acknowledges the "
    "repetition in different words and sends the identical edit once more. The file never changes after the first "
    "edit, every answer is the same failure, and the framework stops the run after several repetitions.",
)
def edit_reapplied_after_it_landed(k: Kit) -> Run:
    target = k.pick(("AGENTS.md", "CLAUDE.md", ".rules/style.md"))
    rule = k.pick(
        (
            "- Never call the same tool twice with identical arguments.",
            "- Always run the linter before committing.",
            "- Reply in the user's language.",
        )
    )
    anchor = "## Rules"
    edit = k.pick(("edit_file", "str_replace", "replace_in_file"))
    args = {"path": target, "old_text": anchor, "new_text": f"{anchor}\n{rule}"}
    says = (
        "I'm sorry, I repeated the same edit. The rule is already in place.",
        "You're right, I keep sending the same change. I won't do it again.",
        "The edit has already been applied; no further change is needed.",
        "Apologies for the duplicate call. Confirming the rule is present.",
        None,
    )
    turns = [
        Turn(None, [ToolUse(k.pick(("read_file", "view")), {"path": target}, f"# Agent notes\n\n{anchor}\n- Keep answers short.\n")]),
        Turn(f"Adding the rule under {anchor}.", [ToolUse(edit, dict(args), f"Successfully replaced 1 occurrence in {target}")]),
    ]
    for _ in range(k.n(5, 9)):
        turns.append(
            Turn(
                k.pick(says),
                [ToolUse(edit, dict(args), error=f"The text to replace was not found in {target}.", error_type="ToolError", duration_ms=k.n(3, 30))],
            )
        )
    return Run(
        f"Add this rule to {target}: {rule[2:]}",
        k.pick(("QwenPaw", "assistant", "coder")),
        k.pick(("qwen3.6-plus", "qwen3-coder-plus", "qwen3-max")),
        turns,
        None,
        k.pick(("Doom loop: agent stuck after 6 consecutive repetitions", None)),
    )


@situation(
    "edit-not-found-then-reread-succeeds",
    HEALTHY,
    "A coding agent's edit fails twice with 'old_string not found', it re-reads the file, copies the exact text, and the edit and a second one apply",
    (gh("esengine/DeepSeek-Reasonix", 5503),),
    "The same edit tool fails twice in a row with the same kind of message, like an agent re-sending a stale edit; "
    "but the two attempts differ (indentation, then the line-numbered copy), the agent then reads the file, which "
    "shows it the real text, the third edit applies, a different edit follows, and the check run passes.",
    ("edit-reapplied-after-it-landed",),
)
def edit_not_found_then_reread_succeeds(k: Kit) -> Run:
    path = f"{k.pick(('src', 'app', 'lib', 'backend'))}/{k.pick(('config', 'users', 'footer', 'io_utils'))}.py"
    edit = k.pick(("edit_file", "str_replace", "replace_in_file"))
    fn = k.pick(("parse_config", "load_user", "render_footer"))
    real = f"def {fn}(raw):\n\tif not raw:\n\t\treturn None"
    wrong1 = f"def {fn}(raw):\n    if not raw:\n        return None"
    wrong2 = f"{k.n(10, 90)}\tdef {fn}(raw):\n{k.n(10, 90)}\t\tif not raw:"
    new = f"def {fn}(raw):\n\tif not raw:\n\t\traise ValueError('empty input')"
    shell, key = k.shell_tool()
    turns = [
        Turn(f"Changing {fn} to raise on empty input.", [ToolUse(edit, {"path": path, "old_string": wrong1, "new_string": new}, error=f"old_string not found in {path}", error_type="ToolError")]),
        Turn(None, [ToolUse(edit, {"path": path, "old_string": wrong2, "new_string": new}, error=f"old_string not found in {path}", error_type="ToolError")]),
        Turn("Both attempts missed; reading the file to copy the exact text.", [ToolUse(k.pick(("read_file", "view")), {"path": path}, f"import os\n\n{real}\n\treturn raw.strip()\n")]),
        Turn("The file uses tabs.", [ToolUse(edit, {"path": path, "old_string": real, "new_string": new}, f"Edited {path}: 1 replacement")]),
        Turn(None, [ToolUse(edit, {"path": path, "old_string": "import os", "new_string": "import os\nimport logging"}, f"Edited {path}: 1 replacement")]),
        Turn(None, [ToolUse(shell, {key: f"python -m pytest -q -k {fn}"}, f"{k.n(3, 12)} passed in 0.{k.n(10, 99)}s")]),
    ]
    return Run(
        f"Make {fn} raise ValueError on empty input instead of returning None.",
        k.pick(("reasonix", "coder", "assistant")),
        k.pick(("deepseek-chat", "deepseek-reasoner")),
        turns,
        f"{fn} in {path} now raises ValueError('empty input'); the file uses tabs, so the first two edits missed. Tests pass.",
    )


# ======================================================================================
# MCP: tools/list pagination
# ======================================================================================

_MCP_TOOLS = ("get_architecture", "get_code_snippet", "get_graph_schema", "index_repository", "query_graph", "search_code", "search_graph", "trace_path")


@situation(
    "mcp-tools-list-cursor-never-advances",
    LOOP,
    "An agent follows an MCP server's nextCursor to list its tools, but every page is the same eight tools and the same cursor, and it keeps asking for the next page",
    (gh("DeusData/codebase-memory-mcp", 1247),),
    "The server returns all eight tools on the first page but also a nextCursor, and asking with that cursor returns "
    "the same eight tools and the same cursor again. The agent follows the cursor each time, its running count "
    "grows (8, 16, 24, ...) but every page repeats the first one exactly, so nothing new is discovered after the "
    "first call, and the run ends when the context runs out without the task started.",
)
def mcp_tools_list_cursor_never_advances(k: Kit) -> Run:
    cursor = k.pick(("eyJvZmZzZXQiOjh9", "page-2", "c:8", k.hex(16)))
    server = k.pick(("codebase-memory", "code-graph", "cbm"))
    tool = k.pick(("mcp_list_tools", "list_tools", "tools_list"))
    page = _j({"tools": [{"name": t} for t in _MCP_TOOLS], "nextCursor": cursor})
    turns = [Turn(f"Discovering the tools of the {server} server.", [ToolUse(tool, {"server": server}, page, duration_ms=k.n(20, 120))])]
    collected = 8
    for _ in range(k.n(6, 11)):
        collected += 8
        turns.append(
            Turn(
                k.say((f"There is a next page; fetching it ({collected - 8} tools so far).", "Following nextCursor.", f"Collected {collected - 8} tools; more pages remain."), 0.3),
                [ToolUse(tool, {"server": server, "cursor": cursor}, page, duration_ms=k.n(20, 120))],
            )
        )
    return Run(
        f"Using the {server} MCP server, explain how requests flow through this repository.",
        k.pick(("claude-code", "assistant", "main")),
        k.pick(("claude-sonnet-4-20250514", "claude-opus-4-1-20250805")),
        turns,
        None,
        k.pick(("prompt is too long: 204817 tokens > 200000 maximum", "AbortError: the request was aborted by the user")),
    )


@situation(
    "mcp-tools-list-follows-cursor-to-end",
    HEALTHY,
    "An agent lists a large MCP server's tools page by page, following nextCursor until a page has none, and then uses one of the tools it found on a later page",
    (pr("knowsuchagency/mcp2cli", 65),),
    "The same listing call with a cursor runs four to six times and every page has the same shape, like a client "
    "stuck on a cursor that does not advance; but each cursor is new, each page holds tools not listed before, "
    "the last page has no nextCursor and the listing stops there, and the tool the task needed was on that last "
    "page and is then called.",
    ("mcp-tools-list-cursor-never-advances",),
)
def mcp_tools_list_follows_cursor_to_end(k: Kit) -> Run:
    server = k.pick(("github", "jira", "workspace-tools"))
    tool = k.pick(("mcp_list_tools", "list_tools", "tools_list"))
    verbs = ("create", "get", "list", "update", "delete", "search", "close", "assign", "merge", "comment")
    nouns = ("issue", "pull_request", "branch", "release", "label", "milestone", "workflow", "commit", "tag", "review", "project", "secret")
    names = [f"{v}_{n}" for n in nouns for v in verbs]
    names = k.sample(names, k.n(70, 110))
    size = 20
    pages = [names[i : i + size] for i in range(0, len(names), size)]
    target = pages[-1][0]
    turns: list[Turn] = []
    cursor: str | None = None
    for i, chunk in enumerate(pages):
        nxt = k.hex(12) if i < len(pages) - 1 else None
        body: dict = {"tools": [{"name": t} for t in chunk]}
        if nxt:
            body["nextCursor"] = nxt
        args = {"server": server} if cursor is None else {"server": server, "cursor": cursor}
        turns.append(Turn(k.say(("Listing the server's tools.", "Next page.", f"{i * size + len(chunk)} tools so far."), 0.5), [ToolUse(tool, args, _j(body), duration_ms=k.n(20, 120))]))
        cursor = nxt
    turns.append(Turn(f"Found {target} on the last page.", [ToolUse(f"{server}__{target}", {"repo": "acme/web", "number": k.n(10, 900)}, _j({"ok": True, "id": k.n(1000, 9999)}))]))
    return Run(
        f"With the {server} MCP server, {target.replace('_', ' ')} for acme/web #{k.n(10, 900)}.",
        k.pick(("assistant", "mcp-agent", "main")),
        k.model(),
        turns,
        f"Listed {len(names)} tools over {len(pages)} pages and ran {target}.",
    )


# ======================================================================================
# Structured output that fails validation
# ======================================================================================


@situation(
    "structured-output-same-missing-field",
    LOOP,
    "A Strands agent's structured output fails validation on a missing required field, and the model sends the same object without that field cycle after cycle",
    (gh("strands-agents/harness-sdk", 4482),),
    "The structured output tool rejects the object because a required field is missing and says so. The model "
    "answers each rejection with the same object again (the other fields reordered or reformatted, the missing "
    "field still absent), receives the same validation error, and nothing bounds the retries, so the event loop "
    "recurses until Python's recursion limit ends it.",
)
def structured_output_same_missing_field(k: Kit) -> Run:
    schema = k.pick(("InvoiceSummary", "TicketTriage", "MeetingNotes"))
    missing = {"InvoiceSummary": "due_date", "TicketTriage": "priority", "MeetingNotes": "action_items"}[schema]
    base = {
        "InvoiceSummary": {"vendor": k.pick(("Northwind Ltd", "Acme GmbH")), "total": round(k.n(1000, 90000) / 100, 2), "currency": "EUR"},
        "TicketTriage": {"title": k.pick(("Login fails on Safari", "Export times out")), "component": k.pick(("auth", "exports"))},
        "MeetingNotes": {"title": "Weekly sync", "attendees": k.sample(("Ana", "Bo", "Chen", "Dee"), 3), "summary": "Reviewed the release plan."},
    }[schema]
    error = f"Validation failed for {schema}. Please fix the following errors:\n1 validation error for {schema}\n{missing}\n  Field required [type=missing, input_value={{...}}, input_type=dict]"
    turns = [Turn(None, [ToolUse("read_document", {"id": k.volatile_id()}, f"{schema} source text: " + "; ".join(f"{a}={b}" for a, b in base.items()) + f"; {missing} is on page 2")])]
    for _ in range(k.n(6, 11)):
        obj = dict(base)
        if k.maybe(0.4) and "total" in obj:
            obj["total"] = f"{obj['total']:.2f}" if k.maybe() else obj["total"]
        keys = k.shuffle(list(obj))
        turns.append(
            Turn(
                k.say(("Returning the structured result.", "Correcting the output.", "Here is the fixed object."), 0.5),
                [ToolUse(schema, {key: obj[key] for key in keys}, error=error, error_type="ValidationError", duration_ms=k.n(1, 8))],
            )
        )
    return Run(
        f"Extract a {schema} from the attached document.",
        k.pick(("Strands Agents", "extractor")),
        k.pick(("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "amazon.nova-pro-v1:0", "us.meta.llama3-3-70b-instruct-v1:0")),
        turns,
        None,
        "RecursionError: maximum recursion depth exceeded",
    )


@situation(
    "validate-and-retry-until-tool-success",
    HEALTHY,
    "An extraction agent's submit tool rejects its object twice for different reasons; each retry fixes the field named, and the third submission is accepted",
    (pr("sagents-ai/sagents", 128),),
    "Three calls of the same submit tool with nearly the same object, two of them errors, like a model resending "
    "an invalid object; but each error names a different problem (a missing field, then a wrong type), each "
    "retry changes exactly what the error named, and the third call succeeds and ends the run.",
    ("structured-output-same-missing-field",),
)
def validate_and_retry_until_tool_success(k: Kit) -> Run:
    submit = k.pick(("submit_contact", "submit_result", "save_extraction"))
    name = k.pick(("Dana Whitfield", "Jonas Berg", "Mei Tanaka"))
    email = f"{name.split()[0].lower()}@example.com"
    age = k.n(24, 61)
    first = {"name": name, "email": email}
    second = {"name": name, "email": email, "age": f"{age} years"}
    third = {"name": name, "email": email, "age": age}
    turns = [
        Turn(None, [ToolUse(submit, first, error="invalid: age is required", error_type="ToolError", duration_ms=2)]),
        Turn(f"The text says {name} is {age}; adding it.", [ToolUse(submit, second, error="invalid: age must be an integer", error_type="ToolError", duration_ms=2)]),
        Turn(None, [ToolUse(submit, third, _j({"status": "accepted", "id": k.volatile_id()}), duration_ms=2)]),
    ]
    return Run(
        f"Extract the contact from: '{name} ({age}) can be reached at {email}.'",
        k.pick(("extractor", "Sagents.Extract")),
        k.model(),
        turns,
        _j(third),
    )


# ======================================================================================
# Heartbeat agents
# ======================================================================================


@situation(
    "heartbeat-check-rerun-after-ok",
    LOOP,
    "A heartbeat turn runs its check script, gets HEARTBEAT_OK, and instead of ending runs the same check again every few seconds until the run times out",
    (gh("openclaw/openclaw", 137904),),
    "The heartbeat prompt says to run one deterministic check and reply HEARTBEAT_OK if nothing needs attention. "
    "The check succeeds with nothing actionable; the model then calls the same check again, and again, each "
    "answer the same apart from its timestamp, while its text says everything is fine. Nothing changes between "
    "calls and the turn never ends on its own; the scheduler's timeout kills it.",
)
def heartbeat_check_rerun_after_ok(k: Kit) -> Run:
    shell, key = k.pick((("exec", "command"), ("bash", "command"), ("run_shell_command", "command")))
    script = k.pick(("python3 scripts/heartbeat_check.py", "python3 scripts/heartbeat_check.py --quiet", "./bin/healthcheck"))
    t = k.start_time()
    says = ("HEARTBEAT_OK", "All checks passed; nothing needs attention.", "Nothing actionable. Verifying once more.", "Everything is fine. Running the check again to confirm.", None)
    turns: list[Turn] = []
    for i in range(k.n(8, 14)):
        t += k.n(8, 11)
        out = f"[{Kit.iso(t)}] HEARTBEAT_OK: 0 actionable items (inbox 0, calendar 0, failed jobs 0)"
        turns.append(Turn(None if i == 0 else k.pick(says), [ToolUse(shell, {key: script}, out, duration_ms=k.n(600, 1500))], gap_ms=k.n(6000, 9000) if i else 0))
    return Run(
        "Read HEARTBEAT.md and follow it strictly. If nothing needs attention, reply HEARTBEAT_OK.",
        k.pick(("heartbeat-main", "main")),
        k.pick(("deepseek-chat", "glm-4.7", "gpt-5.4-mini")),
        turns,
        None,
        "cron: job execution timed out",
    )


@situation(
    "heartbeat-watch-until-reply-arrives",
    HEALTHY,
    "A heartbeat agent asked to watch for a reply checks the inbox every few minutes, finds nothing several times, and when the reply arrives tells the user and stops",
    (pr("letta-ai/lettabot", 43),),
    "The same inbox query returns 'no new messages' four to seven times, with a wait between, like a heartbeat "
    "re-running a check that has nothing to say; but time moves on between checks (the 'since' clock advances), "
    "the agent is waiting for a specific event the user asked for, the event arrives, and the agent acts on it "
    "once and ends.",
    ("heartbeat-check-rerun-after-ok", "coding-agent-restates-it-will-write-summary"),
)
def heartbeat_watch_until_reply_arrives(k: Kit) -> Run:
    who = k.pick(("Dana", "the landlord", "Jonas from legal"))
    subject = k.pick(("Re: contract draft v3", "Re: lease renewal", "Re: NDA countersigned"))
    inbox = k.pick(("gmail_search", "check_email", "inbox_query"))
    sleep = k.pick(("sleep", "wait"))
    t = k.start_time()
    turns: list[Turn] = []
    for i in range(k.n(4, 7)):
        if i:
            turns.append(Turn(None, [ToolUse(sleep, {"seconds": 300}, "waited 300s", duration_ms=300000)]))
            t += 300 + k.n(0, 20)
        turns.append(Turn(k.say(("Nothing yet; I'll check again in five minutes.", "Still waiting for the reply."), 0.5) if i else None, [ToolUse(inbox, {"query": f"from:{who} subject:({subject})", "newer_than": "1d"}, _j({"checked_at": Kit.iso(t), "messages": []}))]))
    turns.append(Turn(None, [ToolUse(sleep, {"seconds": 300}, "waited 300s", duration_ms=300000)]))
    t += 300
    msg_id = k.hex(16)
    turns.append(Turn(None, [ToolUse(inbox, {"query": f"from:{who} subject:({subject})", "newer_than": "1d"}, _j({"checked_at": Kit.iso(t), "messages": [{"id": msg_id, "subject": subject, "snippet": "Signed and attached, see you Monday."}]}))]))
    turns.append(Turn("The reply is in; notifying the user.", [ToolUse("send_message", {"channel": k.pick(("telegram", "discord")), "text": f"{who} replied: 'Signed and attached, see you Monday.'"}, _j({"ok": True, "message_id": k.n(1000, 99999)}))]))
    return Run(
        f"Let me know as soon as {who} replies to '{subject[4:]}'.",
        k.pick(("lettabot", "heartbeat-agent")),
        k.pick(("letta/letta-free", "gpt-4o-mini", "claude-sonnet-4-20250514")),
        turns,
        f"{who} replied; I've sent you the message on chat.",
    )


# ======================================================================================
# Computer use
# ======================================================================================


@situation(
    "desktop-clicks-never-reach-app",
    LOOP,
    "A computer-use agent clicks a toolbar button of a desktop editor, the screenshot is unchanged, and it cycles through click, double-click and press-release on the same spot while the screen never changes",
    (gh("Ikalus1988/MisakaNet", 1967),),
    "The cursor lands on the button but the app ignores injected mouse events, so after every action the "
    "screenshot is the same image (same digest, same visible text). The agent tries a double click and a "
    "separate press and release once, which is reasonable, but then keeps cycling through the same three methods "
    "at the same coordinates with the same result; after the first round it learns nothing, and the run ends "
    "at its step limit with the build never started.",
)
def desktop_clicks_never_reach_app(k: Kit) -> Run:
    app = k.pick(("Unreal Editor", "Godot", "Blender"))
    button = k.pick(("Build", "Play", "Bake Lighting"))
    x, y = k.n(300, 1400), k.n(40, 120)
    digest = k.hex(16)
    computer = k.pick(("computer", "desktop", "computer_use"))
    shot = _j({"screenshot": f"sha256:{digest}", "size": "1920x1080", "visible_text": f"{app} | File Edit Window Tools | {button} | Status: Ready"})
    actions = (
        {"action": "left_click", "coordinate": [x, y]},
        {"action": "double_click", "coordinate": [x, y]},
        {"action": "left_mouse_down", "coordinate": [x, y]},
        {"action": "left_click", "coordinate": [x + k.n(-2, 2), y + k.n(-2, 2)]},
    )
    says = (
        f"The {button} button did not react. Let me try again.",
        "Nothing changed. Trying a double click.",
        "I'll press and release the mouse separately.",
        "The screen looks the same; clicking the button once more.",
        None,
    )
    turns = [Turn(f"Taking a screenshot of {app}.", [ToolUse(computer, {"action": "screenshot"}, shot, duration_ms=k.n(300, 900))])]
    for _ in range(k.n(7, 12)):
        act = dict(k.pick(actions))
        turns.append(Turn(k.pick(says), [ToolUse(computer, act, shot, duration_ms=k.n(400, 1500))]))
    return Run(
        f"In {app}, press {button} and tell me when it finishes.",
        k.pick(("computer_use_agent", "desktop-agent")),
        k.pick(("claude-sonnet-4-20250514", "computer-use-preview", "ui-tars-1.5-7b")),
        turns,
        None,
        k.pick(("MaxStepsReached: 25 steps", "MaxTurnsExceeded: Max turns (20) exceeded")),
    )


@situation(
    "browser-load-more-until-exhausted",
    HEALTHY,
    "A computer-use agent clicks a page's 'Load more' button at the same spot again and again; each screenshot shows more rows, until the button is gone and it reads the list",
    (pr("xorbitsai/xagent", 1208),),
    "The same click at the same coordinates followed by a screenshot repeats five to eight times, like an agent "
    "clicking a button that does nothing; but each screenshot differs (a new digest, the row count grows by a "
    "page each time), the last one shows no button and the full count, and the agent then extracts the list and "
    "stops.",
    ("desktop-clicks-never-reach-app",),
)
def browser_load_more_until_exhausted(k: Kit) -> Run:
    computer = k.pick(("computer", "browser", "computer_use"))
    site = k.pick(("the conference's speaker page", "the shop's order history", "the forum thread"))
    x, y = k.n(500, 900), k.n(700, 980)
    per = k.pick((10, 20, 25))
    pages = k.n(5, 8)
    total = per * (pages - 1) + k.n(1, per - 1)
    turns = [Turn(None, [ToolUse(computer, {"action": "screenshot"}, _j({"screenshot": f"sha256:{k.hex(16)}", "visible_text": f"Showing {per} of {total} | Load more"}))])]
    shown = per
    for _ in range(pages - 1):
        shown = min(total, shown + per)
        tail = "Load more" if shown < total else "End of list"
        turns.append(Turn(k.say(("Loading more rows.", "Clicking Load more again."), 0.5), [ToolUse(computer, {"action": "left_click", "coordinate": [x, y]}, _j({"screenshot": f"sha256:{k.hex(16)}", "visible_text": f"Showing {shown} of {total} | {tail}"}), duration_ms=k.n(600, 1800))]))
    turns.append(Turn("All rows are loaded; extracting them.", [ToolUse("extract_content", {"goal": "all rows as a list"}, _j({"rows": total, "first": k.word(6), "last": k.word(6)}))]))
    return Run(
        f"Collect every entry from {site}.",
        k.pick(("computer_use_agent", "browser-agent")),
        k.pick(("claude-sonnet-4-20250514", "computer-use-preview", "gpt-4o")),
        turns,
        f"Collected all {total} entries from {site}.",
    )
