# ruff: noqa: E501, RUF001  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""The situations of the evaluation corpus: what agents do in public issue reports.

Each situation is one thing that happens to agents in the wild, taken from a public issue
thread of an agent tool (the ``sources``), labelled by what the situation *is* (``why``):
``loop`` when the run spends steps without learning anything it did not already know and
ends without getting further, ``healthy`` when the repetition is the work (polling that
sees change, pagination, batch work, a growing log, retries that end in success). Labels
were written from the situations, not from what any detector says about them.

Every loop situation has healthy look-alikes (``lookalike_of`` on the healthy side names
the loops it resembles), so a detector that flags repetition as such pays for it.

``build(kit)`` makes one run from a seeded :class:`~bench.corpus.kit.Kit`; the generator
calls it once per variant seed and renders each run in the three conventions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn

LOOP, HEALTHY = "loop", "healthy"


@dataclass(frozen=True)
class Situation:
    id: str
    label: str
    title: str
    sources: tuple[str, ...]
    why: str
    build: Callable[[Kit], Run]
    lookalike_of: tuple[str, ...] = ()


Build = Callable[[Kit], Run]


def registrar(registry: dict[str, Situation]) -> Callable[..., Callable[[Build], Build]]:
    """A ``situation(id, label, title, sources, why, lookalike_of=())`` decorator that
    registers into ``registry`` (the corpus's own below; first-look batches keep theirs)."""

    def situation(
        id: str,
        label: str,
        title: str,
        sources: tuple[str, ...],
        why: str,
        lookalike_of: tuple[str, ...] = (),
    ) -> Callable[[Build], Build]:
        def register(build: Build) -> Build:
            if id in registry:
                raise ValueError(f"duplicate situation {id}")
            registry[id] = Situation(id, label, title, sources, why, build, lookalike_of)
            return build

        return register

    return situation


SITUATIONS: dict[str, Situation] = {}
situation = registrar(SITUATIONS)


def gh(repo: str, number: int) -> str:
    return f"https://github.com/{repo}/issues/{number}"


def pr(repo: str, number: int) -> str:
    return f"https://github.com/{repo}/pull/{number}"


def _j(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


# ======================================================================================
# Repeating the same call and getting the same answer
# ======================================================================================


@situation(
    "exact-repeat-listing",
    LOOP,
    "The same directory listing / static query issued again and again, identical results",
    (gh("openclaw/openclaw", 68923), gh("openclaw/openclaw", 68946)),
    "The agent re-runs a static query (directory listing, file search) whose result cannot "
    "change and does not act on it; the report counts 100+ identical calls. Nothing is learned "
    "after the first call.",
)
def exact_repeat_listing(k: Kit) -> Run:
    shell, key = k.shell_tool()
    root = k.pick(
        ("D:\\OpenClaw-Agents", "/srv/agents", "~/projects/site", "/home/dev/workspace", "C:\\work\\repo")
    )
    cmd = k.pick((f"Get-ChildItem {root}", f"ls {root}", f"find {root} -maxdepth 1", f"dir {root}"))
    listing = "\n".join(
        sorted(
            k.sample(
                (
                    "agents",
                    "logs",
                    "config",
                    "data",
                    "scripts",
                    "README.md",
                    "docs",
                    "tmp",
                    "cache",
                    "bin",
                    "node_modules",
                    ".env.example",
                ),
                k.n(4, 9),
            )
        )
    )
    thoughts = (
        "Let me check the directory structure.",
        "I need to look at the directory again to understand the layout.",
        "Checking the directory contents.",
        f"Let me list {root} to see what is there.",
    )
    same_thought = k.maybe(0.5)
    first = k.say(thoughts)
    turns = k.prelude(0, 2)
    for _ in range(k.n(5, 14)):
        turns.append(Turn(first if same_thought else k.say(thoughts), [ToolUse(shell, {key: cmd}, listing)]))
    final, failure = k.give_up()
    return Run(
        f"Check the {root} directory structure and summarise it.", k.agent(), k.model(), turns, final, failure
    )


@situation(
    "ls-repeat-with-flag-variant",
    LOOP,
    "The same inspection command repeated, then repeated again with a cosmetic flag",
    (gh("earendil-works/pi", 6158),),
    "`ls dir` six times then `ls -la dir` five times, identical output within each group, the "
    "agent never moves on to the write step it needed; the flag change adds nothing new.",
)
def ls_repeat_variant(k: Kit) -> Run:
    shell, key = k.shell_tool()
    d = k.pick(("/home/dev/.jupyter/custom/", "/etc/nginx/conf.d/", "~/.config/app/", "/var/www/html/"))
    names = k.sample(("custom.css", "custom.js", "default.conf", "site.conf", "index.html", "app.json"), 2)
    short = "\n".join(names)
    long = "total 16\n" + "\n".join(
        f"-rw-r--r-- 1 dev dev {k.n(100, 9000)} Jan {k.n(1, 28)} 10:{k.n(10, 59)} {n}" for n in names
    )
    turns = k.prelude(0, 2)
    for _ in range(k.n(3, 6)):
        turns.append(
            Turn(
                k.say(("Let me check the directory.", "Checking the files again.")),
                [ToolUse(shell, {key: f"ls {d}"}, short)],
            )
        )
    for _ in range(k.n(3, 5)):
        turns.append(
            Turn(
                k.say(("Let me look with details.", "Listing with -la.")),
                [ToolUse(shell, {key: f"ls -la {d}"}, long)],
            )
        )
    final, failure = k.give_up()
    return Run(f"Add a custom stylesheet in {d} and enable it.", k.agent(), k.model(), turns, final, failure)


@situation(
    "cycle-period-4",
    LOOP,
    "A fixed rotation of 3-4 reads/greps repeated round after round with identical results",
    (gh("clacky-ai/openclacky", 440),),
    "ABCD ABCD ABCD...: the same four calls in the same order, nine rounds, every result identical "
    "(the source files did not change); the model never integrates them into a conclusion.",
)
def cycle_period_4(k: Kit) -> Run:
    read, rkey = k.read_tool()
    shell, key = k.shell_tool()
    f1, f2 = k.paths(2)
    calls = [
        ToolUse(
            read,
            {rkey: f1, "start_line": 260, "end_line": 354},
            "\n".join(f"{i}: {k.word(5)} = {k.word(7)}()" for i in range(260, 268)),
        ),
        ToolUse(
            read,
            {rkey: f1, "start_line": 50, "end_line": 80},
            "\n".join(f"{i}: def {k.word(6)}(self):" for i in range(50, 56)),
        ),
        ToolUse(
            shell,
            {key: f"grep -n 'thinking\\|extra_body\\|reasoning_effort' {f2}"},
            f"{k.n(10, 300)}:    extra_body = {{}}",
        ),
        ToolUse(
            read,
            {rkey: f2, "start_line": 100, "end_line": 220},
            "\n".join(f"{i}:   return {k.word(8)}" for i in range(100, 106)),
        ),
    ]
    period = k.pick((3, 4))
    calls = calls[:period]
    turns = k.prelude(0, 2)
    for _ in range(k.n(3, 9)):
        for c in calls:
            turns.append(
                Turn(k.say(("Let me check this part again.", "I need to look at how this is handled.")), [c])
            )
    final, failure = k.give_up()
    return Run(
        f"Explain how reasoning options are passed to the provider in {f1}.",
        k.agent(),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "alternating-period-2",
    LOOP,
    "Two calls alternating A-B-A-B with the same results each time",
    (gh("anomalyco/opencode", 47759), gh("microsoft/autogen", 5831)),
    "lookup(a), search(b), lookup(a), search(b)...: a period-2 cycle with unchanged results, which "
    "a consecutive-identical guard misses; the run gets nowhere.",
)
def alternating_period_2(k: Kit) -> Run:
    a_name = k.pick(("lookup", "get_customer", "kb_lookup", "read_ticket"))
    b_name = k.pick(("search", "search_orders", "kb_search", "find_related"))
    a_arg = {k.pick(("query", "id", "q")): k.pick(("a", f"CUST-{k.n(1000, 9999)}", "refund policy"))}
    b_arg = {k.pick(("query", "q", "text")): k.pick(("b", "late delivery", f"order {k.n(10000, 99999)}"))}
    ra = k.pick(
        (
            "Customer: Jane Roe, tier gold, 3 open tickets",
            "Policy: refunds within 30 days",
            f"Ticket {k.n(100, 999)}: waiting on carrier",
        )
    )
    rb = k.pick(
        ("2 results: #4411 delayed, #4412 delayed", "No related orders.", "1 result: carrier delay notice")
    )
    turns = k.prelude(0, 2)
    for _ in range(k.n(3, 7)):
        turns.append(
            Turn(k.say(("Let me look this up.", "Checking the record.")), [ToolUse(a_name, a_arg, ra)])
        )
        turns.append(
            Turn(k.say(("Now searching related items.", "Searching again.")), [ToolUse(b_name, b_arg, rb)])
        )
    final, failure = k.give_up()
    return Run(
        "Resolve the customer's complaint about a late delivery.", k.agent(), k.model(), turns, final, failure
    )


@situation(
    "empty-result-retry",
    LOOP,
    "Asking a memory / knowledge base again after it answered 'nothing there'",
    (gh("quintonmiller/tailored-ai", 528), gh("agno-agi/agno", 1734)),
    "`(core memory is empty)` is a definitive answer; the agent asks again identically until the "
    "turn budget runs out (8 of 12 runs in the report). Same call, same empty answer, nothing learned.",
)
def empty_result_retry(k: Kit) -> Run:
    tool = k.pick(("core_memory_search", "search_knowledge_base", "memory_recall", "kb_query", "retrieve"))
    key = k.pick(("query", "q", "question"))
    q = k.pick(
        ("user's favourite colour", "project deadline", "the API base url", "customer's account number")
    )
    empty = k.pick(
        (
            "(core memory is empty)",
            "No documents found.",
            "[]",
            "No relevant information found in the knowledge base.",
        )
    )
    reword = k.maybe(0.3)
    variants = (q, f"what is the {q}", q.replace("'s", ""), f"{q}?")
    turns = k.prelude(0, 1)
    for _ in range(k.n(3, 9)):
        turns.append(
            Turn(
                k.say(("Let me check memory.", "I'll search the knowledge base.")),
                [ToolUse(tool, {key: k.pick(variants) if reword else q}, empty)],
            )
        )
    final, failure = k.give_up()
    return Run(f"What is the {q}?", k.agent(), k.model(), turns, final, failure)


@situation(
    "reworded-search-same-answer",
    LOOP,
    "Rewording a search query again and again, getting the same answer (or none) every time",
    (
        gh("openJiuwen-ai/agent-core", 766),
        gh("langchain-ai/langchain", 1013),
        gh("ModelEngine-Group/nexent", 618),
    ),
    "The agent varies the query wording (or flags) but the backend returns the same result set or the "
    "same 'no results'; the variation is cosmetic, no new information arrives after the first call.",
)
def reworded_search_same_answer(k: Kit) -> Run:
    tool = k.pick(("web_search", "search", "grep_code", "duckduckgo_search", "search_docs"))
    key = k.pick(("query", "q", "pattern"))
    topic = k.pick(
        (
            "acme sdk retry config",
            "flux capacitor calibration",
            "ORA-29280 on startup",
            "zorblax pricing 2026",
        )
    )
    words = topic.split()
    queries = [
        topic,
        f"{topic} documentation",
        f"how to {topic}",
        " ".join(reversed(words)),
        f'"{topic}"',
        f"{topic} example",
        f"{words[0]} {words[-1]}",
        f"{topic} site:docs",
        topic.upper(),
        f"{topic} guide",
    ]
    same = k.pick(
        (
            "No results found.",
            "0 matches",
            f"1. {words[0].title()} overview - {k.word(6)}.com\n2. Forum: unanswered question about {words[-1]}\n3. {words[0]} changelog",
        )
    )
    extra_flags = k.maybe(0.4)
    turns = k.prelude(0, 2)
    for i in range(k.n(4, 10)):
        args: dict = {key: queries[i % len(queries)]}
        if extra_flags:
            args["exact"] = bool(i % 2)
        turns.append(
            Turn(
                k.say(
                    ("Let me try a different query.", "Rephrasing the search.", "Searching with other words.")
                ),
                [ToolUse(tool, args, same)],
            )
        )
    final, failure = k.give_up()
    return Run(f"Find documentation about {topic}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "file-not-found-repeat",
    LOOP,
    "Reading a path that does not exist again and again",
    (gh("tinyhumansai/openhuman", 4089),),
    "read_file(data.json) -> file not found, three or more times with the same path; the agent "
    "never lists the directory or tries another path.",
)
def file_not_found_repeat(k: Kit) -> Run:
    read, rkey = k.read_tool()
    p = k.pick(("data.json", "config/settings.yaml", "src/missing_module.py", "docs/api.md"))
    err = k.pick(
        (
            f"ENOENT: no such file or directory, open '{p}'",
            f"File not found: {p}",
            f"[Errno 2] No such file or directory: '{p}'",
        )
    )
    turns = k.prelude(0, 2)
    for _ in range(k.n(3, 8)):
        turns.append(
            Turn(
                k.say((f"Let me read {p}.", "Reading the file.")),
                [ToolUse(read, {rkey: p}, error=err, error_type="FileNotFoundError")],
            )
        )
    final, failure = k.give_up()
    return Run(f"Summarise the contents of {p}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "auth-error-repeat",
    LOOP,
    "A permanent authentication error retried again and again",
    (gh("OpenHands/OpenHands", 483), gh("ayesha-arbi/IssuePilot", 6)),
    "An invalid API key gives 401 every time; retrying cannot help, and the report's agent 'loops "
    "endlessly'. Permanent errors repeated are a loop.",
)
def auth_error_repeat(k: Kit) -> Run:
    llm_level = k.maybe(0.5)
    turns = k.prelude(0, 1) if not llm_level else []
    msg = k.pick(
        (
            "Error code: 401 - {'error': {'message': 'Incorrect API key provided', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}",
            "401 Unauthorized: Bad credentials",
            'HTTP 401 - {"code":"InvalidApiKey","message":"Invalid API-key provided."}',
            "403 Forbidden: token lacks scope repo",
        )
    )
    n = k.n(3, 9)
    if llm_level:
        for _ in range(n):
            turns.append(Turn(error=msg, error_type="AuthenticationError"))
        final, failure = None, "AuthenticationError: " + msg
    else:
        tool = k.pick(("github_api", "http_get", "jira_search", "slack_post"))
        args = {
            k.pick(("url", "endpoint", "path")): k.pick(
                ("/repos/acme/api/issues", "/rest/api/2/search?jql=project=OPS", "/api/chat.postMessage")
            )
        }
        for _ in range(n):
            turns.append(
                Turn(
                    k.say(("Let me retry the request.", "Trying again.")),
                    [ToolUse(tool, args, error=msg, error_type="HTTPError")],
                )
            )
        final, failure = k.give_up()
    return Run("List the open issues assigned to me.", k.agent(), k.model(), turns, final, failure)


@situation(
    "rate-limit-storm-never-recovers",
    LOOP,
    "Model calls failing with 429 / 5xx in a row until the run dies inside the storm",
    (gh("builderz-labs/marketing-dashboard", 11), gh("block/buzz", 5557), gh("librefang/librefang", 5168)),
    "Over 18 minutes not a single request succeeds; the run ends inside the failure storm. Six or more "
    "failures in a row with no success after is a stuck run.",
)
def rate_limit_storm(k: Kit) -> Run:
    turns = k.prelude(0, 3)
    err = k.pick(
        (
            (
                "Error code: 429 - rate_limit_exceeded: output_tokens rate limit exceeded, retry after 2s",
                "RateLimitError",
            ),
            ("Error code: 503 - The server is overloaded. Please try again later.", "InternalServerError"),
            ("Rate limited: weekly usage limit reached", "RateLimitError"),
            ("Request timed out.", "APITimeoutError"),
        )
    )
    for i in range(k.n(6, 18)):
        turns.append(Turn(error=err[0], error_type=err[1], gap_ms=k.pick((0, 1000, 2000 * (i + 1)))))
    return Run(
        "Draft the weekly marketing summary.",
        k.agent(),
        k.model(),
        turns,
        None,
        f"{err[1]}: exhausted retries: {err[0]}",
    )


@situation(
    "apply-diff-fail-reread",
    LOOP,
    "Edit fails, re-read the file, the same edit fails again, round after round",
    (gh("RooCodeInc/Roo-Code", 1866), gh("RooCodeInc/Roo-Code", 2268), gh("Aider-AI/aider", 770)),
    "'The apply_diff failed again... I'll re-read the file and attempt the diff again' in a cycle; the "
    "file never changes and the edit keeps failing the same way.",
)
def apply_diff_fail(k: Kit) -> Run:
    read, rkey = k.read_tool()
    edit = k.pick(("apply_diff", "edit_file", "replace_in_file", "str_replace"))
    p = k.path()
    content = "\n".join(f"{i}  {k.word(4)}_{k.word(5)}({k.word(3)})" for i in range(1, k.n(8, 30)))
    err = k.pick(
        (
            f"Unable to apply diff to file: {p}\nERROR: Unexpected end of sequence: Expected '=======' was not found.",
            f"SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in {p}",
            f"No match found for the search content in {p} (similarity 0.82 < 1.0)",
        )
    )
    diff = f"<<<<<<< SEARCH\n    return {k.word(6)}\n=======\n    return {k.word(6)}\n>>>>>>> REPLACE"
    turns = k.prelude(0, 1)
    for r in range(k.n(3, 6)):
        turns.append(
            Turn(
                k.say(
                    (
                        "I need to re-read the file and adjust the diff.",
                        "The apply_diff failed again; re-reading.",
                    )
                ),
                [ToolUse(read, {rkey: p}, content)],
            )
        )
        args = {"path": p, "diff": diff}
        if k.maybe(0.5):
            args["start_line"] = 10 + (r % 2)
        turns.append(
            Turn(
                k.say(("Applying the change.", "Trying the diff again.")),
                [ToolUse(edit, args, error=err, error_type="EditError")],
            )
        )
    final, failure = k.give_up()
    return Run(f"Fix the off-by-one bug in {p}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "edit-zero-occurrences",
    LOOP,
    "A replace tool failing with '0 occurrences found' under slightly changing old_string",
    (gh("google-gemini/gemini-cli", 6766),),
    "'Failed to edit, 0 occurrences found for old_string' repeated many times: the old_string wobbles "
    "(whitespace, a quote) but the answer is the same failure; nothing is learned.",
)
def edit_zero_occurrences(k: Kit) -> Run:
    tool = k.pick(("replace", "edit", "str_replace_editor", "Edit"))
    p = k.path()
    base = f"const {k.word(5)} = {k.word(6)}({k.word(4)});"
    variants = [
        base,
        base.replace(" = ", "="),
        "  " + base,
        base.replace(";", ""),
        base.replace("(", "( "),
        base + " ",
        "\t" + base,
    ]
    err = f"Failed to edit, 0 occurrences found for old_string in {p}. No edits made. The exact text in old_string was not found."
    turns = k.prelude(0, 2)
    for i in range(k.n(4, 9)):
        turns.append(
            Turn(
                k.say(("Let me fix the whitespace and try again.", "Retrying the edit.")),
                [
                    ToolUse(
                        tool,
                        {
                            "file_path": p,
                            "old_string": variants[i % len(variants)],
                            "new_string": base.replace(";", "; // fixed"),
                        },
                        error=err,
                        error_type="ToolError",
                    )
                ],
            )
        )
    final, failure = k.give_up()
    return Run(f"Rename the variable in {p}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "monologue-same-message",
    LOOP,
    "The same assistant message sent again and again with no action between",
    (gh("agent0ai/agent-zero", 1056), gh("rnadigital/agentcloud", 54), gh("microsoft/autogen", 1406)),
    "'You have sent the same message again' / a critic repeating its review / agents that keep "
    "talking after the task is solved: identical messages, no tool calls, no progress.",
)
def monologue(k: Kit) -> Run:
    msg = k.pick(
        (
            "The markdown table looks good overall, but the 'Domain' column should be sorted and the dates should use ISO format. Please revise the table accordingly.",
            "I'm here to assist you further. How may I help you with the products or any other inquiries you might have?",
            "I will now proceed to implement the changes described in the plan above, starting with the database migration.",
            "Let me know if you need anything else. If you're done with your inquiries, please let me know and we can end our session.",
        )
    )
    turns = k.prelude(0, 2)
    agent = k.agent()
    critic = k.maybe(0.4)
    for _ in range(k.n(3, 8)):
        turns.append(Turn(msg, agent="critic" if critic else None))
    final, failure = k.give_up()
    return Run(
        "Find papers on LLM applications from last week and make a markdown table of domains.",
        agent,
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "chanting-short-units",
    LOOP,
    "One output cycling through a few short sentences dozens of times",
    (gh("can1357/oh-my-pi", 8701), gh("agent0ai/agent-zero", 1173)),
    "'I'll do it. I'll implement it. I'll start. I'll begin coding...' for hundreds of words instead of "
    "acting: degenerate decoding, each unit short, the whole a loop.",
)
def chanting_short(k: Kit) -> Run:
    units = k.pick(
        (
            ["I'll do it.", "I'll implement it.", "I'll start.", "I'll begin coding."],
            ["Checking."],
            ["Let me search for the method signature.", "I'll search for the deserialization code."],
            ["(Done).", "(Action).", "(Tool).", "(Replace)."],
            ["Continuing.", "Working on it."],
        )
    )
    reps = k.n(12, 40) if len(units) > 1 else k.n(30, 60)
    sep = k.pick(("\n", " "))
    text = f"I have read the files. {k.word(5).title()} needs a new handler.{sep}" + sep.join(units * reps)
    turns = k.prelude(1, 3)
    turns.append(Turn(text))
    final, failure = k.give_up()
    return Run("Implement the workflow described in PLAN.md.", k.agent(), k.model(), turns, final, failure)


@situation(
    "degenerate-single-token",
    LOOP,
    "A single token repeated hundreds of times until the output limit",
    (gh("anthropics/claude-code", 82803), gh("anthropics/claude-code", 65363)),
    "One filler token ('court') emitted tens of thousands of times; the response is formally normal "
    "but is nothing but repetition.",
)
def degenerate_token(k: Kit) -> Run:
    tok = k.pick(("court", "zora", "上一轮", "加油！", "the"))
    sep = k.pick((" ", "", "\n"))
    text = k.pick(("Now I will update the handler so that ", "", "Plan: ")) + sep.join([tok] * k.n(250, 700))
    turns = k.prelude(1, 3)
    turns.append(Turn(text))
    return Run(
        "Update the webhook handler to validate signatures.",
        k.agent(),
        k.model(),
        turns,
        None,
        k.pick((None, "max_tokens reached")),
    )


@situation(
    "repeated-sentence",
    LOOP,
    "The same full sentence emitted over and over in one response",
    (gh("QwenLM/qwen-code", 1403), gh("google-gemini/gemini-cli", 12701)),
    "The model repeats the same sentence until the max token limit (CI run in the report), or prints "
    "the same answer 'more than a hundred times'.",
)
def repeated_sentence(k: Kit) -> Run:
    s = k.pick(
        (
            "I will now review the pull request and provide feedback on the changes.",
            "The configuration has been updated successfully and the service is ready.",
            "Let me analyze the code structure to understand the implementation details.",
        )
    )
    text = k.pick(("\n", " ", "\n\n")).join([s] * k.n(10, 35))
    turns = k.prelude(0, 2)
    turns.append(Turn(text))
    return Run("Review the pull request.", k.agent(), k.model(), turns, None, k.pick((None, "length")))


@situation(
    "handoff-pingpong",
    LOOP,
    "Two agents handing the task back and forth with nothing new",
    (gh("microsoft/autogen", 5831), gh("microsoft/autogen", 5611)),
    "In a swarm, the agent without a hand-off target falls into an infinite loop of transfers with empty "
    "context and content; A-B-A-B with no work done between.",
)
def handoff_pingpong(k: Kit) -> Run:
    a = k.pick(("travel_agent", "triage", "router", "support"))
    b = k.pick(("flights_refunder", "billing", "specialist", "escalation"))
    turns = []
    for _ in range(k.n(3, 7)):
        turns.append(
            Turn(
                k.say(("Transferring you to the right agent.",), 0.5),
                [ToolUse(f"transfer_to_{b}", {}, _j({"assistant": b}))],
                agent=a,
            )
        )
        turns.append(
            Turn(
                k.say(("Handing back.",), 0.5),
                [ToolUse(f"transfer_to_{a}", {}, _j({"assistant": a}))],
                agent=b,
            )
        )
    final, failure = k.give_up()
    return Run("I need to refund my flight.", a, k.model(), turns, final, failure)


@situation(
    "save-memory-repeat",
    LOOP,
    "After retrieving the answer, a ReAct agent calls save_memory with the same content until the limit",
    (gh("langchain-ai/langgraph", 4231),),
    "'it keeps calling the save_memory tool after it has retrieved the required information ... until it "
    "hits the recursion limit': the same write with the same content, the same 'saved' answer.",
)
def save_memory_repeat(k: Kit) -> Run:
    retrieve = k.pick(("retrieve", "vector_search", "chroma_query"))
    save = k.pick(("save_memory", "upsert_memory", "remember"))
    fact = k.pick(
        (
            "User prefers answers in French.",
            "User's project uses PostgreSQL 16.",
            "User is located in Singapore.",
        )
    )
    turns = [
        Turn(
            k.say(("Let me retrieve relevant context.",)),
            [
                ToolUse(
                    retrieve, {"query": "user question"}, "3 chunks: ... relevant passage about the topic ..."
                )
            ],
        )
    ]
    for _ in range(k.n(5, 12)):
        turns.append(
            Turn(
                k.say(("I'll save this to memory.", "Saving the user's preference.")),
                [ToolUse(save, {"content": fact}, k.pick(("Memory saved.", "ok", "Stored memory " + "m1")))],
            )
        )
    return Run(
        "What does the document say about connection pooling?",
        k.agent(),
        k.model(),
        turns,
        None,
        "GraphRecursionError: Recursion limit of 25 reached without hitting a stop condition",
    )


@situation(
    "research-search-crawl-loop",
    LOOP,
    "A researcher alternating search and crawl on the same sources until the recursion limit",
    (gh("langmanus/langmanus", 61), gh("bytedance/deer-flow", 55)),
    "'the graph appears to be stuck in a loop between web search and research steps' until "
    "GraphRecursionError: the same few pages come back every round.",
)
def research_loop(k: Kit) -> Run:
    search = k.pick(("tavily_search", "web_search", "search"))
    crawl = k.pick(("crawl", "fetch_page", "read_url"))
    topic = k.pick(("quantum error correction 2026", "EU AI act obligations", "solid-state battery startups"))
    url = f"https://{k.word(6)}.org/{k.word(5)}"
    results = _j(
        [
            {"title": f"{topic.title()} - overview", "url": url},
            {"title": "Background", "url": f"https://{k.word(7)}.com/a"},
        ]
    )
    page = f"# {topic.title()}\n\n" + " ".join(k.word(6) for _ in range(60))
    qs = [topic, f"{topic} latest", f"{topic} overview", f"{topic} news"]
    turns = []
    for i in range(k.n(3, 7)):
        turns.append(
            Turn(
                k.say(("Searching for more sources.",)),
                [ToolUse(search, {"query": qs[i % len(qs)]}, results)],
                agent="researcher",
            )
        )
        turns.append(
            Turn(
                k.say(("Reading the top source.",)), [ToolUse(crawl, {"url": url}, page)], agent="researcher"
            )
        )
    return Run(
        f"Write a short report on {topic}.",
        "coordinator",
        k.model(),
        turns,
        None,
        "GraphRecursionError: Recursion limit of 25 reached without hitting a stop condition",
    )


@situation(
    "diagnostic-repeat-varied-thoughts",
    LOOP,
    "The same diagnostic command 6-20 times, each time with new-sounding reasoning",
    (gh("PrimeIntellect-ai/prime-agent", 1326),),
    "read result -> 'let me try a different approach' -> the identical command, 20-23 times; the "
    "reasoning text varies, the action and its result do not.",
)
def diagnostic_repeat(k: Kit) -> Run:
    shell, key = k.shell_tool()
    cmd = k.pick(
        (
            "python -c \"import json,jsonschema; jsonschema.validate(json.load(open('payload.json')), json.load(open('schema.json')))\"",
            "npm run typecheck 2>&1 | head -20",
            "cargo check -p core 2>&1 | tail -5",
        )
    )
    out = k.pick(
        (
            "jsonschema.exceptions.ValidationError: 'id' is a required property",
            "src/index.ts(42,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            "error[E0308]: mismatched types\n  --> src/lib.rs:88:19",
        )
    )
    thoughts = [
        "Let me try a different approach and look at the error more carefully.",
        "Maybe the schema is loaded from another place. Let me check.",
        "I think the issue might be in the payload. Let me run the check again.",
        "Perhaps I misread the output. Running it once more.",
        "Let me verify my assumption about the failing field.",
        "I should double-check whether the fix was applied.",
        "Let me re-run the validation to see the current state.",
    ]
    turns = k.prelude(0, 2)
    for _ in range(k.n(6, 20)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(shell, {key: cmd}, out)]))
    final, failure = k.give_up()
    return Run("Fix the schema validation error.", k.agent(), k.model(), turns, final, failure)


@situation(
    "reverify-after-done",
    LOOP,
    "The work is done, then the same verification call is repeated again and again",
    (gh("amd/gaia", 3751),),
    "In 2 of 7 loop breaks of the report the model 'had finished the work and kept re-verifying it': "
    "the same successful call repeated with the same result.",
)
def reverify(k: Kit) -> Run:
    shell, key = k.shell_tool()
    p = k.path()
    turns = k.prelude(0, 2)
    turns.append(
        Turn(
            "Applying the change.",
            [
                ToolUse(
                    k.pick(("write_file", "create_file")),
                    {"path": p, "content": f"def {k.word(5)}():\n    return 1\n"},
                    "File written.",
                )
            ],
        )
    )
    verify = k.pick(
        (
            (shell, {key: f"cat {p}"}, "def x():\n    return 1\n"),
            (shell, {key: "git diff --stat"}, f" {p} | 2 ++\n 1 file changed, 2 insertions(+)"),
            ("create_table", {"name": "results"}, "Table 'results' created."),
        )
    )
    for _ in range(k.n(4, 9)):
        turns.append(
            Turn(
                k.say(("Let me verify the change was applied.", "Double-checking.", "Verifying once more.")),
                [ToolUse(verify[0], verify[1], verify[2])],
            )
        )
    final, failure = k.give_up()
    return Run(f"Add a helper to {p}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "noop-rotation",
    LOOP,
    "Rotating through trivial commands (pwd, ls, git status, echo) with a little novelty now and then",
    (gh("ai4s-research/open-science", 121), gh("OpenHands/OpenHands", 11431)),
    "'a long sequence of repeated state-completed tool results' then the same grep/diagnostic commands "
    "again: the agent shuffles no-op commands for many steps; an occasional new clock value is not work.",
)
def noop_rotation(k: Kit) -> Run:
    shell, key = k.shell_tool()
    cwd = k.pick(("/workspace", "/home/user/project", "/app"))
    listing = "\n".join(k.sample(("src", "tests", "README.md", "setup.py", "data", "notes.md"), 4))
    pool = [
        ({key: "pwd"}, cwd),
        ({key: "ls"}, listing),
        ({key: "git status --short"}, ""),
        ({key: "echo done"}, "done"),
        ({key: "cat notes.md"}, "TODO: finish analysis"),
        ({key: "grep -rn TODO src | head -3"}, "src/a.py:10: # TODO: finish analysis"),
    ]
    turns = k.prelude(0, 1)
    now = k.start_time()
    for i in range(k.n(14, 26)):
        now += k.n(5, 40)
        if k.maybe(0.12):
            turns.append(Turn(None, [ToolUse(shell, {key: "date"}, k.iso(now))]))
            continue
        args, out = pool[k.n(0, len(pool) - 1)] if k.maybe(0.5) else pool[i % len(pool)]
        turns.append(Turn(k.say(("Let me check the state.", "Checking."), 0.6), [ToolUse(shell, args, out)]))
    final, failure = k.give_up()
    return Run("Finish the analysis described in notes.md.", k.agent(), k.model(), turns, final, failure)


@situation(
    "volatile-footer-reread",
    LOOP,
    "Re-reading an unchanged file whose output carries a counter / request id / fetch time",
    (gh("macanderson/stella", 440),),
    "read_file appends '(N/M lines shown · read K× this session)': every reread of an unchanged file "
    "is byte-unique, yet nothing new is read; a request id or timestamp in the output is the same trap.",
)
def volatile_footer(k: Kit) -> Run:
    read, rkey = k.read_tool()
    p = k.path()
    body = "\n".join(f"{i}: {k.word(5)}({k.word(4)}, {k.word(3)})" for i in range(1, k.n(6, 25)))
    style = k.n(0, 3)
    turns = k.prelude(0, 2)
    total = body.count("\n") + 1
    now = k.start_time()
    for i in range(k.n(4, 9)):
        now += k.n(3, 60)
        if style == 0:
            footer = f"\n\n({total}/{total} lines shown · read {i + 1}× this session)"
        elif style == 1:
            footer = f"\nrequest_id: {k.volatile_id()}"
        elif style == 2:
            footer = f"\nfetched_at: {k.iso(now)} ({k.n(3, 90)} ms)"
        else:
            footer = f"\n[cache miss {k.volatile_id()} in {k.n(1, 40)}.{k.n(0, 9)}ms]"
        turns.append(
            Turn(
                k.say(("Let me read the file again.", "Re-reading to be sure.")),
                [ToolUse(read, {rkey: p}, body + footer)],
            )
        )
    final, failure = k.give_up()
    return Run(f"Find where the retry count is set in {p}.", k.agent(), k.model(), turns, final, failure)


@situation(
    "url-params-same-page",
    LOOP,
    "Fetching one page under changing URL spellings (tracking params, order, fragment) and getting it again",
    (gh("swampratnz/community-agent", 1342),),
    "fetch_page with the identical URL spends quota on zero new information; reordering query "
    "parameters, adding utm_* tags or a #fragment is the same URL and the same page.",
)
def url_params_same(k: Kit) -> Run:
    tool = k.pick(("fetch_page", "fetch", "WebFetch", "http_get"))
    host = f"https://{k.word(7)}.com"
    path = f"/{k.word(5)}/{k.word(6)}"
    variants = [
        f"{host}{path}?lang=en&page=1",
        f"{host}{path}?page=1&lang=en",
        f"{host}{path}?lang=en&page=1&utm_source=agent",
        f"{host}{path}?lang=en&page=1#top",
        f"{host}{path}?page=1&lang=en&utm_campaign=x&ref=chat",
        f"{host}{path}?lang=en&page=1&fbclid={k.hex(10)}",
    ]
    page = f"<h1>{k.word(6).title()}</h1>\n" + " ".join(k.word(5) for _ in range(k.n(30, 80)))
    turns = k.prelude(0, 1)
    for i in range(k.n(4, 8)):
        turns.append(
            Turn(
                k.say(("Fetching the page.", "Let me fetch it again with the right parameters.")),
                [ToolUse(tool, {"url": variants[i % len(variants)]}, page)],
            )
        )
    final, failure = k.give_up()
    return Run("Summarise the pricing page.", k.agent(), k.model(), turns, final, failure)


@situation(
    "tool-not-executed-retry",
    LOOP,
    "The harness rejects the tool call with the same message and the model re-sends the same call",
    (gh("cline/cline", 11643), gh("RooCodeInc/Roo-Code", 2637)),
    "'You did not use a tool in your previous response! Please retry with a tool use.' again and again "
    "for the same list_files call: the same call, the same rejection.",
)
def tool_not_executed(k: Kit) -> Run:
    tool = k.pick(("list_files", "apply_diff", "read_file"))
    args = {"path": k.pick((".", "src", "app/components"))}
    msg = k.pick(
        (
            "[ERROR] You did not use a tool in your previous response! Please retry with a tool use.",
            "Roo tried to use apply_diff without value for required parameter 'diff'. Retrying...",
            "Invalid tool call: missing required parameter 'recursive'",
        )
    )
    turns = []
    for _ in range(k.n(4, 9)):
        turns.append(
            Turn(
                k.say(("Listing the files.", "Retrying the tool call.")),
                [ToolUse(tool, args, error=msg, error_type="ToolUseError")],
            )
        )
    final, failure = k.give_up()
    return Run(
        "List the files in the project and describe the structure.",
        k.agent(),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "date-range-respelled-empty",
    LOOP,
    "Querying the same date range spelled differently, the same empty answer each time",
    (gh("agno-agi/agno", 1734), gh("quintonmiller/tailored-ai", 528)),
    "The agent re-asks a source that answered 'nothing' with the same range written as ISO dates, "
    "'March 1, 2026', 01/03/2026 or a timestamp: the same question, the same empty answer.",
)
def date_range_respelled(k: Kit) -> Run:
    tool = k.pick(("list_events", "query_sales", "get_invoices", "search_calendar"))
    y, m = 2026, k.n(1, 9)
    months = ("January", "February", "March", "April", "May", "June", "July", "August", "September")
    spellings = [
        ({"from": f"{y}-{m:02d}-01", "to": f"{y}-{m:02d}-28"}),
        ({"from": f"{months[m - 1]} 1, {y}", "to": f"{months[m - 1]} 28, {y}"}),
        ({"from": f"01/{m:02d}/{y}", "to": f"28/{m:02d}/{y}"}),
        ({"from": f"{y}-{m:02d}-01T00:00:00Z", "to": f"{y}-{m:02d}-28T00:00:00Z"}),
        ({"from": f"{y}{m:02d}01", "to": f"{y}{m:02d}28"}),
        ({"start_date": f"{y}-{m:02d}-01", "end_date": f"{y}-{m:02d}-28"}),
    ]
    empty = k.pick(("[]", "No records found for the given range.", _j({"items": [], "total": 0})))
    turns = k.prelude(0, 1)
    for i in range(k.n(4, 8)):
        turns.append(
            Turn(
                k.say(("Maybe the date format was wrong; trying again.", "Let me query that period again.")),
                [ToolUse(tool, spellings[i % len(spellings)], empty)],
            )
        )
    final, failure = k.give_up()
    return Run(f"What happened in {months[m - 1]} {y}?", k.agent(), k.model(), turns, final, failure)


@situation(
    "shell-variants-same-output",
    LOOP,
    "The same search as differently written shell commands (grep / rg / quoting / flags), same output",
    (gh("openJiuwen-ai/agent-core", 766), gh("PrimeIntellect-ai/prime-agent", 1326)),
    "Repeated grep with the same pattern after a zero-result return, 'same tool, same normalized input': "
    "rewriting the command (quotes, flag order, rg for grep) does not change what it finds.",
)
def shell_variants(k: Kit) -> Run:
    shell, key = k.shell_tool()
    pat = k.pick(("retry_budget", "MAX_CONNECTIONS", "handleWebhook", "parse_header"))
    d = k.pick(("src", "app", "lib"))
    cmds = [
        f"grep -rn {pat} {d}",
        f"grep -rn '{pat}' {d}/",
        f'grep -nr "{pat}" ./{d}',
        f"rg -n {pat} {d}",
        f"grep -rn --include='*' {pat} {d}",
        f"cd {d} && grep -rn {pat} .",
        f"rg {pat} {d} -n",
    ]
    out = k.pick(("", f"{d}/config.py:12:    # {pat} is read from the environment", "(no matches)"))
    turns = k.prelude(0, 2)
    for i in range(k.n(4, 9)):
        turns.append(
            Turn(
                k.say(("Let me search again.", "Maybe the quoting was wrong.", "Trying ripgrep instead.")),
                [ToolUse(shell, {key: cmds[i % len(cmds)]}, out)],
            )
        )
    final, failure = k.give_up()
    return Run(f"Find where {pat} is defined and change it.", k.agent(), k.model(), turns, final, failure)


@situation(
    "send-retry-volatile-ids",
    LOOP,
    "Re-sending the same message, each attempt with a fresh client id, each failing the same way",
    (gh("openclaw/openclaw", 68923),),
    "'20+ repeated message sends' in the report: the same message to the same place; a new idempotency "
    "key or request id on every attempt is not a new attempt.",
)
def send_retry_ids(k: Kit) -> Run:
    tool = k.pick(("send_message", "slack_post", "post_comment", "send_email"))
    target = k.pick(("#ops-alerts", "C04ABCD12", "issue/1423", "oncall@example.com"))
    text = k.pick(
        (
            "Deploy finished: all checks green.",
            "Heads-up: checkout latency is back to normal.",
            "Daily report attached.",
        )
    )
    fail = k.maybe(0.6)
    id_key = k.pick(("client_msg_id", "idempotency_key", "nonce"))
    turns = k.prelude(0, 2)
    for _ in range(k.n(4, 10)):
        args = {
            "to": target,
            "text": text,
            id_key: k.volatile_id(),
        }
        if fail:
            call = ToolUse(
                tool, args, error=f"channel_not_found (request {k.volatile_id()})", error_type="APIError"
            )
        else:
            call = ToolUse(
                tool,
                args,
                _j(
                    {
                        "ok": True,
                        "ts": f"{k.n(1700000000, 1800000000)}.{k.n(100000, 999999)}",
                        "id": k.volatile_id(),
                    }
                ),
            )
        turns.append(
            Turn(k.say(("Sending the message.", "Let me send it again to be sure it arrived.")), [call])
        )
    final, failure = k.give_up()
    return Run(f"Tell {target} that the deploy finished.", k.agent(), k.model(), turns, final, failure)


# ======================================================================================
# Healthy look-alikes: repetition that is the work
# ======================================================================================


@situation(
    "batch-file-moves",
    HEALTHY,
    "Moving many files and updating their imports: search, git mv, edit, per file",
    (gh("google-gemini/gemini-cli", 5873), gh("google-gemini/gemini-cli", 8234)),
    "A repetitive but finite process over different files (the report's loop detector halted it "
    "falsely); every call targets a new file.",
    ("exact-repeat-listing", "cycle-period-4", "save-memory-repeat"),
)
def batch_file_moves(k: Kit) -> Run:
    shell, key = k.shell_tool()
    files = k.paths(k.n(4, 10))
    dest = k.pick(("src/components/ui", "lib/shared", "packages/common"))
    turns = k.prelude(0, 1)
    for f in files:
        name = f.rsplit("/", 1)[1]
        refs = "\n".join(
            f"{g}:{k.n(1, 40)}: import {{ x }} from './{name.split('.')[0]}'"
            for g in k.sample(files, 2)
            if g != f
        )
        turns.append(
            Turn(
                k.say((f"Searching references to {name}.",)),
                [ToolUse(shell, {key: f'grep -rn "{name.split(".")[0]}" src'}, refs or "(no matches)")],
            )
        )
        turns.append(Turn(None, [ToolUse(shell, {key: f"git mv {f} {dest}/{name}"}, "")]))
        if refs:
            turns.append(
                Turn(
                    None,
                    [
                        ToolUse(
                            k.pick(("replace", "edit_file")),
                            {
                                "file_path": refs.split(":")[0],
                                "old_string": f"./{name.split('.')[0]}",
                                "new_string": f"{dest}/{name.split('.')[0]}",
                            },
                            f"Successfully modified file: {refs.split(':')[0]} (1 replacements).",
                        )
                    ],
                )
            )
    return Run(
        f"Move the shared components into {dest} and update imports.",
        k.agent(),
        k.model(),
        turns,
        f"Moved {len(files)} files to {dest} and updated their imports.",
    )


@situation(
    "batch-writes-short-ok",
    HEALTHY,
    "Writing many different files, each answered with a short 'ok'",
    (gh("QwenLM/qwen-code", 610), gh("google-gemini/gemini-cli", 8232)),
    "'Valid repetitive operations (like processing multiple similar files) are incorrectly flagged': the "
    "same short answer under changing arguments is fine when each call writes a different target.",
    ("reworded-search-same-answer", "save-memory-repeat", "url-params-same-page"),
)
def batch_writes(k: Kit) -> Run:
    tool = k.pick(("write_file", "create_file", "put_object", "upsert_record"))
    ok = k.pick(("ok", "File written.", "Success", "200 OK", '{"status":"ok"}'))
    turns = k.prelude(0, 2)
    for f in k.paths(k.n(6, 16)):
        turns.append(
            Turn(
                k.say((f"Writing {f}.", "Next file."), 0.6),
                [
                    ToolUse(
                        tool,
                        {
                            "path": f,
                            "content": f"// generated for {f}\nexport const {k.word(5)} = {k.n(1, 99)};\n",
                        },
                        ok,
                    )
                ],
            )
        )
    shell, key = k.shell_tool()
    turns.append(
        Turn(
            "Now building to check everything compiles.",
            [ToolUse(shell, {key: "npm run build"}, f"Compiled successfully in {k.n(2, 30)}.{k.n(0, 9)}s")],
        )
    )
    return Run(
        "Generate the per-module constant files.",
        k.agent(),
        k.model(),
        turns,
        "All module files generated and the build passes.",
    )


@situation(
    "verification-cycles",
    HEALTHY,
    "read -> edit -> run tests cycles over different code, every call with distinct arguments",
    (gh("QwenLM/qwen-code", 9733),),
    "The report's 13-call read_file/edit/write/run sequence has distinct args throughout; it is "
    "ordinary development and was killed only by a per-turn cap.",
    ("cycle-period-4", "alternating-period-2", "apply-diff-fail-reread"),
)
def verification_cycles(k: Kit) -> Run:
    read, rkey = k.read_tool()
    shell, key = k.shell_tool()
    files = k.paths(k.n(3, 6))
    turns = k.prelude(0, 2)
    for f in files:
        turns.append(
            Turn(
                k.say((f"Reading {f}.",)),
                [ToolUse(read, {rkey: f}, "\n".join(f"{j}: {k.word(6)}()" for j in range(1, k.n(5, 12))))],
            )
        )
        turns.append(
            Turn(
                k.say(("Updating the function.",)),
                [
                    ToolUse(
                        "edit",
                        {"file_path": f, "old_string": k.word(6), "new_string": k.word(6)},
                        "OK: 1 replacement",
                    )
                ],
            )
        )
        test = f"tests/test_{f.rsplit('/', 1)[1].split('.')[0]}.py"
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        shell,
                        {key: f"pytest {test} -q"},
                        f"{k.n(3, 20)} passed in {k.n(1, 9)}.{k.n(10, 99)}s",
                    )
                ],
            )
        )
    return Run(
        "Add input validation to the service modules.",
        k.agent(),
        k.model(),
        turns,
        "Validation added; all tests pass.",
    )


@situation(
    "reworded-search-new-results",
    HEALTHY,
    "Rewording search queries, each finding new results",
    (gh("crewAIInc/crewAI", 1414),),
    "The same tool called with different inputs, each returning different results that the agent "
    "consolidates: the rewording finds new information.",
    ("reworded-search-same-answer", "research-search-crawl-loop"),
)
def reworded_new(k: Kit) -> Run:
    tool = k.pick(("web_search", "search", "DuckDuckGoSearchResults", "search_docs"))
    sector = k.pick(("AI in healthcare", "AI in finance", "edge computing", "battery recycling"))
    queries = [
        f"{sector} market size",
        f"{sector} key players",
        f"{sector} regulation",
        f"{sector} funding rounds",
        f"{sector} adoption survey",
        f"{sector} risks",
    ]
    turns = []
    for q in queries[: k.n(3, 6)]:
        res = "\n".join(
            f"{i + 1}. {k.word(6).title()} {k.word(5)}: {k.n(2, 98)}% {k.word(7)} ({k.word(5)}.com)"
            for i in range(3)
        )
        turns.append(Turn(k.say((f"Searching: {q}.", "Next angle.")), [ToolUse(tool, {"query": q}, res)]))
    return Run(
        f"Provide an up-to-date market analysis of {sector}.",
        k.agent(),
        k.model(),
        turns,
        f"{sector}: market growing; main players and risks summarised.",
    )


@situation(
    "file-not-found-then-recover",
    HEALTHY,
    "A missing path, then listing the directory and reading the right file",
    (gh("tinyhumansai/openhuman", 4089),),
    "The expected behaviour the report asks for: after a failure the agent enumerates and reads the "
    "right path; errors followed by progress are not a loop.",
    ("file-not-found-repeat",),
)
def fnf_recover(k: Kit) -> Run:
    read, rkey = k.read_tool()
    shell, key = k.shell_tool()
    p = k.pick(("data.json", "config.yaml", "settings.toml"))
    real = f"{k.pick(('config', 'data', 'etc'))}/{p}"
    turns = k.prelude(0, 1)
    for _ in range(k.n(1, 2)):
        turns.append(
            Turn(
                k.say((f"Reading {p}.",)),
                [ToolUse(read, {rkey: p}, error=f"File not found: {p}", error_type="FileNotFoundError")],
            )
        )
    turns.append(
        Turn(
            "The file is not at the root; let me find it.",
            [ToolUse(shell, {key: f"find . -name {p}"}, f"./{real}")],
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    read,
                    {rkey: real},
                    _j(
                        {
                            "retries": k.n(1, 9),
                            "timeout_s": k.n(5, 60),
                            "region": k.pick(("eu-west-1", "us-east-2")),
                        }
                    ),
                )
            ],
        )
    )
    return Run(
        f"Summarise the contents of {p}.",
        k.agent(),
        k.model(),
        turns,
        "The config sets retries, a timeout and the region.",
    )


@situation(
    "transient-errors-then-success",
    HEALTHY,
    "A few 429 / timeout failures, then the call succeeds and the work goes on",
    (gh("nesquena/hermes-webui", 4980), gh("fastrepl/anarlog", 6460)),
    "Bounded retries with backoff that end in success are how transient errors should be handled; the "
    "run completes its task.",
    ("rate-limit-storm-never-recovers", "auth-error-repeat", "tool-not-executed-retry"),
)
def transient_then_success(k: Kit) -> Run:
    turns = k.prelude(0, 2)
    n = k.n(1, 4)
    if k.maybe(0.5):
        for i in range(n):
            turns.append(
                Turn(
                    error="Error code: 429 - Rate limit reached for requests",
                    error_type="RateLimitError",
                    gap_ms=1000 * 2**i,
                )
            )
    else:
        tool = k.pick(("http_get", "fetch_prices", "query_api"))
        args = {"url": f"https://api.{k.word(6)}.io/v1/{k.word(5)}"}
        for _ in range(n):
            turns.append(
                Turn(
                    k.say(("Retrying after a timeout.",)),
                    [
                        ToolUse(
                            tool,
                            args,
                            error=k.pick(("ReadTimeout: timed out", "503 Service Unavailable")),
                            error_type="HTTPError",
                        )
                    ],
                )
            )
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        tool,
                        args,
                        _j({"items": [{"sku": k.word(4), "price": k.n(1, 500)} for _ in range(3)]}),
                    )
                ],
            )
        )
    read, rkey = k.read_tool()
    turns.append(
        Turn("Got it; continuing.", [ToolUse(read, {rkey: k.path()}, "\n".join(k.word(6) for _ in range(6)))])
    )
    turns.append(
        Turn(
            None, [ToolUse("write_file", {"path": "summary.md", "content": "# Summary\n" + k.word(8)}, "ok")]
        )
    )
    return Run(
        "Fetch the current prices and write a summary.",
        k.agent(),
        k.model(),
        turns,
        "Prices fetched and summarised in summary.md.",
    )


@situation(
    "failure-storm-then-recovers",
    HEALTHY,
    "Six or more failures in a row, then recovery and several productive steps",
    (gh("google-gemini/gemini-cli", 12701), gh("nesquena/hermes-webui", 4980)),
    "A provider outage produces a burst of errors, then calls succeed and the agent completes distinct "
    "work; failures followed by progress stay healthy however many they were.",
    ("rate-limit-storm-never-recovers",),
)
def storm_then_recovers(k: Kit) -> Run:
    turns = k.prelude(0, 2)
    for i in range(k.n(6, 10)):
        turns.append(
            Turn(
                error=k.pick(
                    ("Error code: 503 - overloaded", "Error code: 429 - rate limit", "Request timed out.")
                ),
                error_type="APIError",
                gap_ms=500 * (i + 1),
            )
        )
    shell, key = k.shell_tool()
    for f in k.paths(k.n(3, 5)):
        turns.append(
            Turn(k.say((f"Checking {f}.",)), [ToolUse(shell, {key: f"wc -l {f}"}, f"{k.n(20, 900)} {f}")])
        )
    return Run("Count the lines of the main modules.", k.agent(), k.model(), turns, "Line counts collected.")


@situation(
    "edit-retry-then-applies",
    HEALTHY,
    "An edit fails once or twice, the agent re-reads, the edit applies and tests pass",
    (gh("Aider-AI/aider", 942), gh("Aider-AI/aider", 4098)),
    "Aider limits edit retries to 3 and models usually fix the SEARCH block on a retry; a failed edit "
    "followed by a successful one is the normal edit cycle.",
    ("apply-diff-fail-reread", "edit-zero-occurrences"),
)
def edit_retry_applies(k: Kit) -> Run:
    read, rkey = k.read_tool()
    shell, key = k.shell_tool()
    p = k.path()
    turns = k.prelude(0, 1)
    turns.append(
        Turn(
            "Reading the file.",
            [ToolUse(read, {rkey: p}, "\n".join(f"{i}  {k.word(5)}()" for i in range(1, 12)))],
        )
    )
    for _ in range(k.n(1, 2)):
        turns.append(
            Turn(
                "Applying the edit.",
                [
                    ToolUse(
                        "apply_diff",
                        {
                            "path": p,
                            "diff": f"<<<<<<< SEARCH\n{k.word(5)}\n=======\n{k.word(5)}\n>>>>>>> REPLACE",
                        },
                        error=f"SearchReplaceNoExactMatch in {p}",
                        error_type="EditError",
                    )
                ],
            )
        )
    turns.append(
        Turn(
            "The indentation was off; re-reading the exact lines.",
            [
                ToolUse(
                    read,
                    {rkey: p, "start_line": 4, "end_line": 9},
                    "\n".join(f"{i}      {k.word(5)}()" for i in range(4, 10)),
                )
            ],
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "apply_diff",
                    {
                        "path": p,
                        "diff": f"<<<<<<< SEARCH\n      {k.word(6)}()\n=======\n      {k.word(6)}(strict=True)\n>>>>>>> REPLACE",
                    },
                    f"Applied edit to {p}",
                )
            ],
        )
    )
    turns.append(
        Turn(
            None, [ToolUse(shell, {key: "pytest -q"}, f"{k.n(10, 80)} passed in {k.n(1, 20)}.{k.n(10, 99)}s")]
        )
    )
    return Run(
        f"Make the parser in {p} strict.",
        k.agent(),
        k.model(),
        turns,
        "Done: strict parsing enabled, tests pass.",
    )


@situation(
    "writer-critic-converges",
    HEALTHY,
    "A writer/critic exchange where every message is new and the critic finally approves",
    (gh("rnadigital/agentcloud", 54), gh("microsoft/autogen", 1406)),
    "Several assistant messages in a row without tools, but each revision and each critique is "
    "different and the exchange ends with approval: the look-alike of a repeating critic.",
    ("monologue-same-message",),
)
def writer_critic(k: Kit) -> Run:
    turns = []
    rounds = k.n(2, 4)
    for r in range(rounds):
        rows = "\n".join(
            f"| {k.word(6)} | {k.n(1, 20)} | 2026-0{k.n(1, 9)}-{k.n(10, 28)} |" for _ in range(k.n(3, 6))
        )
        turns.append(
            Turn(f"Draft {r + 1}:\n| Domain | Papers | Latest |\n|---|---|---|\n{rows}", agent="writer")
        )
        note = k.pick(
            (
                "Sort the domains alphabetically.",
                "Use ISO dates.",
                "Merge the duplicate 'health' rows.",
                "Add a totals row.",
                "Cite the arXiv ids.",
            )
        )
        turns.append(
            Turn(
                f"Review {r + 1}: {note}"
                if r < rounds - 1
                else "Approved: the table is complete and consistent.",
                agent="critic",
            )
        )
    return Run(
        "Make a markdown table of LLM application domains from last week's papers.",
        "writer",
        k.model(),
        turns,
        "Final table approved by the critic.",
    )


@situation(
    "long-structured-output",
    HEALTHY,
    "A long answer with many similar lines: a table, a checklist, code with repeated lines",
    (gh("ad-naan/Adnify", 180), gh("QwenLM/qwen-code", 610)),
    "'normal long text misjudged as a loop' / 'legitimate repetitive content (code generation, "
    "documentation, structured outputs) triggers false alarms'; each line carries different content.",
    ("chanting-short-units", "repeated-sentence", "degenerate-single-token"),
)
def long_structured(k: Kit) -> Run:
    kind = k.n(0, 3)
    if kind == 0:
        text = "| table | rows migrated | status |\n|---|---|---|\n" + "\n".join(
            f"| {k.word(7)} | {k.n(100, 99999)} | ok |" for _ in range(k.n(15, 40))
        )
    elif kind == 1:
        text = "Checklist:\n" + "\n".join(
            f"- [x] Migrated `{k.word(6)}_{k.word(4)}` to the new API" for _ in range(k.n(15, 40))
        )
    elif kind == 2:
        fields = [k.word(6) for _ in range(k.n(12, 30))]
        text = (
            "```python\nclass Settings(BaseModel):\n"
            + "\n".join(f"    {f}: str | None = None" for f in fields)
            + "\n```\n"
            + "\n".join(f"- `{f}`: {k.word(5)} {k.word(7)}" for f in fields)
        )
    else:
        text = "Plan:\n" + "\n".join(
            f"{i}. Update `{k.word(6)}.py`: replace `{k.word(5)}` with `{k.word(5)}`"
            for i in range(1, k.n(15, 35))
        )
    turns = k.prelude(1, 3)
    turns.append(Turn(text))
    return Run("Produce the migration report.", k.agent(), k.model(), turns, text[:200])


@situation(
    "handoff-delegation",
    HEALTHY,
    "A triage agent delegating to specialists and getting control back with new results",
    (gh("openai/openai-agents-python", 527), gh("run-llama/python-agents-tutorial", 5)),
    "The main agent divides the task and hands work to different agents, control returns to it after "
    "each piece of work: repeated hand-offs, each with new work done.",
    ("handoff-pingpong",),
)
def handoff_delegation(k: Kit) -> Run:
    main = k.pick(("triage", "main_agent", "orchestrator"))
    specialists = k.sample(("billing", "shipping", "returns", "tech_support", "accounts"), k.n(2, 4))
    turns = []
    for s in specialists:
        turns.append(
            Turn(
                f"Sending the {s} part to the {s} agent.",
                [ToolUse(f"transfer_to_{s}", {}, _j({"assistant": s}))],
                agent=main,
            )
        )
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        f"{s}_lookup",
                        {"customer_id": f"C{k.n(1000, 9999)}"},
                        f"{s}: {k.word(6)} {k.n(1, 999)} {k.word(5)}",
                    )
                ],
                agent=s,
            )
        )
        turns.append(
            Turn(
                f"{s} handled: {k.word(7)}. Back to {main}.",
                [ToolUse(f"transfer_to_{main}", {}, _j({"assistant": main}))],
                agent=s,
            )
        )
    return Run(
        "Help the customer with billing, shipping and returns questions.",
        main,
        k.model(),
        turns,
        "All questions answered.",
    )


@situation(
    "poll-identical-then-done",
    HEALTHY,
    "Polling a job that reports the same 'running' a few times, then 'succeeded'",
    (gh("OpenHands/software-agent-sdk", 762), gh("MervinPraison/PraisonAI", 3772)),
    "'poll every 5 minutes for up to 15 minutes' was stopped by a detector after 4 identical polls; "
    "a legitimate poll of a build/job status returns identical results until the job ends.",
    ("exact-repeat-listing", "empty-result-retry"),
)
def poll_identical_then_done(k: Kit) -> Run:
    tool = k.pick(("get_job_status", "check_build", "training_status", "get_deployment"))
    job = f"job-{k.hex(8)}"
    running = k.pick(("status: running", '{"state":"RUNNING"}', "Build in progress", "PENDING"))
    turns = [
        Turn(
            "Starting the job.",
            [ToolUse(k.pick(("start_job", "trigger_build")), {"name": k.word(6)}, f"started {job}")],
        )
    ]
    for _ in range(k.n(3, 6)):
        turns.append(
            Turn(
                k.say(("Waiting for the job.", "Polling again.")),
                [ToolUse("sleep", {"seconds": 300}, "", duration_ms=300_000)],
                gap_ms=0,
            )
        )
        turns.append(Turn(None, [ToolUse(tool, {"job_id": job}, running)]))
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    tool,
                    {"job_id": job},
                    k.pick(("status: succeeded", '{"state":"SUCCEEDED"}', "Build finished: success", "DONE")),
                )
            ],
        )
    )
    return Run(
        "Train the model with the new data and report when done.",
        k.agent(),
        k.model(),
        turns,
        "The job finished successfully.",
    )


@situation(
    "poll-status-progress",
    HEALTHY,
    "Polling a long job whose status text moves through stages",
    (gh("OpenHands/software-agent-sdk", 762), gh("OpenHands/OpenHands", 5355)),
    "Agents must repeatedly wait while long processes run; each poll reports a new stage.",
    ("exact-repeat-listing",),
)
def poll_status_progress(k: Kit) -> Run:
    tool = k.pick(("get_job_status", "describe_stack", "pipeline_status"))
    job = k.volatile_id()
    stages = [
        "queued",
        "provisioning",
        "downloading data",
        "preprocessing",
        "training epoch 1/3",
        "training epoch 2/3",
        "training epoch 3/3",
        "evaluating",
        "uploading artifacts",
    ]
    turns = []
    t = k.start_time()
    for st in stages[: k.n(4, 9)]:
        t += k.n(30, 120)
        turns.append(
            Turn(
                k.say(("Checking progress.",), 0.6),
                [ToolUse(tool, {"id": job}, f"state={st} updated={k.iso(t)}")],
                gap_ms=k.n(30_000, 120_000),
            )
        )
    turns.append(Turn(None, [ToolUse(tool, {"id": job}, f"state=succeeded updated={k.iso(t + 60)}")]))
    return Run(
        "Run the fine-tuning job and tell me when it is done.",
        k.agent(),
        k.model(),
        turns,
        "Fine-tuning succeeded.",
    )


@situation(
    "poll-numeric-progress",
    HEALTHY,
    "Polling a job whose only change is a number: done/total, percent",
    (gh("OpenHands/software-agent-sdk", 762), gh("OpenHands/OpenHands", 5355)),
    "Progress carried by numbers alone (rows processed, percent) is progress; the timestamp and request "
    "id that also change are not what makes it so.",
    ("volatile-footer-reread", "exact-repeat-listing"),
)
def poll_numeric(k: Kit) -> Run:
    tool = k.pick(("get_import_status", "job_progress", "export_status"))
    total = k.n(500, 50000)
    steps = k.n(5, 12)
    shape = k.n(0, 2)
    turns = []
    now = k.start_time()
    for i in range(1, steps + 1):
        now += k.n(10, 60)
        done = total * i // steps if i < steps else total
        if shape == 0:
            res = _j(
                {
                    "state": "running" if i < steps else "done",
                    "done": done,
                    "total": total,
                    "updated_at": k.iso(now),
                    "request_id": k.volatile_id(),
                }
            )
        elif shape == 1:
            res = f"progress: {100 * done // total}% ({done}/{total} rows) at {k.iso(now)}"
        else:
            res = _j({"pct": round(100 * done / total, 1), "eta_s": max(0, (steps - i) * k.n(20, 90))})
        turns.append(
            Turn(
                k.say(("Checking the import.",), 0.7),
                [ToolUse(tool, {"job": "import-42"}, res)],
                gap_ms=k.n(10_000, 60_000),
            )
        )
    return Run(
        "Import the CSV and tell me when it is finished.",
        k.agent(),
        k.model(),
        turns,
        f"Import finished: {total} rows.",
    )


@situation(
    "tail-growing-log",
    HEALTHY,
    "Tailing a build / server log that grows between calls",
    (gh("OpenHands/OpenHands", 10750), gh("OpenHands/OpenHands", 5355)),
    "Agents send the same command to see more output of long-running processes; each tail shows new "
    "lines until the build finishes.",
    ("exact-repeat-listing", "diagnostic-repeat-varied-thoughts", "ls-repeat-with-flag-variant"),
)
def tail_log(k: Kit) -> Run:
    shell, key = k.shell_tool()
    log = k.pick(("build.log", "/tmp/server.log", "logs/train.out"))
    mods = [k.word(6) for _ in range(k.n(5, 12))]
    turns = [
        Turn(
            "Starting the build in the background.",
            [ToolUse(shell, {key: f"make all > {log} 2>&1 &"}, f"[1] {k.n(1000, 60000)}")],
        )
    ]
    lines: list[str] = []
    for m in mods:
        lines.append(f"[{len(lines) + 1}/{len(mods)}] Compiling {m}.c")
        lines.append(f"    CC {m}.o")
        turns.append(
            Turn(
                k.say(("Checking the log.", "Still building."), 0.6),
                [ToolUse(shell, {key: f"tail -n 20 {log}"}, "\n".join(lines[-20:]))],
                gap_ms=k.n(5000, 30000),
            )
        )
    lines.append("BUILD SUCCESSFUL")
    turns.append(Turn(None, [ToolUse(shell, {key: f"tail -n 20 {log}"}, "\n".join(lines[-20:]))]))
    return Run(
        "Build the project and report errors if any.", k.agent(), k.model(), turns, "The build succeeded."
    )


@situation(
    "file-growing-watch",
    HEALTHY,
    "Watching an output file grow: line counts and sizes rising",
    (gh("OpenHands/OpenHands", 5355),),
    "Waiting on a long export by checking how big its output is; the numbers rise each time.",
    ("exact-repeat-listing", "volatile-footer-reread"),
)
def file_growing(k: Kit) -> Run:
    shell, key = k.shell_tool()
    f = k.pick(("out.csv", "export.jsonl", "dump.sql"))
    use_wc = k.maybe(0.5)
    n = 0
    turns = []
    for _ in range(k.n(5, 12)):
        n += k.n(500, 5000)
        out = f"{n} {f}" if use_wc else f"-rw-r--r-- 1 app app {n * 87} Mar  3 10:{k.n(10, 59)} {f}"
        turns.append(
            Turn(
                k.say(("Checking the export.",), 0.7),
                [ToolUse(shell, {key: f"wc -l {f}" if use_wc else f"ls -l {f}"}, out)],
                gap_ms=k.n(10_000, 40_000),
            )
        )
    turns.append(Turn(None, [ToolUse(shell, {key: f"tail -n 1 {f}"}, "-- export complete --")]))
    return Run(
        "Export the table and tell me when the file is complete.",
        k.agent(),
        k.model(),
        turns,
        f"Export complete: {n} lines.",
    )


@situation(
    "read-process-output-chunks",
    HEALTHY,
    "The same 'read more output' call dozens of times, each returning a new chunk",
    (gh("OpenHands/OpenHands", 10750),),
    "Agents legitimately send many empty commands to read more output of a long process; identical "
    "calls whose results are new every time are not a loop on count alone.",
    ("exact-repeat-listing", "noop-rotation"),
)
def read_chunks(k: Kit) -> Run:
    tool, args = k.pick(
        (
            ("execute_bash", {"command": "", "is_input": False}),
            ("read_output", {"session": "s1"}),
            ("bash_output", {"bash_id": "shell_1"}),
        )
    )
    turns = [
        Turn(
            "Running the full test suite; it takes a while.",
            [ToolUse("execute_bash", {"command": "pytest -x -q tests/"}, "collecting ...")],
        )
    ]
    done = 0
    for _ in range(k.n(18, 34)):
        done += k.n(20, 120)
        chunk = "\n".join(
            f"tests/{k.word(6)}/test_{k.word(5)}.py {'.' * k.n(5, 30)}" for _ in range(k.n(1, 4))
        )
        turns.append(
            Turn(None, [ToolUse(tool, args, f"{chunk}\n[{done} passed so far]")], gap_ms=k.n(2000, 10000))
        )
    turns.append(
        Turn(None, [ToolUse(tool, args, f"===== {done} passed in {k.n(300, 1200)}.{k.n(10, 99)}s =====")])
    )
    return Run(
        "Run the whole test suite and report failures.",
        k.agent(),
        k.model(),
        turns,
        f"All {done} tests passed.",
    )


@situation(
    "api-pagination",
    HEALTHY,
    "Paging through an API: page after page or cursor after cursor, new items each time",
    (gh("bytedance/deer-flow", 5486),),
    "Sequential, non-overlapping pages are progress; the report's detector capped a run for five of them.",
    ("exact-repeat-listing", "url-params-same-page"),
)
def api_pagination(k: Kit) -> Run:
    tool = k.pick(("list_issues", "list_orders", "github_api", "list_objects"))
    cursor_style = k.maybe(0.5)
    pages = k.n(4, 12)
    turns = []
    cur = None
    for p in range(1, pages + 1):
        items = [{"id": k.n(10000, 99999), "title": f"{k.word(5)} {k.word(7)}"} for _ in range(k.n(3, 5))]
        nxt = k.hex(12) if p < pages else None
        if cursor_style:
            args = {"cursor": cur} if cur else {}
            args["limit"] = 50
            res = _j({"items": items, "next_cursor": nxt})
        else:
            args = {"page": p, "per_page": 50}
            res = _j({"items": items, "page": p, "has_more": p < pages})
        cur = nxt
        turns.append(Turn(k.say(("Fetching the next page.",), 0.6), [ToolUse(tool, args, res)]))
    return Run(
        "Collect all open issues and group them by label.",
        k.agent(),
        k.model(),
        turns,
        "Grouped all issues by label.",
    )


@situation(
    "paged-file-read",
    HEALTHY,
    "Reading a large file in consecutive line windows",
    (gh("bytedance/deer-flow", 5486), gh("tailcallhq/forgecode", 1844)),
    "The framework's truncation marker tells the agent to read by start_line/end_line; following it "
    "on a large file is sequential paging, not repetition.",
    ("volatile-footer-reread", "cycle-period-4"),
)
def paged_read(k: Kit) -> Run:
    read, rkey = k.read_tool()
    p = k.path()
    size = k.pick((40, 100, 200))
    turns = []
    for w in range(k.n(4, 10)):
        a, b = w * size + 1, (w + 1) * size
        turns.append(
            Turn(
                k.say(("Reading the next part.",), 0.6),
                [
                    ToolUse(
                        read,
                        {rkey: p, "start_line": a, "end_line": b},
                        "\n".join(f"{i}: {k.word(5)} {k.word(6)}" for i in range(a, a + 6)),
                    )
                ],
            )
        )
    return Run(f"Review {p} for unsafe SQL.", k.agent(), k.model(), turns, "No unsafe SQL found.")


@situation(
    "url-params-new-results",
    HEALTHY,
    "Fetching a report URL for successive date ranges, different data each time",
    (gh("firecrawl/firecrawl", 892),),
    "Changes to query parameters that select different content (a date range, a page) return different "
    "content; each call is new data.",
    ("url-params-same-page", "reworded-search-same-answer", "date-range-respelled-empty"),
)
def url_params_new(k: Kit) -> Run:
    tool = k.pick(("fetch", "http_get", "fetch_page"))
    host = f"https://api.{k.word(6)}.com/v1/sales"
    turns = []
    for m in range(1, k.n(4, 12) + 1):
        start, end = f"2026-{m:02d}-01", f"2026-{m:02d}-28"
        turns.append(
            Turn(
                k.say((f"Fetching month {m}.",), 0.6),
                [
                    ToolUse(
                        tool,
                        {"url": f"{host}?from={start}&to={end}"},
                        _j(
                            {
                                "from": start,
                                "to": end,
                                "revenue": k.n(10000, 900000),
                                "orders": k.n(100, 9000),
                            }
                        ),
                    )
                ],
            )
        )
    return Run(
        "Give me monthly revenue for this year.", k.agent(), k.model(), turns, "Monthly revenue table ready."
    )


@situation(
    "fix-tests-decreasing",
    HEALTHY,
    "Re-running the same test command after each fix, failures going down",
    (gh("QwenLM/qwen-code", 9733),),
    "The same command, different results: 12 failed, 9 failed, 3 failed, all passed; repeating the "
    "check is how the agent measures its progress.",
    ("diagnostic-repeat-varied-thoughts", "reverify-after-done"),
)
def fix_tests(k: Kit) -> Run:
    shell, key = k.shell_tool()
    failing = k.n(6, 15)
    turns = []
    cmd = k.pick(("pytest -q", "npm test", "go test ./..."))
    while failing > 0:
        turns.append(
            Turn(
                k.say(("Running the tests.",), 0.5),
                [ToolUse(shell, {key: cmd}, f"{failing} failed, {k.n(40, 200)} passed")],
            )
        )
        f = k.path()
        turns.append(
            Turn(
                f"Fixing {f}.",
                [ToolUse("edit", {"file_path": f, "old_string": k.word(6), "new_string": k.word(6)}, "OK")],
            )
        )
        failing -= k.n(1, 5)
    turns.append(Turn(None, [ToolUse(shell, {key: cmd}, f"0 failed, {k.n(40, 200)} passed")]))
    return Run("Make the test suite pass.", k.agent(), k.model(), turns, "All tests pass.")


@situation(
    "queue-drain",
    HEALTHY,
    "Taking tasks from a work queue one by one until it is empty",
    (gh("nj4x/skills-dev", 47),),
    "An agent looping over a work queue: the same 'next task' call, a different task each time and a "
    "count of work remaining that falls.",
    ("exact-repeat-listing", "save-memory-repeat"),
)
def queue_drain(k: Kit) -> Run:
    n = k.n(4, 10)
    turns = []
    for left in range(n - 1, -1, -1):
        tid = f"T-{k.n(100, 999)}"
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        k.pick(("next_task", "dequeue")),
                        {},
                        f"task {tid}: {k.word(6)} {k.word(5)}; {left} pending",
                    )
                ],
            )
        )
        turns.append(
            Turn(
                k.say((f"Doing {tid}.",), 0.6),
                [ToolUse("complete_task", {"id": tid, "note": k.word(8)}, "ok")],
            )
        )
    turns.append(Turn(None, [ToolUse("next_task", {}, "queue empty")]))
    return Run("Work through the task queue.", k.agent(), k.model(), turns, f"Finished {n} tasks.")


@situation(
    "reread-after-edits",
    HEALTHY,
    "Reading the same file again after each edit; its content changed every time",
    (gh("RooCodeInc/Roo-Code", 1866),),
    "Re-reading a file after changing it is how edits are checked; the same call with a new result "
    "each time is progress.",
    ("volatile-footer-reread", "apply-diff-fail-reread"),
)
def reread_after_edits(k: Kit) -> Run:
    read, rkey = k.read_tool()
    p = k.path()
    lines = [f"def {k.word(5)}():" for _ in range(k.n(4, 8))]
    turns = []
    for _ in range(k.n(3, 6)):
        new = f"def {k.word(6)}():"
        turns.append(
            Turn(
                k.say(("Adding a function.",), 0.5),
                [
                    ToolUse(
                        "edit",
                        {"file_path": p, "old_string": lines[-1], "new_string": lines[-1] + "\n" + new},
                        "OK",
                    )
                ],
            )
        )
        lines.append(new)
        turns.append(Turn(None, [ToolUse(read, {rkey: p}, "\n".join(lines))]))
    return Run(f"Add the missing helpers to {p}.", k.agent(), k.model(), turns, "Helpers added.")


@situation(
    "broadcast-messages",
    HEALTHY,
    "Sending a different message to each of many recipients, each answered with a new message id",
    (gh("QwenLM/qwen-code", 610), gh("google-gemini/gemini-cli", 8232)),
    "Batch work through one tool: each call goes to a different recipient; the fresh ids in the answers "
    "are the messages that were created.",
    ("send-retry-volatile-ids", "save-memory-repeat"),
)
def broadcast(k: Kit) -> Run:
    tool = k.pick(("send_message", "slack_post", "post_comment", "send_email"))
    people = k.sample(
        ("ana", "bo", "chen", "dara", "eli", "fatima", "gus", "hana", "ivan", "jo", "kai", "lea"), k.n(5, 12)
    )
    turns = k.prelude(0, 1)
    for p in people:
        args = {"to": f"@{p}", "text": f"Hi {p}, your review of {k.path()} is due {k.clock()[:10]}."}
        turns.append(
            Turn(
                k.say((f"Notifying {p}.",), 0.6),
                [
                    ToolUse(
                        tool,
                        args,
                        _j(
                            {
                                "ok": True,
                                "ts": f"{k.n(1700000000, 1800000000)}.{k.n(100000, 999999)}",
                                "id": k.volatile_id(),
                            }
                        ),
                    )
                ],
            )
        )
    return Run(
        "Remind every reviewer of their due review.",
        k.agent(),
        k.model(),
        turns,
        f"Reminded {len(people)} reviewers.",
    )


@situation(
    "shell-exploration-distinct",
    HEALTHY,
    "Exploring a codebase with one shell tool: different searches, different findings",
    (gh("QwenLM/qwen-code", 9733), gh("google-gemini/gemini-cli", 8234)),
    "Many shell calls in a row, each a different question with a different answer: investigation, not "
    "repetition.",
    ("shell-variants-same-output", "noop-rotation", "diagnostic-repeat-varied-thoughts"),
)
def shell_exploration(k: Kit) -> Run:
    shell, key = k.shell_tool()
    turns = k.prelude(0, 1)
    for sym in k.sample(
        (
            "Router",
            "parse_config",
            "RetryPolicy",
            "handle_event",
            "Session",
            "cache_key",
            "Backoff",
            "emit_metric",
            "load_plugins",
            "Scheduler",
        ),
        k.n(5, 9),
    ):
        f = k.path()
        turns.append(
            Turn(
                k.say((f"Where is {sym} used?",), 0.6),
                [
                    ToolUse(
                        shell,
                        {key: f"grep -rn {sym} src | head -5"},
                        f"{f}:{k.n(1, 400)}: {sym}({k.word(5)})\n{k.path()}:{k.n(1, 400)}: import {sym}",
                    )
                ],
            )
        )
    return Run(
        "Map how events flow through the service.", k.agent(), k.model(), turns, "Event flow documented."
    )


# ======================================================================================
# Issue 27's five classes: the changing part of the arguments is the work, a patient wait,
# the same conclusion restated, a tool rate-limited every time, a tool that does not exist
# ======================================================================================


def _wait_step(k: Kit, seconds: int, shape: tuple[str, str] | None = None) -> ToolUse:
    """A sleep between polls or retries, in one of the shapes agents give it."""
    name, form = shape or ("sleep", "seconds")
    if form == "command":
        return ToolUse(name, {"command": f"sleep {seconds}"}, "", duration_ms=seconds * 1000)
    if form == "ms":
        return ToolUse(
            name, {"ms": seconds * 1000}, f"waited {seconds * 1000} ms", duration_ms=seconds * 1000
        )
    return ToolUse(
        name, {form: seconds}, k.pick(("", f"Slept for {seconds} seconds.", "ok")), duration_ms=seconds * 1000
    )


def _wait_shape(k: Kit) -> tuple[str, str]:
    return k.pick(
        (
            ("sleep", "seconds"),
            ("wait", "seconds"),
            ("bash", "command"),
            ("time_sleep", "duration"),
            ("delay", "ms"),
        )
    )


@situation(
    "label-many-issues-ok",
    HEALTHY,
    "Labelling many different issues, the issue number the only argument that changes, 'ok' each time",
    (gh("QwenLM/qwen-code", 610), gh("google-gemini/gemini-cli", 8232)),
    "Batch triage: the same label applied to a different issue on every call; the target id is the "
    "work, not a cosmetic change, however identical the acknowledgement.",
    ("save-memory-repeat", "send-retry-volatile-ids", "update-same-record-respelled"),
)
def label_many_issues(k: Kit) -> Run:
    tool, key = k.pick(
        (
            ("add_labels", "issue_number"),
            ("label_issue", "issue"),
            ("set_ticket_tag", "ticket_id"),
            ("update_issue", "id"),
        )
    )
    label = k.pick(("bug", "needs-triage", "area/docs", "good first issue"))
    as_text = k.maybe(0.3)
    prefix = k.pick(("", "PROJ-", "#"))
    start = k.n(100, 9000)
    numbers = sorted(k.sample(range(start, start + 400), k.n(8, 17)))
    ack = k.pick(("ok", '{"ok":true}', "Labels updated.", "done"))
    turns = [
        Turn(
            "Listing the open issues.",
            [
                ToolUse(
                    "list_issues",
                    {"state": "open", "label": "none"},
                    _j([{"number": n, "title": k.word(7)} for n in numbers]),
                )
            ],
        )
    ]
    for n in numbers:
        target = f"{prefix}{n}" if (as_text or prefix) else n
        turns.append(
            Turn(
                k.say((f"Labelling {prefix}{n}.",), 0.6),
                [ToolUse(tool, {key: target, "labels": [label]}, ack)],
            )
        )
    return Run(
        f"Add the '{label}' label to every open issue that has none.",
        k.agent(),
        k.model(),
        turns,
        f"Labelled {len(numbers)} issues.",
    )


@situation(
    "draft-saved-new-content",
    HEALTHY,
    "Saving the same draft again and again, each time with new content, answered 'saved'",
    (gh("QwenLM/qwen-code", 610),),
    "Writing in passes: the draft id stays, the body written changes on every save; a different body "
    "is different work even when the store answers the same short 'saved'.",
    ("save-memory-repeat",),
)
def draft_saved(k: Kit) -> Run:
    tool, idkey, bodykey = k.pick(
        (
            ("save_draft", "draft_id", "body"),
            ("update_document", "doc_id", "content"),
            ("write_note", "note", "text"),
        )
    )
    doc = k.pick((f"d-{k.hex(6)}", "release-notes", k.n(10, 999)))
    ack = k.pick(("saved", "Draft saved.", '{"status":"saved"}', "ok"))
    paragraphs: list[str] = []
    turns = k.prelude(0, 1)
    for i in range(k.n(4, 8)):
        paragraphs.append(f"{k.word(5).capitalize()} {k.word(7)} {k.word(4)} {k.word(8)} section {i + 1}.")
        turns.append(
            Turn(
                k.say(("Adding the next section.", "Saving progress."), 0.4),
                [ToolUse(tool, {idkey: doc, bodykey: "\n\n".join(paragraphs)}, ack)],
            )
        )
    return Run(
        "Write the release notes draft section by section.",
        k.agent(),
        k.model(),
        turns,
        "The draft is complete.",
    )


@situation(
    "backoff-sleep-grows-then-succeeds",
    HEALTHY,
    "A tool rate-limited a few times, a backoff sleep growing 15 -> 30 -> 60 s between, then it answers",
    (gh("nesquena/hermes-webui", 4980), gh("sinas-platform/sinas", 131)),
    "Exponential backoff: each wait is longer (a different duration, not a cosmetic change), the retries "
    "end in success and the work goes on.",
    ("tool-rate-limited-every-time", "rate-limit-storm-never-recovers"),
)
def backoff_sleep_grows(k: Kit) -> Run:
    tool = k.pick(("fetch_orders", "http_get", "query_metrics"))
    args = (
        {"url": f"https://api.{k.word(6)}.com/v2/{k.word(5)}"}
        if tool == "http_get"
        else {"since": "2026-05-01"}
    )
    shape = _wait_shape(k)
    turns = k.prelude(0, 2)
    delay = k.pick((10, 15, 5))
    for _ in range(k.n(2, 4)):
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        tool,
                        args,
                        error=f"429 Too Many Requests: retry after {delay}s",
                        error_type="HTTPError",
                    )
                ],
            )
        )
        turns.append(
            Turn(k.say((f"Rate limited; waiting {delay} seconds.",), 0.5), [_wait_step(k, delay, shape)])
        )
        delay *= 2
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    tool, args, _j({"rows": [{"id": k.n(1, 999), "total": k.n(10, 900)} for _ in range(4)]})
                )
            ],
        )
    )
    turns.append(
        Turn(
            "Writing the summary.",
            [ToolUse("write_file", {"path": "report.md", "content": f"# Report\n{k.word(9)}"}, "ok")],
        )
    )
    return Run("Fetch the latest orders and write a report.", k.agent(), k.model(), turns, "Report written.")


@situation(
    "update-same-record-respelled",
    LOOP,
    "The same update sent again and again, respelled (whitespace, case, key order, a fresh request id)",
    (gh("openclaw/openclaw", 68923), gh("langchain-ai/langgraph", 4231)),
    "The record and the values written are the same every time; only spelling and a client request id "
    "change, the store answers 'updated' each time and the agent never moves on: nothing new is written.",
    (),
)
def update_same_record(k: Kit) -> Run:
    tool = k.pick(("update_record", "upsert_contact", "patch_customer"))
    rid = k.pick((k.n(1000, 99999), f"cus_{k.hex(10)}"))
    email = f"{k.word(6)}@{k.word(5)}.com"
    city = k.pick(("Berlin", "Lisbon", "Austin", "Osaka"))
    ack = k.pick(("updated", '{"updated":true}', "Record updated."))
    spellings = [email, email.upper(), f" {email} ", email.capitalize()]
    turns = k.prelude(0, 1)
    for _i in range(k.n(5, 9)):
        fields = {"email": k.pick(spellings), "city": k.pick((city, city.lower(), f"{city} "))}
        args = {"id": rid, "fields": fields, "request_id": k.volatile_id()}
        if k.maybe(0.5):
            args = {
                "request_id": args["request_id"],
                "fields": dict(reversed(list(fields.items()))),
                "id": rid,
            }
        turns.append(
            Turn(
                k.say(("Updating the record.", "Let me make sure the update went through.")),
                [ToolUse(tool, args, ack)],
            )
        )
    final, failure = k.give_up()
    return Run("Update the customer's email and city.", k.agent(), k.model(), turns, final, failure)


def _job_polls(
    k: Kit, statuses: list[str], sleep_shape: tuple[str, str], growing: bool
) -> tuple[str, str, list[Turn]]:
    tool = k.pick(("get_job_status", "check_pipeline", "describe_export", "training_status"))
    job = k.pick((f"job-{k.hex(8)}", k.uuid(), str(k.n(10000, 99999))))
    json_form = k.maybe(0.5)
    turns = [
        Turn(
            "Starting the job.",
            [
                ToolUse(
                    k.pick(("start_job", "submit_export", "trigger_pipeline")),
                    {"name": k.word(6)},
                    f"started {job}",
                )
            ],
        )
    ]
    delay = k.pick((10, 20, 30))
    for status in statuses:
        turns.append(
            Turn(
                k.say(("Waiting before the next check.", "Still running; waiting."), 0.5),
                [_wait_step(k, delay, sleep_shape)],
            )
        )
        if growing:
            delay = min(delay * 2, 300)
        result = _j({"job_id": job, "status": status}) if json_form else f"Job {job}: {status}"
        turns.append(Turn(None, [ToolUse(tool, {"job_id": job}, result)]))
    return tool, job, turns


@situation(
    "poll-sleep-queued-running-succeeded",
    HEALTHY,
    "A job polled 6-8 times with a sleep between polls, 'queued' then 'running', then 'succeeded' and more work",
    (gh("macanderson/stella", 2022), gh("Lumvale/amir-loop", 134), gh("OpenHands/software-agent-sdk", 762)),
    "A patient wait: poll, sleep, poll... identical statuses until the job ends; the answer 'succeeded' "
    "was never given before and the agent goes on to use the result. The cycle on the way was the wait.",
    ("poll-never-ends", "alternating-period-2", "poll-done-keeps-polling"),
)
def poll_sleep_then_succeeded(k: Kit) -> Run:
    queued = k.n(2, 4)
    statuses = ["queued"] * queued + ["running"] * k.n(6 - queued, 8 - queued) + ["succeeded"]
    _tool, job, turns = _job_polls(k, statuses, _wait_shape(k), k.maybe(0.3))
    turns.append(
        Turn(
            "The job is done; fetching the results.",
            [
                ToolUse(
                    k.pick(("get_job_result", "download_output")),
                    {"job_id": job},
                    _j({"rows": k.n(1000, 90000), "path": f"s3://out/{k.word(6)}.parquet"}),
                )
            ],
        )
    )
    turns.append(
        Turn(
            None, [ToolUse("write_file", {"path": "summary.md", "content": f"Export {job} finished."}, "ok")]
        )
    )
    return Run(
        "Run the export job and summarise its output.",
        k.agent(),
        k.model(),
        turns,
        "The export finished; summary written.",
    )


@situation(
    "poll-never-ends",
    LOOP,
    "A job polled 8-12 times with sleeps between, the same 'running' every time, until the run is cut off",
    (gh("macanderson/stella", 2022), gh("IntertechInc/claude-agent-team-feedback", 99)),
    "The status never changes and the agent does nothing but wait and ask again until the turn limit; "
    "the same answer every time, nothing new arrives and the run ends without the job ending.",
    (),
)
def poll_never_ends(k: Kit) -> Run:
    status = k.pick(("running", "pending", "in_progress"))
    _, _, turns = _job_polls(k, [status] * k.n(8, 12), _wait_shape(k), False)
    final, failure = k.give_up()
    return Run("Run the export job and summarise its output.", k.agent(), k.model(), turns, final, failure)


@situation(
    "poll-done-keeps-polling",
    LOOP,
    "The job answered 'succeeded', then the agent keeps polling it and gets 'succeeded' again and again",
    (gh("amd/gaia", 3751), gh("Lumvale/amir-loop", 134)),
    "The wait ended, but the agent does not act on it: the same finished status 5-7 more times with "
    "nothing new between, until it is stopped.",
    (),
)
def poll_done_keeps_polling(k: Kit) -> Run:
    statuses = ["running"] * k.n(2, 4) + ["succeeded"] * k.n(6, 8)
    _, _, turns = _job_polls(k, statuses, _wait_shape(k), False)
    final, failure = k.give_up()
    return Run("Run the export job and summarise its output.", k.agent(), k.model(), turns, final, failure)


_REGIONS = ("North", "South", "East", "West", "Central", "Pacific", "Atlantic", "Midwest")


def _paraphrases(k: Kit, total: int, count: int, top: str, share: int) -> list[str]:
    t_comma, t_plain = f"{total:,}", str(total)
    forms = [
        f"Let me double-check. Adding the {count} regional figures again gives ${t_comma}, and {top} is still the largest at {share}% of the total.",
        f"Re-verifying: the sum across all {count} regions comes to {t_plain} dollars. The biggest contributor remains {top} ({share}%).",
        f"Wait, I should confirm once more. Total revenue = ${t_comma}; top region: {top}, {share} percent.",
        f"Going through the table a second time, I get {t_plain} in total over {count} regions, with {top} leading at {share}%.",
        f"To be sure, recomputing from scratch: {count} regions, grand total ${t_comma}. {top} accounts for {share}% and is the top one.",
        f"Hmm, one more pass. {top} contributes {share}%, the most of any region, and the overall figure is {t_plain}.",
        f"I want to be certain before answering. Summing again: ${t_comma} total; {top} leads with a {share}% share of {count} regions.",
        f"Checking my arithmetic again: the {count} values add up to {t_comma}. Largest share: {top} at {share}%.",
        f"Let me reconsider the totals. It is ${t_comma} across {count} regions; {top} ({share}%) is first.",
    ]
    return k.shuffle(forms)


@situation(
    "reconsider-same-conclusion",
    LOOP,
    "Asked to confirm, the model reconsiders 6-9 times, worded differently, always the same figures, never answers",
    (gh("CommandCodeAI/command-code", 582), gh("google-gemini/gemini-cli", 16342), gh("antirez/ds4", 646)),
    "Each turn restates the same total, the same top region and the same share in new words: what is "
    "asserted repeats while the wording changes, nothing new is computed and the run never finishes.",
    ("monologue-same-message",),
)
def reconsider_same_conclusion(k: Kit) -> Run:
    count = k.n(4, 8)
    total = k.n(12_000, 990_000)
    top = k.pick(_REGIONS)
    share = k.n(22, 48)
    texts = _paraphrases(k, total, count, top, share)[: k.n(6, 9)]
    turns = [Turn(t) for t in texts]
    _final, failure = k.give_up()
    return Run(
        "Sum the regional revenue table and name the top region. Confirm before answering.",
        k.agent(),
        k.model(),
        turns,
        None,
        failure or "MaxTurnsExceeded: Max turns (10) exceeded",
    )


@situation(
    "reasoning-refines-figures",
    HEALTHY,
    "Model-only turns working a problem: each turn computes new figures, then a final answer",
    (gh("antirez/ds4", 646), gh("google-gemini/gemini-cli", 16342)),
    "Several reasoning turns with no tools, each asserting figures not asserted before (a subtotal, a "
    "correction, the next region), ending in an answer: new conclusions, not the same one restated.",
    ("reconsider-same-conclusion", "monologue-same-message"),
)
def reasoning_refines(k: Kit) -> Run:
    regions = k.sample(_REGIONS, k.n(4, 6))
    values = [k.n(1000, 90000) for _ in regions]
    turns = []
    running = 0
    for region, value in zip(regions, values, strict=True):
        running += value
        turns.append(
            Turn(
                k.pick(
                    (
                        f"{region} contributes ${value:,}; running total {running:,}.",
                        f"Adding {region}: {value} brings the subtotal to {running}.",
                        f"Next, {region} at {value:,}, so far ${running:,}.",
                    )
                )
            )
        )
    top = regions[values.index(max(values))]
    if k.maybe(0.5):
        turns.append(Turn(f"Let me double-check: the total is ${running:,} and {top} is the largest."))
    return Run(
        "Sum the regional revenue table and name the top region.",
        k.agent(),
        k.model(),
        turns,
        f"Total ${running:,}; top region {top}.",
    )


def _rate_limit_error(k: Kit, wait: int) -> str:
    return k.pick(
        (
            f"429 Too Many Requests: rate limit exceeded (request id req_{k.hex(12)}); retry after {wait}s",
            f"Error: HTTP 429 - quota exceeded, {k.n(0, 3)}/{k.pick((60, 100))} requests left, resets in {k.n(5, 59)}s [trace {k.hex(8)}]",
            _j(
                {
                    "error": {
                        "code": 429,
                        "message": "Rate limit reached",
                        "request_id": k.uuid(),
                        "retry_after": wait,
                    }
                }
            ),
        )
    )


@situation(
    "tool-rate-limited-every-time",
    LOOP,
    "The same tool call answered 429 6-10 times, sleeps between, volatile ids in the error; the run ends in the storm",
    (
        gh("librefang/librefang", 5168),
        gh("definableai/definable.ai", 27),
        gh("NousResearch/hermes-agent", 12401),
    ),
    "Every attempt is rate-limited and the run ends without one success: the same failure again and "
    "again (request ids and reset counters in the text are not new information), whether the error is "
    "on the span or in the result text.",
    ("backoff-sleep-grows-then-succeeds", "tool-rate-limited-then-succeeds"),
)
def tool_rate_limited_every_time(k: Kit) -> Run:
    tool = k.pick(("search_flights", "get_quotes", "geocode", "translate_text"))
    args = {"query": f"{k.word(6)} {k.word(5)}"}
    shape = _wait_shape(k)
    in_result = k.maybe(0.35)
    turns = k.prelude(0, 2)
    wait = k.pick((5, 10, 30))
    for _ in range(k.n(6, 10)):
        err = _rate_limit_error(k, wait)
        call = (
            ToolUse(tool, args, f"Error: {err}")
            if in_result
            else ToolUse(tool, args, error=err, error_type=k.pick(("RateLimitError", "HTTPError")))
        )
        turns.append(Turn(k.say(("Trying again.", "Retrying the request."), 0.5), [call]))
        if k.maybe(0.8):
            turns.append(Turn(None, [_wait_step(k, wait + k.n(0, 3), shape)]))
    final = k.pick((None, "The service keeps rate-limiting me; I could not finish."))
    return Run(
        "Find the cheapest option for the trip.",
        k.agent(),
        k.model(),
        turns,
        final,
        k.pick((None, "MaxTurnsExceeded: Max turns (25) exceeded")),
    )


@situation(
    "tool-rate-limited-then-succeeds",
    HEALTHY,
    "A tool answered 429 six to eight times with sleeps between, then it answers and the work goes on",
    (gh("sinas-platform/sinas", 131), gh("nesquena/hermes-webui", 4980)),
    "A long rate-limit window that ends: the call finally succeeds and its result is used; a storm "
    "that recovers is patience, not a loop.",
    ("tool-rate-limited-every-time",),
)
def tool_rate_limited_then_succeeds(k: Kit) -> Run:
    tool = k.pick(("search_flights", "get_quotes", "geocode"))
    args = {"query": f"{k.word(6)} {k.word(5)}"}
    shape = _wait_shape(k)
    turns = k.prelude(0, 1)
    wait = k.pick((5, 10, 30))
    for _ in range(k.n(6, 8)):
        turns.append(
            Turn(None, [ToolUse(tool, args, error=_rate_limit_error(k, wait), error_type="RateLimitError")])
        )
        turns.append(Turn(None, [_wait_step(k, wait, shape)]))
    turns.append(
        Turn(
            None, [ToolUse(tool, args, _j([{"option": k.word(5), "price": k.n(90, 900)} for _ in range(3)]))]
        )
    )
    turns.append(
        Turn(
            "Comparing the options.",
            [ToolUse("write_file", {"path": "options.md", "content": k.word(12)}, "ok")],
        )
    )
    return Run(
        "Find the cheapest option for the trip.", k.agent(), k.model(), turns, "Found the cheapest option."
    )


def _tool_names(k: Kit) -> list[str]:
    base = k.pick((("search", "docs"), ("lookup", "user"), ("query", "database"), ("fetch", "webpage")))
    a, b = base
    forms = [
        f"{a}_{b}",
        f"{a}{b.capitalize()}",
        f"{b}_{a}",
        f"{a}-{b}",
        f"{a}_{b}s",
        f"{b}{a.capitalize()}",
        f"{a.capitalize()}{b.capitalize()}",
        f"{a}_the_{b}",
        f"{a}_{b}_tool",
        f"{b}.{a}",
    ]
    return forms


def _unknown_tool_error(k: Kit, name: str, available: list[str], style: int) -> str:
    listed = ", ".join(available)
    return (
        f"{name} is not a valid tool, try one of [{listed}].",
        f"Unknown tool '{name}'. Available tools: {listed}",
        f"Tool with name '{name}' is not available. Please try again with one of these available tools: [{listed}]",
    )[style]


@situation(
    "unknown-tool-name-variants",
    LOOP,
    "The model calls a tool that does not exist under 6-10 spellings, rejected each time with the same tool list",
    (
        gh("tinyhumansai/openhuman", 4118),
        gh("langchain-ai/langchain", 10240),
        gh("langchain-ai/langchain", 1559),
    ),
    "search_docs, searchDocs, docs_search...: every call is refused with the same list of available tools; "
    "the name wobbles, the failure does not, and the agent never calls a tool that exists. Recorded as a "
    "failed tool span, as a result text, or (LangGraph) with no tool span at all.",
    ("unknown-tool-then-right-tool",),
)
def unknown_tool_variants(k: Kit) -> Run:
    available = k.sample(("read_file", "list_dir", "http_get", "grep", "write_file", "run_tests"), k.n(3, 5))
    style = k.n(0, 2)
    form = k.pick(("span_error", "result_text", "no_span"))
    names = _tool_names(k)
    turns = k.prelude(0, 1)
    query = {"query": k.pick(("retry policy", "auth settings", "rate limits"))}
    for i in range(k.n(6, 10)):
        name = names[i % len(names)]
        err = _unknown_tool_error(k, name, available, style)
        if form == "span_error":
            call = ToolUse(name, query, error=err, error_type="ToolNotFoundError")
        else:
            call = ToolUse(name, query, f"Error: {err}", span=form != "no_span")
        turns.append(
            Turn(k.say(("Let me search the documentation.", "I'll try the search tool again."), 0.5), [call])
        )
    final, failure = k.give_up()
    return Run("Find what the docs say about the retry policy.", k.agent(), k.model(), turns, final, failure)


@situation(
    "unknown-tool-then-right-tool",
    HEALTHY,
    "A call to a tool that does not exist, once or twice, then a tool that exists and the work goes on",
    (gh("run-llama/llama_index", 7170), gh("OpenHands/software-agent-sdk", 544)),
    "The model guesses a tool name, reads the list of available tools in the rejection and calls the "
    "right one: a mistake corrected, not a loop.",
    ("unknown-tool-name-variants",),
)
def unknown_tool_then_right(k: Kit) -> Run:
    available = ["read_file", "grep", "list_dir"]
    style = k.n(0, 2)
    form = k.pick(("span_error", "result_text", "no_span"))
    names = _tool_names(k)
    turns = k.prelude(0, 1)
    query = {"query": "retry policy"}
    for i in range(k.n(1, 2)):
        err = _unknown_tool_error(k, names[i], available, style)
        call = (
            ToolUse(names[i], query, error=err, error_type="ToolNotFoundError")
            if form == "span_error"
            else ToolUse(names[i], query, f"Error: {err}", span=form != "no_span")
        )
        turns.append(Turn(None, [call]))
    turns.append(
        Turn(
            "Using grep instead.",
            [
                ToolUse(
                    "grep",
                    {"pattern": "retry", "path": "docs/"},
                    "docs/retry.md:12: Retries use exponential backoff (max 5).",
                )
            ],
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "read_file",
                    {"path": "docs/retry.md"},
                    "# Retry policy\nUp to 5 retries, backoff 2^n seconds.",
                )
            ],
        )
    )
    return Run(
        "Find what the docs say about the retry policy.",
        k.agent(),
        k.model(),
        turns,
        "Up to 5 retries with exponential backoff.",
    )


# --- lessons of the first look of batch 5: the same "nothing", the same conclusion, the same value


@situation(
    "memory-recall-query-variants",
    LOOP,
    "A memory recall tool asked again and again under new queries, each answer quoting the query and finding nothing",
    (gh("NousResearch/hermes-agent", 112920), gh("quintonmiller/tailored-ai", 528)),
    "Every query is different, so no two calls are the same, but each answer is the same 'no memories' with the "
    "query quoted back, and the queries keep coming back to the same words: nothing is learned after the first, "
    "and the tool the task needed is never called.",
)
def memory_recall_query_variants(k: Kit) -> Run:
    tool = k.pick(("memory_recall", "recall_memories", "memory_search"))
    queries = k.shuffle(
        [
            "openuv",
            "OpenUV Home Assistant",
            "uv index",
            "home assistant uv sensor",
            "openuv api key",
            "uv sensor integration",
            "openuv integration",
            "api key uv",
        ]
    )
    shape = k.pick(
        (
            lambda q: f"No memories found for '{q}'.",
            lambda q: _j({"query": q, "memories": [], "count": 0}),
            lambda q: f"0 results for {q}",
        )
    )
    turns = k.prelude(0, 1)
    for query in queries[: k.n(6, 8)]:
        turns.append(
            Turn(k.say(("Let me check what I remember about this.", "Maybe it is stored under another name.")),
                 [ToolUse(tool, {"query": query}, shape(query))])
        )  # fmt: skip
    final, failure = k.give_up()
    return Run("What is the UV index at home right now?", k.agent(), k.model(), turns, final, failure)


@situation(
    "memory-recall-distinct-facts",
    HEALTHY,
    "Several unrelated facts looked up in memory, each not found with the query quoted back, then the agent asks the user",
    (gh("NousResearch/hermes-agent", 112920), gh("agno-agi/agno", 2931)),
    "The same 'no memories' answer comes back each time, but each query is about something else (a birthday, a "
    "city, an employer, a pet): a batch of different questions, each answered once, after which the agent moves "
    "on and asks the user for what it lacks.",
    ("memory-recall-query-variants", "empty-result-retry"),
)
def memory_recall_distinct_facts(k: Kit) -> Run:
    tool = k.pick(("memory_recall", "recall_memories", "memory_search"))
    facts = k.shuffle(
        ["birthday", "hometown", "employer", "favourite cuisine", "pet name", "dietary restrictions"]
    )
    turns = k.prelude(0, 1)
    for fact in facts[: k.n(4, 6)]:
        turns.append(Turn(None, [ToolUse(tool, {"query": fact}, f"No memories found for '{fact}'.")]))
    turns.append(
        Turn(
            "I have none of these on record yet.",
            [ToolUse("save_memory", {"key": "profile_asked", "value": "yes"}, "Stored.")],
        )
    )
    return Run(
        "Plan a birthday dinner for me.",
        k.agent(),
        k.model(),
        turns,
        "I don't have your birthday, city or dietary needs yet: could you tell me those?",
    )


@situation(
    "job-statuses-each-named",
    HEALTHY,
    "One status check per build job, each answer naming its job and all of them queued, then the release goes on",
    (gh("chaitin/MonkeyCode", 1075), gh("google-gemini/gemini-cli", 14369)),
    "Each call asks about a different job and each answer says the same thing about it, naming it: the same "
    "state of several things is a survey, not the same answer to a reworded question; the agent then starts "
    "the release.",
    ("memory-recall-query-variants",),
)
def job_statuses_each_named(k: Kit) -> Run:
    tool = k.pick(("get_job", "job_status", "get_build"))
    jobs = k.sample(
        ["build-api", "build-web", "build-worker", "build-docs", "build-cli", "build-admin"], k.n(4, 6)
    )
    state = k.pick(("queued behind the release build", "waiting for a runner", "not started yet"))
    turns = k.prelude(0, 1)
    for job in jobs:
        turns.append(Turn(None, [ToolUse(tool, {"job": job}, f"Job {job} is {state}.")]))
    turns.append(
        Turn("All builds are lined up; starting the release.", [ToolUse("start_release", {"tag": "v2.4.0"}, _j({"release": "v2.4.0", "state": "started"}))])
    )  # fmt: skip
    return Run(
        "Check the build jobs and start the v2.4.0 release.",
        k.agent(),
        k.model(),
        turns,
        "Release v2.4.0 started.",
    )


@situation(
    "completion-restated-idle",
    LOOP,
    "After the work, the model keeps answering a continuation prompt by restating that it is done, in new words",
    (gh("chaitin/MonkeyCode", 1075), gh("google-gemini/gemini-cli", 14369), gh("OpenHands/OpenHands", 1210)),
    "The edit is made and the tests pass; after that every turn is another statement that the inspection is "
    "complete (with the same file and the same test count) or that nothing is pending, with no tool call and "
    "nothing new. The run cannot end on its own and is cancelled.",
)
def completion_restated_idle(k: Kit) -> Run:
    component = k.pick(
        ("src/components/ProductCard.tsx", "app/views/cart_summary.py", "lib/ui/price_tag.dart")
    )
    tests = k.n(12, 60)
    shell, key = k.shell_tool()
    turns = k.prelude(0, 1)
    turns.append(
        Turn(
            "Updating the component.",
            [ToolUse("edit_file", {"path": component, "patch": "+ stock badge"}, f"Edited {component}")],
        )
    )
    turns.append(Turn(None, [ToolUse(shell, {key: "npm test"}, f"Tests: {tests} passed, {tests} total")]))
    with_claims = (
        f"Inspection complete. {component} has the stock badge and all {tests} tests pass.",
        f"The work is finished: {component} updated, {tests} of {tests} tests green.",
        f"Done. {component} is updated and the {tests} tests pass; nothing else to change.",
    )
    claimless = (
        "Nothing is pending.",
        "I'll wait for your next instruction.",
        "There is nothing further for me to do here.",
    )
    for _ in range(k.n(5, 8)):
        turns.append(Turn(k.pick(with_claims) if k.maybe(0.6) else k.pick(claimless)))
    turns.append(Turn(k.pick(with_claims)))
    turns.append(Turn(k.pick(with_claims)))
    return Run(
        f"Add a stock badge to {component}.",
        k.agent(),
        k.model(),
        turns,
        None,
        "AbortError: cancelled by the user",
    )


@situation(
    "stepwise-report-with-asides",
    HEALTHY,
    "A model-only report, one message per finished step, each naming new files and figures, with short asides between",
    (gh("chaitin/MonkeyCode", 1075), gh("CommandCodeAI/command-code", 582)),
    "Several messages in a row with no tool call, some saying only 'Moving on.', look like a run restating "
    "itself; but each report names a new file and new figures, and the run ends with the summary.",
    ("completion-restated-idle", "reconsider-same-conclusion"),
)
def stepwise_report_with_asides(k: Kit) -> Run:
    steps = k.sample(
        [
            ("backend/schema.sql", "3 tables"),
            ("backend/routes.py", "5 endpoints"),
            ("backend/auth.py", "2 token types"),
            ("frontend/Login.tsx", "1 form with 4 fields"),
            ("frontend/Cart.tsx", "6 components"),
            ("docs/API.md", "12 examples"),
        ],
        k.n(4, 6),
    )
    asides = ("Moving on.", "Next step.", "Continuing.")
    turns = k.prelude(0, 1)
    for i, (path, figure) in enumerate(steps):
        turns.append(Turn(f"Step {i + 1} done: {path} written, {figure}."))
        if k.maybe(0.6):
            turns.append(Turn(k.pick(asides)))
    return Run(
        "Report what was built, step by step.", k.agent(), k.model(), turns, "All steps are reported above."
    )


@situation(
    "same-memory-upserted-again",
    LOOP,
    "The same memory written again and again with the same content, acknowledged each time, no answer given",
    (gh("langchain-ai/memory-agent-js", 4), gh("NousResearch/hermes-agent", 99202)),
    "The upsert succeeds the first time; the model then calls it again with the same content and gets the same "
    "acknowledgement, again and again, and never answers the user. Setting a value it has already set changes "
    "nothing and learns nothing.",
)
def same_memory_upserted_again(k: Kit) -> Run:
    tool = k.pick(("upsert_memory", "save_memory", "update_memory"))
    content = k.pick(
        (
            "User prefers window seats on flights.",
            "User's dog is called Pixel.",
            "User works at Globex in Lisbon.",
        )
    )
    turns = k.prelude(0, 1)
    for _ in range(k.n(3, 5)):
        mid = k.volatile_id()
        turns.append(
            Turn(k.say(("Saving this to memory.", "Let me remember that."), 0.5), [ToolUse(tool, {"content": content}, f"Stored memory {mid}.")])
        )  # fmt: skip
    final, failure = k.give_up()
    return Run(f"Remember this: {content}", k.agent(), k.model(), turns, final, failure)


@situation(
    "same-value-confirmed-then-booked",
    HEALTHY,
    "The caller's email recorded, recorded once more when repeated, then the booking is made",
    (gh("langchain-ai/memory-agent-js", 4), gh("agno-agi/agno", 2931)),
    "The same value is set twice (the caller said it again to be sure); then the agent books the room. A "
    "second write of the same value is a confirmation, and the run goes on.",
    ("same-memory-upserted-again",),
)
def same_value_confirmed_then_booked(k: Kit) -> Run:
    email = k.pick(("ann.lee@example.com", "jon.mcbride@example.org"))
    tool = k.pick(("set_email", "update_email"))
    turns = [
        Turn(
            None,
            [
                ToolUse(
                    "check_availability",
                    {"room": "double", "nights": 2},
                    _j({"available": True, "rate": 189}),
                )
            ],
        )
    ]
    for _ in range(2):
        turns.append(
            Turn(f"So that's {email}, right?", [ToolUse(tool, {"email": email}, f"Email recorded: {email}")])
        )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "book_room",
                    {"room": "double", "nights": 2, "email": email},
                    _j({"booking": f"B-{k.n(100, 999)}", "status": "confirmed"}),
                )
            ],
        )
    )
    return Run(
        "Book me a double room for two nights.",
        k.agent(),
        k.model(),
        turns,
        f"Booked; the confirmation goes to {email}.",
    )


@situation(
    "same-item-added-thrice",
    HEALTHY,
    "Three of one item added to a cart one call at a time, each acknowledged the same way, then checkout",
    (gh("langchain-ai/memory-agent-js", 4), gh("openai/openai-agents-js", 512)),
    "The same call with the same arguments three times, acknowledged identically: but adding is not setting, "
    "each call adds one more of the item the user asked three of, and the run goes on to checkout.",
    ("same-memory-upserted-again", "batch-writes-short-ok"),
)
def same_item_added_thrice(k: Kit) -> Run:
    item = k.pick(("apple", "AA battery", "oat milk"))
    tool = k.pick(("add_to_cart", "cart_add_item"))
    turns = k.prelude(0, 1)
    for _ in range(3):
        turns.append(
            Turn(None, [ToolUse(tool, {"item": item, "quantity": 1}, f"Added 1 {item} to the cart.")])
        )
    turns.append(
        Turn(
            None,
            [ToolUse("checkout", {"payment": "card"}, _j({"order": f"O-{k.n(1000, 9999)}", "items": 3}))],
        )
    )
    return Run(f"Buy three {item}s.", k.agent(), k.model(), turns, f"Ordered three {item}s.")



# ======================================================================================
# What an answer names: a revision that changes, a trigger answered by the same work
# ======================================================================================


def _health(k: Kit, sha: str, version: str) -> str:
    return _j({"status": "ok", "commit": sha, "version": version, "uptime_s": k.n(20, 4000)})


def _deploy_polls(k: Kit, old: str, polls: int) -> tuple[str, str, list[Turn]]:
    """A deploy started, then ``polls`` health checks (a sleep before each) still naming ``old``."""
    tool = k.pick(("http_get", "fetch_url", "check_health"))
    url = k.pick(("https://staging.example.com/health", "https://api.example.org/readyz"))
    turns = [
        Turn(
            k.say(("Triggering the deploy.", "Deploying the merged commit.")),
            [ToolUse("trigger_deploy", {"environment": "staging"}, _j({"deployment": k.n(1000, 9999), "state": "in_progress"}))],
        )
    ]
    for _ in range(polls):
        turns.append(Turn(None, [ToolUse("sleep", {"seconds": k.pick((15, 30))}, "")]))
        turns.append(
            Turn(
                k.say(("Still the old commit; waiting.", "Not rolled over yet."), 0.6),
                [ToolUse(tool, {"url": url}, _health(k, old, "1.8.2"))],
            )
        )
    return tool, url, turns


@situation(
    "deploy-health-reports-new-commit",
    HEALTHY,
    "A deploy agent polls the service's health until it reports the commit just deployed, then runs the smoke tests",
    (gh("BUGS-NYU/schedge", 262), gh("yontrack/yontrack", 1666)),
    "The health endpoint answers the same 'ok' with the old commit's hash for several polls (a sleep between "
    "each), which masking reads as the same answer; then it names the new commit: the rollout finished, and "
    "the agent runs the smoke tests against it and reports. A hash that held over several answers and then "
    "changed is news, not a volatile id.",
    ("deploy-health-never-reports-new-commit",),
)
def deploy_health_reports_new_commit(k: Kit) -> Run:
    old, new = k.hex(40), k.hex(40)
    tool, url, turns = _deploy_polls(k, old, k.n(3, 6))
    turns.append(Turn(None, [ToolUse("sleep", {"seconds": 30}, "")]))
    turns.append(Turn("The new commit is live.", [ToolUse(tool, {"url": url}, _health(k, new, "1.9.0"))]))
    passed = k.n(12, 40)
    turns.append(
        Turn(None, [ToolUse("run_smoke_tests", {"environment": "staging", "expect_commit": new[:12]}, f"{passed} passed, 0 failed")])
    )
    return Run(
        "Deploy the merged commit to staging and smoke-test it once it is serving.",
        k.pick(("deploy-agent", "release_bot")),
        k.model(),
        turns,
        f"Staging serves {new[:7]} (1.9.0); {passed} smoke tests passed.",
    )


@situation(
    "deploy-health-never-reports-new-commit",
    LOOP,
    "A deploy agent polls the service's health for the new commit, but the old one keeps answering until the run is cut off",
    (gh("fullsend-ai/fullsend", 6945), gh("BUGS-NYU/schedge", 262)),
    "The rollout never completes (traffic stays pinned to the old revision), so every health check names the same old "
    "commit, a sleep between each; the agent neither looks at the rollout nor gives up, and the run ends still "
    "polling. The same answer naming the same commit every time: nothing new arrives.",
)
def deploy_health_never_reports_new_commit(k: Kit) -> Run:
    _, _, turns = _deploy_polls(k, k.hex(40), k.n(7, 11))
    final, failure = k.give_up()
    return Run(
        "Deploy the merged commit to staging and smoke-test it once it is serving.",
        k.pick(("deploy-agent", "release_bot")),
        k.model(),
        turns,
        final,
        failure,
    )


def _commit_events(k: Kit, sha: str, branches: list[str]) -> str:
    return _j([{"type": "push", "commit": sha, "branch": b, "delivery": k.uuid()} for b in branches])


@situation(
    "commit-bot-same-comment-per-event",
    LOOP,
    "A ticket bot gets the same commit in event after event (merged across branches) and posts the same comment on the ticket each time",
    (gh("trac-hacks/trac-github", 2), gh("allenta/gitlab-listener", 7)),
    "The commit's message references a ticket. Every event naming that commit (pushed to a branch, merged into "
    "another, merged back) wakes the bot, which reads the same commit and posts the same comment on the same "
    "ticket; the tracker accepts each. An event on a branch not seen before is new, but it leads to the same "
    "read and the same comment: the ticket fills with identical comments and nothing else happens.",
)
def commit_bot_same_comment_per_event(k: Kit) -> Run:
    sha = k.hex(40)
    ticket = k.n(100, 9999)
    known = k.sample(("main", "develop", "release/2.3", "feature/sync"), 2)
    fresh = k.pick(("hotfix/2.3.1", "staging"))
    rounds = k.n(7, 9)
    late = k.n(5, rounds - 1)  # the round whose event names a branch not seen before
    body = f"Referenced by commit {sha[:10]}: fix session expiry on refresh (refs #{ticket})."
    turns: list[Turn] = []
    for i in range(rounds):
        branch = fresh if i == late else known[i % 2]
        turns.append(Turn(None, [ToolUse("get_events", {"source": "git", "unread": True}, _commit_events(k, sha, [branch]))]))
        turns.append(Turn(None, [ToolUse("get_commit", {"sha": sha}, _j({"sha": sha, "message": f"Fix session expiry on refresh (refs #{ticket})", "files": 2}))]))
        turns.append(
            Turn(k.say(("Linking the commit to the ticket.",), 0.6), [ToolUse("add_ticket_comment", {"ticket": ticket, "body": body}, _j({"ok": True, "ticket": ticket}))])
        )
    return Run(
        "Link each pushed commit to the tickets it references.",
        k.pick(("ticket-bot", "tracker_agent")),
        k.model(),
        turns,
        None,
        k.pick((None, "run cancelled by scheduler")),
    )


@situation(
    "commit-bot-comments-each-new-commit",
    HEALTHY,
    "A ticket bot gets push events, each naming a new commit, and links each commit once to the ticket it references",
    (gh("allenta/gitlab-listener", 66), gh("babel/babel-bot", 41)),
    "The event feed answers in the same shape every time (a push to the same branch) and the tracker acknowledges "
    "every comment the same way, which repeats; but each event names a commit not seen before, the bot reads that "
    "commit and writes a comment about it (a different body each time), and an event about a commit already "
    "linked is skipped.",
    ("commit-bot-same-comment-per-event",),
)
def commit_bot_comments_each_new_commit(k: Kit) -> Run:
    ticket = k.n(100, 9999)
    branch = k.pick(("main", "develop"))
    subjects = k.sample(("fix session expiry", "retry token refresh", "log refresh failures", "add expiry test", "drop the old cookie"), 4)
    turns: list[Turn] = []
    for subject in subjects:
        sha = k.hex(40)
        turns.append(Turn(None, [ToolUse("get_events", {"source": "git", "unread": True}, _commit_events(k, sha, [branch]))]))
        turns.append(Turn(None, [ToolUse("get_commit", {"sha": sha}, _j({"sha": sha, "message": f"{subject.capitalize()} (refs #{ticket})", "files": k.n(1, 6)}))]))
        turns.append(
            Turn(None, [ToolUse("add_ticket_comment", {"ticket": ticket, "body": f"Referenced by commit {sha[:10]}: {subject}."}, _j({"ok": True, "ticket": ticket}))])
        )
    turns.append(Turn("No new commits.", [ToolUse("get_events", {"source": "git", "unread": True}, "[]")]))
    return Run(
        "Link each pushed commit to the tickets it references.",
        k.pick(("ticket-bot", "tracker_agent")),
        k.model(),
        turns,
        f"Linked {len(subjects)} commits to ticket #{ticket}.",
    )



@situation(
    "verification-reopened-same-result",
    LOOP,
    "Asked for one arithmetic result, the model gets it, then reopens the verification again and again by other working, reaching the same number each time",
    (gh("gauss5930/LLM-Agora", 2),),
    "Model calls only. The first message evaluates the expression correctly. Each later one announces a check and "
    "works it another way (the products split up differently each time), which brings in new "
    "intermediate numbers, but ends on the same result; nothing is asked between, no tool is called, and the run "
    "ends when its budget does. A settled result verified over and over is the same conclusion restated.",
)
def verification_reopened_same_result(k: Kit) -> Run:
    a, b, c, d, e = k.n(5, 30), k.n(11, 19), k.n(21, 29), k.n(2, 4), k.n(21, 29)
    bc, de = b * c, d * e
    total = a + bc - de
    turns = [Turn(f"{b}*{c} = {bc} and {d}*{e} = {de}, so {a} + {bc} - {de} = {total}. The result is {total}.")]
    openers = ("Let me verify", "Re-checking", "To be sure, another way", "Verifying once more", "Checking again")
    for _ in range(k.n(5, 8)):
        x, y = k.n(2, c - 2), k.n(2, e - 2)  # the products split another way each time
        turns.append(
            Turn(
                f"{k.pick(openers)}: {b}*{c} = {b * x} + {b * (c - x)} = {bc}, {d}*{e} = {d * y} + {d * (e - y)} = {de}, "
                f"and {a} + {bc} - {de} = {total}. {k.pick(('The answer is', 'Final answer:', 'The result is still'))} {total}."
            )
        )
    final, failure = k.pick(((None, "token budget exhausted"), (None, "MaxTurnsExceeded: Max turns (10) exceeded"), (None, None)))
    return Run(
        f"What is {a}+{b}*{c}-{d}*{e}? State your answer at the end.",
        k.agent(),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "expression-worked-step-by-step",
    HEALTHY,
    "Asked for one arithmetic result, the model works it out one step per message, checks it once, and answers",
    (gh("gauss5930/LLM-Agora", 2),),
    "Several model messages in a row, each with figures and an '= result', like a model re-verifying a settled "
    "answer; but each step gives a new result (the products, the sum, the difference), the one check comes "
    "back to the result once, and the run ends with the answer.",
    ("verification-reopened-same-result",),
)
def expression_worked_step_by_step(k: Kit) -> Run:
    a, b, c, d, e = k.n(5, 30), k.n(11, 19), k.n(21, 29), k.n(2, 4), k.n(21, 29)
    bc, de = b * c, d * e
    total = a + bc - de
    turns = [
        Turn(f"First the products: {b}*{c} = {bc}."),
        Turn(f"Then {d}*{e} = {de}."),
        Turn(f"Adding {a}: {a} + {bc} = {a + bc}."),
        Turn(f"Subtracting: {a + bc} - {de} = {total}."),
        Turn(f"Check: {total} + {de} = {a + bc}, which matches."),
    ]
    return Run(
        f"What is {a}+{b}*{c}-{d}*{e}? State your answer at the end.",
        k.agent(),
        k.model(),
        turns,
        f"The result is {total}.",
    )



@situation(
    "scroll-at-page-bottom",
    LOOP,
    "A browser agent looking for an item keeps scrolling down a page that has already reached its bottom, told 'scrolled' each time",
    (gh("camel-ai/owl", 427), gh("web-infra-dev/midscene", 704)),
    "The page ends after two screens; the item is not on it. Every further scroll is acknowledged the same way and "
    "the page it shows is the same, but the agent scrolls again instead of searching or going back, until its step "
    "limit. The same action with the same answer, again and again: nothing new arrives.",
)
def scroll_at_page_bottom(k: Kit) -> Run:
    tool, ack = k.pick((("scroll_down", "Scrolled down the page by one page"), ("browser_scroll", "Scrolled down.")))
    url = k.pick(("https://shop.example.com/catalog?page=3", "https://docs.example.org/changelog"))
    turns = [Turn(None, [ToolUse("go_to_url", {"url": url}, f"Navigated to {url}")])]
    for _ in range(k.n(6, 10)):
        turns.append(Turn(k.say(("Scrolling to find it.", "Scroll down again to see more of the page."), 0.4), [ToolUse(tool, {}, ack)]))
    final, failure = k.give_up()
    return Run(f"Find the 'Export settings' link on {url}.", k.pick(("browser_agent", "Agent")), k.model(), turns, final, failure)


@situation(
    "scroll-three-times-then-click",
    HEALTHY,
    "A browser agent scrolls down a long page three times, each acknowledged the same way, sees the button it wants and clicks it",
    (gh("browser-use/browser-use", 1481), gh("nanobrowser/nanobrowser", 149)),
    "Three identical scroll calls with the same acknowledgement, like an agent scrolling at a page's bottom; but the "
    "page is long and each scroll moves it on (the acknowledgement does not say what is shown), the button appears "
    "after the third, the agent clicks it and the task is done.",
    ("scroll-at-page-bottom",),
)
def scroll_three_times_then_click(k: Kit) -> Run:
    tool, ack = k.pick((("scroll_down", "Scrolled down the page by one page"), ("browser_scroll", "Scrolled down.")))
    url = k.pick(("https://router.example.net/settings", "https://app.example.com/admin"))
    turns = [Turn(None, [ToolUse("go_to_url", {"url": url}, f"Navigated to {url}")])]
    for _ in range(3):
        turns.append(Turn(k.say(("Scrolling to find the button.",), 0.5), [ToolUse(tool, {}, ack)]))
    index = k.n(12, 80)
    turns.append(Turn("The button is visible now.", [ToolUse("click_element", {"index": index}, f"Clicked button with index {index}: Speed test")]))
    return Run(f"Open {url} and press the speed test button.", k.pick(("browser_agent", "Agent")), k.model(), turns, "Started the speed test.")


def loops() -> list[Situation]:
    return [s for s in SITUATIONS.values() if s.label == LOOP]


def healthy() -> list[Situation]:
    return [s for s in SITUATIONS.values() if s.label == HEALTHY]
