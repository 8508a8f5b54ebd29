# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 4: document QA, MCP servers, finance, spreadsheets, git hosting, observability, written blind.

Each situation is what happened in one public issue thread or pull request of an agent
framework or tool the corpus and batches 1 to 3 had not cited (Google ADK, mcp-proxy,
vectara-agentic, aichat, LLMKube, Codex, obot, fak, AgentCore samples, Strands Agents,
vLLM agentic-api, Kiro), labelled from the situation itself: ``loop`` when the run spends
its steps learning nothing new and ends without getting further, ``healthy`` when the
repetition is the work. Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from itertools import pairwise

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch4"
WRITTEN = "2026-12-03"
AUTHOR = "written blind"

#: The renderings of this batch: the corpus's three conventions and three further shapes.
CONVENTIONS = (
    "genai",
    "openinference",
    "openllmetry",
    "genai-events",
    "openinference-langgraph",
    "openai-content-events",
)

SITUATIONS: dict[str, Situation] = {}
situation = registrar(SITUATIONS)


# ======================================================================================
# Loops
# ======================================================================================


@situation(
    "forced-tool-subagent-never-answers",
    LOOP,
    "A sub-agent forced to call its search tool on every turn searches the same question again and again and never answers",
    (gh("google/adk-python", 4179),),
    "With function calling set to 'any' the sub-agent may only answer by calling its one tool: after the first "
    "search it already holds the records, yet every following turn is the same search (now and then reworded) "
    "returning the same records; no answer ever reaches the root agent and the run ends at the call limit.",
)
def forced_tool_subagent_never_answers(k: Kit) -> Run:
    question, records = k.pick(
        (
            (
                "Which documents does a sole trader need to open a business account?",
                [
                    {
                        "doc_id": "KYC-014",
                        "title": "Sole trader onboarding",
                        "required": ["photo ID", "proof of address", "trading name registration"],
                    },
                    {"doc_id": "KYC-002", "title": "Proof of address rules", "max_age_days": 90},
                ],
            ),
            (
                "Is physiotherapy after knee surgery covered by the Silver plan?",
                [
                    {
                        "doc_id": "POL-S-7.3",
                        "title": "Rehabilitation benefits",
                        "covered": True,
                        "sessions_per_year": 12,
                    },
                    {
                        "doc_id": "POL-S-2.1",
                        "title": "Pre-authorisation",
                        "required_for": ["physiotherapy > 6 sessions"],
                    },
                ],
            ),
            (
                "What is the export control classification of the RX-200 radio module?",
                [
                    {
                        "doc_id": "ECC-RX200",
                        "title": "RX-200 classification",
                        "eccn": "5A991",
                        "licence_required": False,
                    }
                ],
            ),
        )
    )
    tool = k.pick(("external_search_tool", "search_source_of_truth", "kb_lookup"))
    result = _j({"results": records, "total": len(records)})
    rewordings = (question, question, question.rstrip("?"), "search: " + question.lower())
    thoughts = (
        None,
        None,
        "I need to consult the external source before answering.",
        "The answer must come from the source of truth; searching it.",
    )
    turns = [Turn(None, [ToolUse(tool, {"query": question}, result)])]
    for _ in range(k.n(7, 14)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(tool, {"query": k.pick(rewordings)}, result)]))
    return Run(
        question,
        "SubAgent",
        k.pick(("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-flash")),
        turns,
        None,
        k.pick(
            (
                "LlmCallsLimitExceededError: Max number of llm calls limit of 20 exceeded",
                "MaxTurnsExceeded: the sub-agent made 15 tool calls without a final response",
                None,
            )
        ),
    )


OBSERVABILITY_TOOLS = (
    "query_metrics",
    "search_logs",
    "get_trace",
    "list_services",
    "list_dashboards",
    "describe_panel",
    "get_alert_rules",
    "get_slo_status",
)


@situation(
    "mcp-cursor-ignored-same-page",
    LOOP,
    "Following a tool list's next cursor returns the first page again, with the same cursor, so the count grows but nothing new arrives",
    (gh("sparfenyuk/mcp-proxy", 233),),
    "The proxy drops the cursor: every request for the next page answers with the same eight tools and the same "
    "next cursor. The client keeps following it and its running count climbs (8, 16, 24, ...), but every page is "
    "the first page; the tools of the second page never appear and the run ends without them.",
)
def mcp_cursor_ignored_same_page(k: Kit) -> Run:
    server = k.pick(("observability", "grafana-mcp", "telemetry-tools"))
    tool = k.pick(("mcp_list_tools", "list_tools", "tools_list"))
    cursor = k.pick(("8", "eyJvZmZzZXQiOjh9", "page-2"))
    page = _j(
        {
            "tools": [{"name": n, "description": f"{n.replace('_', ' ')}"} for n in OBSERVABILITY_TOOLS],
            "nextCursor": cursor,
        }
    )
    turns = [
        Turn(
            k.say(("Listing the tools the server offers.", "First, discover the server's tools.")),
            [ToolUse(tool, {"server": server}, page)],
        )
    ]
    count = 8
    for _ in range(k.n(6, 12)):
        count += 8
        text = k.pick(
            (
                f"Collected {count} tools so far; there is a next page.",
                "nextCursor is set, fetching the next page.",
                f"{count} tools registered; following the cursor.",
                None,
            )
        )
        turns.append(Turn(text, [ToolUse(tool, {"server": server, "cursor": cursor}, page)]))
    return Run(
        "Find the tool that exports an SLO burn-rate report and run it for the checkout service.",
        k.pick(("assistant", "ops-agent")),
        k.model(),
        turns,
        None,
        k.pick(
            (
                "MaxTurnsExceeded: Max turns (12) exceeded",
                "AbortError: the request was aborted by the user",
                None,
            )
        ),
    )


@situation(
    "undefined-tool-from-instructions",
    LOOP,
    "The instructions name a tool the agent does not have; it calls it under one spelling after another",
    (pr("vectara/py-vectara-agentic", 62),),
    "The system instructions tell the agent to use a tool that was never defined. Each call to it, under a new "
    "spelling each time, is answered that no such tool exists and which tools do; the agent never uses the tools "
    "it has and ends at its iteration limit without the figures it was asked for.",
)
def undefined_tool_from_instructions(k: Kit) -> Run:
    company, year = k.pick((("Acme Robotics", 2023), ("Northwind Foods", 2022), ("Contoso Energy", 2024)))
    metric = k.pick(("operating margin", "free cash flow", "revenue growth"))
    spellings = k.shuffle(
        [
            ("get_company_financials", {"company": company, "year": year}),
            ("getCompanyFinancials", {"company": company, "year": year}),
            ("company_financials", {"name": company, "fiscal_year": year}),
            ("fetch_financial_statements", {"company": company, "year": str(year)}),
            ("financials_tool", {"query": f"{company} {year} {metric}"}),
            ("get_financials", {"ticker": company.split()[0][:4].upper(), "year": year}),
        ]
    )
    available = ["ask_annual_reports", "get_ticker_symbol", "compute_ratio"]
    shape = k.pick(
        (
            lambda n: f"Error: No such tool named `{n}`.",
            lambda n: f"Tool {n} not found. Available tools: {', '.join(available)}",
            lambda n: f"ValueError: Tool with name {n} not found",
        )
    )
    thoughts = (
        f"My instructions say to use the financials tool to get the {metric}.",
        "I must use the financial data tool as instructed.",
        "Let me try the financials tool again.",
        None,
    )
    turns = []
    for i in range(k.n(6, 11)):
        name, args = spellings[i % len(spellings)]
        turns.append(
            Turn(k.pick(thoughts), [ToolUse(name, args, error=shape(name), error_type="ToolNotFound")])
        )
    text, failure = k.pick(
        (
            (None, "Reached max iterations."),
            ("I could not retrieve the financial data needed to answer.", None),
            (None, "MaxIterationsExceeded: agent stopped due to iteration limit"),
        )
    )
    return Run(
        f"What was {company}'s {metric} in {year}?",
        "FinancialAnalystAgent",
        k.pick(("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet-20241022")),
        turns,
        text,
        failure,
    )


@situation(
    "weather-city-rotation-local-model",
    LOOP,
    "A small local model calls the weather function again and again, rotating between three spellings of cities, and never answers",
    (gh("sigoden/aichat", 580),),
    "Asked for the weather in one city, the model calls the weather function with 'New York, NY', 'New York' and "
    "'London' in turn, each answered with the same reading for that city, dozens of times; after the first call "
    "for each spelling nothing new arrives and the question is never answered.",
)
def weather_city_rotation_local_model(k: Kit) -> Run:
    tool = k.pick(("get_current_weather", "get_weather", "weather"))
    key = k.pick(("location", "city"))
    readings = {
        "New York, NY": _j(
            {"location": "New York, NY", "temperature": 18, "unit": "celsius", "forecast": ["cloudy"]}
        ),
        "New York": _j(
            {"location": "New York", "temperature": 18, "unit": "celsius", "forecast": ["cloudy"]}
        ),
        "London": _j(
            {"location": "London", "temperature": 11, "unit": "celsius", "forecast": ["light rain"]}
        ),
    }
    weights = ["New York"] * 5 + ["New York, NY"] * 3 + ["London"] * 2
    turns = [Turn(None, [ToolUse(tool, {key: "New York, NY"}, readings["New York, NY"])])]
    for _ in range(k.n(10, 18)):
        city = k.pick(weights)
        turns.append(Turn(None, [ToolUse(tool, {key: city}, readings[city])]))
    return Run(
        "what is the weather in London",
        k.pick(("aichat", "functions")),
        k.pick(("llama3-8b-inst", "llama3:8b", "mistral-7b-instruct")),
        turns,
        None,
        k.pick(("AbortError: interrupted by the user", None)),
    )


@situation(
    "empty-git-grep-until-max-turns",
    LOOP,
    "The same git log piped to grep for an issue number is run dozens of times in a row, empty every time, until the turn limit",
    (pr("defilantech/LLMKube", 569),),
    "The model emits the exact same shell command again and again and every run prints nothing (no commit mentions "
    "the issue); it neither changes the search nor moves on to the change it was asked to make, and the run ends "
    "at its turn limit.",
)
def empty_git_grep_until_max_turns(k: Kit) -> Run:
    issue = k.n(300, 990)
    shell, key = k.shell_tool()
    branch = k.pick((f"foreman/issue-{issue}", f"fix/{issue}", f"agent/issue-{issue}"))
    command = k.pick(
        (
            f'git log {branch} --oneline | grep -i "{issue}" | head -10',
            f"git log --oneline {branch} | grep '#{issue}'",
        )
    )
    empty = k.pick(("", "(no output)", "Command completed with exit code 1 and no output."))
    thoughts = (
        f"Let me check whether any commit already references issue #{issue}.",
        "Checking the branch history for the issue.",
        "Let me look at the commits for this issue again.",
        None,
        None,
    )
    turns = list(k.prelude(1, 3))
    for _ in range(k.n(12, 22)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(shell, {key: command}, empty)]))
    return Run(
        f"Implement issue #{issue}: add a readiness probe to the model server deployment and open a pull request.",
        k.pick(("foreman", "coder")),
        k.pick(("qwen3-coder-30b", "qwen2.5-coder-32b", "devstral-small")),
        turns,
        None,
        k.pick(("MaxTurnsExceeded: Max turns (80) exceeded", "STUCK-LOOP-DETECTED: turn limit reached")),
    )


@situation(
    "rate-limited-every-attempt",
    LOOP,
    "After a few useful steps every model request ends 'exceeded retry limit, 429', with a new request id each time",
    (gh("openai/codex", 23304),),
    "Every attempt to continue ends with the same 429 after the client's own retries, only the request id "
    "differs; asking again, or with fewer tools, changes nothing. The run learns nothing after the first 429 and "
    "ends with the work where it stood.",
)
def rate_limited_every_attempt(k: Kit) -> Run:
    turns = list(k.prelude(1, 3))
    read, rkey = k.read_tool()
    path = k.path()
    turns.append(
        Turn(
            k.say(("Reading the module to change.",)),
            [
                ToolUse(
                    read,
                    {rkey: path},
                    f"def {k.word(6)}(records):\n    total = 0\n    for r in records:\n        total += r.amount\n    return total\n",
                )
            ],
        )
    )
    for _ in range(k.n(5, 10)):
        turns.append(
            Turn(
                error=f"exceeded retry limit, last status: 429 Too Many Requests, request id: {k.uuid()}",
                error_type="RateLimitError",
                gap_ms=k.n(2_000, 40_000),
            )
        )
    return Run(
        f"Refactor {path} to use Decimal for money amounts and update its tests.",
        "codex",
        k.pick(("gpt-5.5", "gpt-5-codex", "gpt-5.2")),
        turns,
        None,
        "exceeded retry limit, last status: 429 Too Many Requests",
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "sheet-rows-updated-one-by-one",
    HEALTHY,
    "A spreadsheet column filled in row by row: dozens of the same update call with one-line acknowledgements, one oversized batch fails and smaller ones succeed",
    (gh("obot-platform/obot", 104),),
    "Each update writes a different row's computed value and the acknowledgement names that row's range; the one "
    "failure (a batch too large to parse) is followed by smaller batches that succeed. The calls look alike "
    "because the task is a list of rows, and the run ends reporting the rows it filled in.",
    lookalike_of=("exact-repeat-listing", "save-memory-repeat", "tool-rate-limited-every-time"),
)
def sheet_rows_updated_one_by_one(k: Kit) -> Run:
    read = k.pick(("Read Spreadsheet", "read_spreadsheet", "sheets_read_range"))
    update = k.pick(("Update Cells In Spreadsheet", "update_cells", "sheets_update_range"))
    sheet_id = k.hex(20)
    rows = k.n(14, 24)
    people = [(f"{k.word(5).title()} {k.word(7).title()}", k.n(2_400, 9_800)) for _ in range(rows)]
    table = [["Name", "Gross Pay", "Tax Rate", "Net Tax"]] + [[n, g, "0.22", ""] for n, g in people]
    turns = [
        Turn(
            k.say(("Reading the payroll sheet first.", "Let me read the sheet.")),
            [
                ToolUse(
                    read,
                    {"spreadsheet_id": sheet_id, "range": f"Sheet1!A1:D{rows + 1}"},
                    _j({"values": table}),
                )
            ],
        )
    ]
    batch_at = k.n(4, rows - 6)
    row = 2
    while row <= rows + 1:
        if row == batch_at:
            span = list(range(row, rows + 2))
            values = [[round(people[r - 2][1] * 0.22, 2)] for r in span]
            turns.append(
                Turn(
                    "I'll write the remaining rows in one batch.",
                    [
                        ToolUse(
                            update,
                            {
                                "spreadsheet_id": sheet_id,
                                "range": f"Sheet1!D{row}:D{rows + 1}",
                                "values": values,
                            },
                            error="ERROR: got (exit status 1) while running tool, OUTPUT: JSON parsing error for update_cells input: Expecting ',' delimiter: line 1 column 2313 (char 2312)",
                        )
                    ],
                )
            )
            for start in range(row, rows + 2, 3):
                stop = min(start + 2, rows + 1)
                chunk = [[round(people[r - 2][1] * 0.22, 2)] for r in range(start, stop + 1)]
                turns.append(
                    Turn(
                        None if start != row else "The batch was too large; writing three rows at a time.",
                        [
                            ToolUse(
                                update,
                                {
                                    "spreadsheet_id": sheet_id,
                                    "range": f"Sheet1!D{start}:D{stop}",
                                    "values": chunk,
                                },
                                _j({"updatedRange": f"Sheet1!D{start}:D{stop}", "updatedCells": len(chunk)}),
                            )
                        ],
                    )
                )
            break
        value = round(people[row - 2][1] * 0.22, 2)
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        update,
                        {"spreadsheet_id": sheet_id, "range": f"Sheet1!D{row}", "values": [[value]]},
                        _j({"updatedRange": f"Sheet1!D{row}", "updatedCells": 1}),
                    )
                ],
            )
        )
        row += 1
    return Run(
        "Compute Net Tax (Gross Pay x Tax Rate) and fill in the Net Tax column for every row of the payroll sheet.",
        k.pick(("Google Productivity Assistant", "sheets-agent")),
        k.model(),
        turns,
        f"Net Tax is filled in for all {rows} rows (D2:D{rows + 1}).",
    )


@situation(
    "intake-form-field-by-field",
    HEALTHY,
    "A browser agent fills a clinic's appointment request form field by field: twelve fill calls with the same one-word acknowledgement, then submits",
    (gh("anthony-chaudhary/fak", 5907),),
    "Filling a form of twelve fields is twelve calls to the same fill tool, each answered with a bare 'ok'; every "
    "call fills a different field with a different value, and the run ends with the form submitted and a "
    "confirmation number. The repetition is the form.",
    lookalike_of=("exact-repeat-listing", "noop-rotation", "browser-stale-index-click"),
)
def intake_form_field_by_field(k: Kit) -> Run:
    fill = k.pick(("fillInput", "fill_input", "type_into"))
    click = k.pick(("click", "clickElement"))
    ack = k.pick(("ok", "Filled.", _j({"success": True})))
    first, last = k.word(5).title(), k.word(8).title()
    fields = [
        ("#first-name", first),
        ("#last-name", last),
        ("#dob", f"19{k.n(50, 99)}-{k.n(1, 12):02d}-{k.n(1, 28):02d}"),
        ("#phone", f"+1 555 {k.n(100, 999)} {k.n(1000, 9999)}"),
        ("#email", f"{first.lower()}.{last.lower()}@mail.example"),
        ("#insurer", k.pick(("Aetna", "Blue Shield", "Kaiser"))),
        ("#member-id", k.hex(10).upper()),
        ("#reason", k.pick(("Annual physical", "Knee pain follow-up", "Allergy consultation"))),
        ("#preferred-date", f"2026-12-{k.n(8, 23):02d}"),
        ("#preferred-time", k.pick(("morning", "afternoon"))),
        ("#clinician", k.pick(("Dr. Okafor", "Dr. Lindqvist", "any"))),
        ("#consent", "yes"),
    ]
    turns = [
        Turn(
            "Opening the appointment request form.",
            [
                ToolUse(
                    "navigate",
                    {"url": "https://clinic.example/appointments/new"},
                    "Page loaded: Request an appointment",
                )
            ],
        )
    ]
    for selector, value in fields:
        turns.append(Turn(None, [ToolUse(fill, {"selector": selector, "value": value}, ack)]))
    confirmation = f"APT-{k.n(100000, 999999)}"
    turns.append(
        Turn(
            "All fields are filled; submitting.",
            [
                ToolUse(
                    click,
                    {"selector": "button[type=submit]"},
                    f"Page loaded: Thank you. Your request {confirmation} was received.",
                )
            ],
        )
    )
    return Run(
        f"Request an appointment at the clinic for {first} {last} using the details in their profile.",
        k.pick(("browser-agent", "Marionette")),
        k.model(),
        turns,
        f"The appointment request was submitted; confirmation {confirmation}.",
    )


@situation(
    "report-job-polled-until-done",
    HEALTHY,
    "A long report job is started, then its status is polled with waits (busy, busy, busy ...) until it is done and the result fetched",
    (gh("aws-samples/sample-badgers", 46),),
    "The job takes minutes, so the agent submits it and asks for its status with a pause between asks; the "
    "answers stay 'busy' for a while because the work is running, then turn to 'completed', and the agent "
    "fetches the report it was asked for. The waiting ends in the result.",
    lookalike_of=("poll-never-ends", "exact-repeat-listing", "assistant-run-incomplete-poll"),
)
def report_job_polled_until_done(k: Kit) -> Run:
    submit = k.pick(("start_report_task", "submit_job", "invoke_async"))
    status = k.pick(("get_task_status", "job_status", "ping_task"))
    fetch = k.pick(("get_task_result", "fetch_job_output"))
    task = k.volatile_id()
    period = k.pick(("2026-Q3", "November 2026", "FY2026 H1"))
    busy = k.pick(
        (
            _j({"task_id": task, "status": "HEALTHY_BUSY"}),
            _j({"task_id": task, "status": "running"}),
            _j({"task_id": task, "state": "IN_PROGRESS"}),
        )
    )
    turns = [
        Turn(
            k.say(("Starting the reconciliation report; it runs for several minutes.",)),
            [
                ToolUse(
                    submit,
                    {"report": "cash_reconciliation", "period": period},
                    _j({"task_id": task, "accepted": True}),
                )
            ],
        )
    ]
    for _ in range(k.n(4, 9)):
        turns.append(
            Turn(
                k.pick(("Still running; checking again shortly.", None, None)),
                [ToolUse(status, {"task_id": task}, busy)],
                gap_ms=k.n(20_000, 45_000),
            )
        )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    status, {"task_id": task}, _j({"task_id": task, "status": "HEALTHY", "completed": True})
                )
            ],
            gap_ms=k.n(20_000, 45_000),
        )
    )
    unmatched = k.n(2, 17)
    turns.append(
        Turn(
            "The task has completed; fetching the report.",
            [
                ToolUse(
                    fetch,
                    {"task_id": task},
                    _j(
                        {
                            "period": period,
                            "matched": k.n(1800, 4200),
                            "unmatched": unmatched,
                            "difference_eur": round(k.n(10, 9000) / 7, 2),
                        }
                    ),
                )
            ],
        )
    )
    return Run(
        f"Produce the cash reconciliation report for {period} and tell me how many transactions are unmatched.",
        k.pick(("badgers-agent", "finance-ops")),
        k.pick(
            (
                "claude-sonnet-4-20250514",
                "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
                "amazon.nova-pro-v1:0",
            )
        ),
        turns,
        f"The reconciliation for {period} is done: {unmatched} transactions are unmatched.",
    )


@situation(
    "throttled-model-calls-then-success",
    HEALTHY,
    "The first model calls are throttled and retried with doubling waits until one goes through and the task finishes",
    (pr("strands-agents/harness-sdk", 1424),),
    "A throttling error on the model is retried with an exponential backoff (4 s, 8 s, 16 s ...), as the SDK "
    "does; when the service lets the call through the agent does its tool work and answers. Repeated identical "
    "errors here are the wait before the work, and the run ends with the answer.",
    lookalike_of=(
        "rate-limit-storm-never-recovers",
        "rate-limited-every-attempt",
        "tool-rate-limited-every-time",
    ),
)
def throttled_model_calls_then_success(k: Kit) -> Run:
    message = k.pick(
        (
            "ModelThrottledException: Too many requests, please wait before trying again.",
            "An error occurred (ThrottlingException) when calling the ConverseStream operation: Too many requests, please wait before trying again.",
        )
    )
    turns = [Turn(error=message, error_type="ModelThrottledException")]
    delay = 4_000
    for _ in range(k.n(1, 3)):
        turns.append(Turn(error=message, error_type="ModelThrottledException", gap_ms=delay))
        delay *= 2
    lookup = k.pick(("get_invoice", "lookup_invoice"))
    pay = k.pick(("list_payments", "search_payments"))
    invoice = f"INV-{k.n(10000, 99999)}"
    amount = k.n(300, 9000)
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    lookup,
                    {"invoice_id": invoice},
                    _j({"id": invoice, "amount": amount, "currency": "EUR", "status": "open"}),
                )
            ],
            gap_ms=delay,
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    pay,
                    {"reference": invoice},
                    _j([{"payment_id": k.hex(8), "amount": amount, "booked": k.clock()}]),
                )
            ],
        )
    )
    return Run(
        f"Has invoice {invoice} been paid? If so, when?",
        k.pick(("strands_agent", "ap-assistant")),
        k.pick(("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic.claude-3-sonnet")),
        turns,
        f"Yes: invoice {invoice} ({amount} EUR) was paid in full; the payment is booked against it.",
    )


@situation(
    "tools-list-followed-to-last-page",
    HEALTHY,
    "A server's tool list is read page by page, each request with the cursor the previous page returned, until no cursor comes back",
    (pr("vllm-project/agentic-api", 311),),
    "Every request is the same listing call and only the cursor differs, but every page brings tools not seen "
    "before and the cursor moves on; the last page carries no cursor, the listing stops, and the tool it was "
    "looking for (found on a later page) is used.",
    lookalike_of=("mcp-cursor-ignored-same-page", "url-params-same-page", "exact-repeat-listing"),
)
def tools_list_followed_to_last_page(k: Kit) -> Run:
    tool = k.pick(("mcp_list_tools", "list_tools", "tools_list"))
    server = k.pick(("warehouse-mcp", "erp-tools", "inventory"))
    names = [
        f"{verb}_{noun}"
        for verb in ("get", "list", "update", "export")
        for noun in ("stock", "orders", "suppliers", "shipments", "returns")
    ]
    names = k.shuffle(names)
    size = k.pick((4, 5, 6))
    pages = [names[i : i + size] for i in range(0, len(names), size)]
    target = pages[-1][0]
    cursors = [k.pick((str(size * (i + 1)), f"c{k.hex(6)}")) for i in range(len(pages) - 1)]
    turns = []
    for i, page in enumerate(pages):
        body: dict = {"tools": [{"name": n} for n in page]}
        if i < len(cursors):
            body["nextCursor"] = cursors[i]
        args = {"server": server} if i == 0 else {"server": server, "cursor": cursors[i - 1]}
        turns.append(Turn(None, [ToolUse(tool, args, _j(body))]))
    sku = f"SKU-{k.n(1000, 9999)}"
    turns.append(
        Turn(
            f"`{target}` is on the last page; using it.",
            [ToolUse(target, {"sku": sku}, _j({"sku": sku, "ok": True, "rows": k.n(1, 40)}))],
        )
    )
    return Run(
        f"Use the {server} server's tools to handle {sku} as the warehouse ticket describes.",
        k.pick(("agentic-api", "assistant")),
        k.model(),
        turns,
        f"Done: ran `{target}` for {sku}.",
    )


@situation(
    "rust-build-errors-count-down",
    HEALTHY,
    "cargo build is run after each round of fixes; the error count falls from 20 to 0",
    (gh("kirodotdev/Kiro", 52),),
    "The same build command over and over looked like a loop to its user, but each build reports fewer errors "
    "than the last, different ones, because the edits between builds fix them; the last build is clean. The "
    "progress is in the numbers.",
    lookalike_of=("diagnostic-repeat-varied-thoughts", "reverify-after-done", "shell-variants-same-output"),
)
def rust_build_errors_count_down(k: Kit) -> Run:
    shell, key = k.shell_tool()
    edit = k.pick(("str_replace", "edit_file", "apply_patch"))
    counts = [20, k.n(13, 16), k.n(8, 11), k.n(4, 6), 2, 0]
    files = k.paths(6)
    files = [f.rsplit(".", 1)[0] + ".rs" for f in files]
    codes = ("E0308", "E0382", "E0599", "E0425", "E0277", "E0502")
    turns = []
    for n_before, n_after in pairwise(counts):
        lines = [
            f"error[{k.pick(codes)}]: {k.pick(('mismatched types', 'borrow of moved value', 'no method named `len` found', 'cannot find value in this scope'))}\n --> {k.pick(files)}:{k.n(10, 400)}:{k.n(5, 40)}"
            for _ in range(min(n_before, 4))
        ]
        out = (
            "\n".join(lines) + f"\nerror: could not compile `ledger` (lib) due to {n_before} previous errors"
        )
        turns.append(
            Turn(
                None if n_before == 20 else f"{n_before} errors left.",
                [ToolUse(shell, {key: "cargo build"}, out)],
            )
        )
        for _ in range(min(3, n_before - n_after)):
            f = k.pick(files)
            turns.append(
                Turn(
                    None,
                    [
                        ToolUse(
                            edit,
                            {
                                "path": f,
                                "old": f"let v = {k.word(4)}.clone();",
                                "new": f"let v = &{k.word(4)};",
                            },
                            f"Edited {f}",
                        )
                    ],
                )
            )
    turns.append(
        Turn(
            "Building once more.",
            [
                ToolUse(
                    shell, {key: "cargo build"}, "Finished `dev` profile [unoptimized + debuginfo] target(s)"
                )
            ],
        )
    )
    return Run(
        "Fix the compilation errors after the Decimal migration so the crate builds.",
        "kiro",
        k.pick(("claude-sonnet-4-20250514", "claude-3-7-sonnet")),
        turns,
        "The crate builds again: all 20 compilation errors are fixed.",
    )
