# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 2: SQL, calendars, deployments, Jira, structured output and group chats, written blind.

Each situation is what happened in one public issue thread of an agent framework or tool
the corpus had not cited (Semantic Kernel, Haystack, Pydantic AI, dspy-go, Hermes Agent,
AG2, Airflow's AI toolsets, Nextcloud's agent tools, gsd-pi, fastclaw, mcp-atlassian,
Mastra, Goose), labelled from the situation itself: ``loop`` when the run spends its steps
learning nothing new and ends without getting further, ``healthy`` when the repetition is
the work. Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch2"
WRITTEN = "2026-12-03"
AUTHOR = "written blind"

#: The renderings of this batch: the corpus's three conventions and two further shapes.
CONVENTIONS = ("genai", "openinference", "openllmetry", "genai-events", "openinference-langgraph")

SITUATIONS: dict[str, Situation] = {}
situation = registrar(SITUATIONS)


# ======================================================================================
# Loops
# ======================================================================================


@situation(
    "assistant-run-incomplete-poll",
    LOOP,
    "Polling an assistant run whose status is already final ('incomplete', content filter), forever",
    (gh("microsoft/semantic-kernel", 9729),),
    "'incomplete' (and a content-filter stop) is a final status: the run will never move again, yet the agent "
    "keeps asking for it with a pause between asks and gets the identical status every time; unlike a job "
    "that is still running, nothing can change, and the run ends only when it is killed.",
)
def assistant_run_incomplete_poll(k: Kit) -> Run:
    thread, run_id = f"thread_{k.hex(24)}", f"run_{k.hex(24)}"
    reason = k.pick(("max_completion_tokens", "content_filter", "max_prompt_tokens"))
    tool = k.pick(("get_run", "runs_retrieve", "poll_run_status"))
    status = _j(
        {
            "id": run_id,
            "object": "thread.run",
            "thread_id": thread,
            "status": "incomplete",
            "incomplete_details": {"reason": reason},
            "last_error": None,
        }
    )
    turns = [
        Turn(
            None,
            [
                ToolUse(
                    "create_message",
                    {"thread_id": thread, "content": "Summarise the attached contract."},
                    _j({"id": f"msg_{k.hex(24)}", "role": "user"}),
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "create_run",
                    {"thread_id": thread, "assistant_id": f"asst_{k.hex(24)}"},
                    _j({"id": run_id, "status": "queued"}),
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    tool, {"thread_id": thread, "run_id": run_id}, _j({"id": run_id, "status": "in_progress"})
                )
            ],
            gap_ms=1000,
        ),
    ]
    for _ in range(k.n(6, 12)):
        turns.append(
            Turn(
                k.say(("Waiting for the run to complete.", None), p_silent=0.7),
                [ToolUse(tool, {"thread_id": thread, "run_id": run_id}, status)],
                gap_ms=k.pick((500, 1000, 2000)),
            )
        )
    return Run(
        "Summarise the contract with the assistant and return its answer.",
        k.pick(("OpenAIAssistantAgent", "AzureAssistantAgent", "assistant")),
        k.model(),
        turns,
        None,
        k.pick(
            (
                "TimeoutError: the operation was cancelled after 300 s",
                "AbortError: the request was aborted by the user",
                None,
            )
        ),
    )


@situation(
    "parallel-finish-ignored",
    LOOP,
    "Each model turn asks for the same search and the 'finish' tool together; the exit is never seen and the pair repeats",
    (gh("deepset-ai/haystack", 11392),),
    "Every turn the model requests [search, finish] in parallel with the same query and the same answer; the agent "
    "only checks the first call for its exit condition, so it runs the identical pair again and again until "
    "max_agent_steps, learning nothing after the first turn.",
)
def parallel_finish_ignored(k: Kit) -> Run:
    question = k.pick(
        (
            (
                "When was the Haystack 2.0 release?",
                "haystack 2.0 release date",
                "Haystack 2.0 was released in March 2024.",
            ),
            (
                "Which embedding model does our RAG pipeline use?",
                "rag pipeline embedding model",
                "The pipeline uses BAAI/bge-small-en-v1.5.",
            ),
            (
                "What is the refund window for annual plans?",
                "annual plan refund window",
                "Annual plans can be refunded within 14 days.",
            ),
        )
    )
    q, query, answer = question
    search = k.pick(("search", "document_search", "web_search"))
    docs = _j(
        [
            {
                "content": answer
                + " "
                + k.pick(("See the changelog.", "Source: internal wiki.", "Policy page v3.")),
                "score": round(0.7 + k.n(0, 25) / 100, 2),
            }
        ]
    )
    finish_result = k.pick(("Finished.", answer))
    turns = []
    for _ in range(k.n(5, 10)):
        turns.append(
            Turn(
                k.say(("I'll search and then finish with the answer.", None), p_silent=0.5),
                [
                    ToolUse(search, {"query": query}, docs),
                    ToolUse("finish", {"answer": answer}, finish_result),
                ],
            )
        )
    return Run(
        q,
        "Agent",
        k.model(),
        turns,
        None,
        k.pick(("AgentStepLimit: Agent reached maximum agent steps of 10, stopping.", None)),
    )


@situation(
    "output-validation-retry-exhausted",
    LOOP,
    "Structured output fails validation the same way on every retry until the retry budget is spent",
    (gh("pydantic/pydantic-ai", 200),),
    "The model returns the same result object, still missing the required field, and is told the same validation "
    "error each time; no retry brings anything new and the run ends with 'Exceeded maximum retries for output "
    "validation'.",
)
def output_validation_retry_exhausted(k: Kit) -> Run:
    vendor = k.pick(("Nordlicht Energie GmbH", "Pacific Office Supply", "Tanaka Logistics KK"))
    missing = k.pick(("total", "invoice_number", "currency"))
    retries = k.n(3, 6)
    base = {
        "vendor": vendor,
        "invoice_date": "2026-10-31",
        "line_items": [
            {"description": k.pick(("Toner", "Freight", "Consulting hours")), "amount": k.n(40, 900)}
        ],
    }
    if missing != "total":
        base["total"] = base["line_items"][0]["amount"]
    tool = k.pick(("final_result", "final_result_Invoice"))
    error = f'1 validation error:\n```json\n[{{"type": "missing", "loc": ["{missing}"], "msg": "Field required"}}]\n```\n\nFix the errors and try again.'
    turns = []
    for _ in range(retries + 1):
        args = dict(base)
        if k.maybe(0.3):
            args["invoice_date"] = k.pick(("2026-10-31", "31.10.2026", "Oct 31, 2026"))
        turns.append(Turn(None, [ToolUse(tool, args, error=error, error_type="ModelRetry")]))
    return Run(
        f"Extract the invoice fields from the attached PDF from {vendor}.",
        k.pick(("invoice_agent", "agent")),
        k.model(),
        turns,
        None,
        f"UnexpectedModelBehavior: Exceeded maximum retries ({retries}) for output validation",
    )


@situation(
    "react-history-lost-recurring",
    LOOP,
    "A ReAct agent without its history keeps re-issuing the same few calls in no fixed order, identical answers each time",
    (gh("XiaoConstantine/dspy-go", 198),),
    "The module never passes the trajectory back to the model, so it calls prompt_count with identical parameters "
    "at iterations 2, 6, 8, 9, 14... between equally repeated lookups; all answers are the ones it already had, "
    "and the run ends at max iterations without a Finish.",
)
def react_history_lost_recurring(k: Kit) -> Run:
    name = k.pick(("premium", "onboarding", "churn-risk"))
    lo = k.n(1, 20)
    calls = [
        ToolUse(
            "prompt_count",
            {"max_number": str(lo + 1), "min_number": str(lo), "name": name},
            _j({"count": k.n(0, 4)}),
        ),
        ToolUse(
            "list_prompts", {"category": name}, _j({"prompts": [f"{name}-v{i}" for i in range(1, k.n(3, 5))]})
        ),
        ToolUse(
            "get_prompt",
            {"name": f"{name}-v1"},
            f"You are a helpful assistant for {name} customers. Answer briefly.",
        ),
    ]
    thoughts = (
        "I need to know how many prompts match.",
        "Let me check the prompt list first.",
        "I should look at the prompt contents.",
        "I'll count the matching prompts.",
    )
    turns = []
    for i in range(k.n(10, 16)):
        call = calls[0] if i % 3 != 1 and k.maybe(0.5) else k.pick(calls)
        turns.append(Turn(k.say(thoughts, p_silent=0.2), [call]))
    return Run(
        f"How many {name} prompts exist and what does the first one say?",
        "ReAct",
        k.model(),
        turns,
        None,
        "ReActError: max iterations reached without 'Finish' action",
    )


@situation(
    "overlapping-window-rereads",
    LOOP,
    "Re-reading one file under changing offsets and limits, every window inside the part already read",
    (pr("NousResearch/hermes-agent", 33066),),
    "Each read names a new (offset, limit), so no two calls are identical and the text returned differs, but every "
    "window lies inside lines the agent has already seen: ~47 re-reads of one skill file in the report with no new "
    "line after the first read. Forward pagination surfaces new lines; this does not.",
)
def overlapping_window_rereads(k: Kit) -> Run:
    path = k.pick(
        (
            "skills/deploy/SKILL.md",
            "~/.hermes/skills/research/SKILL.md",
            "docs/runbook.md",
            "skills/email-triage/SKILL.md",
        )
    )
    read, rkey = k.pick((("read_file", "path"), ("read", "file_path")))
    total = k.pick((180, 200, 240))
    lines = [
        f"{i}| " + k.pick(("- ", "## ", "", "  ")) + " ".join(k.word(k.n(3, 8)) for _ in range(k.n(3, 9)))
        for i in range(1, total + 1)
    ]
    windows = [(1, total)]
    for _ in range(k.n(7, 14)):
        start = k.n(1, total - 20)
        windows.append((start, k.n(10, min(120, total - start + 1))))
    seek = k.pick(("the rollback procedure", "where credentials are configured", "the retry policy"))
    thoughts = (
        f"Let me find {seek} in this file.",
        f"I'll look at the section around line {k.n(20, 150)} again.",
        f"The file should describe {seek}; reading that part.",
        "Let me re-read the relevant part.",
    )
    turns = []
    for offset, limit in windows:
        text = "\n".join(lines[offset - 1 : offset - 1 + limit])
        turns.append(
            Turn(
                k.say(thoughts, p_silent=0.2),
                [ToolUse(read, {rkey: path, "offset": offset, "limit": limit}, text)],
            )
        )
    final, failure = k.give_up()
    return Run(
        f"Follow {path} to find {seek} and apply it.",
        k.pick(("hermes", "agent")),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "browser-navigate-cycle",
    LOOP,
    "Navigating round and round the same few pages without ever reading one",
    (gh("Lexus2016/hermes-agent-evolution", 689),),
    "Long chains of browser_navigate (up to 21 in the report) with no read, click or extraction between them: the "
    "agent cycles through the same three or four URLs, each answered with the same 'navigated' acknowledgement, "
    "and the user gets no result.",
)
def browser_navigate_cycle(k: Kit) -> Run:
    host = k.pick(("https://www.example-gov.org", "https://shop.example.com", "https://status.example.io"))
    pages = k.sample(
        ("/", "/search?q=permit", "/services/permits", "/contact", "/faq", "/en/forms"), k.n(3, 4)
    )
    titles = {p: k.word(6).title() + " | " + k.word(5).title() for p in pages}
    tool, key = k.pick((("browser_navigate", "url"), ("navigate", "url"), ("goto", "href")))
    turns = []
    for i in range(k.n(8, 20)):
        p = pages[i % len(pages)] if k.maybe(0.8) else k.pick(pages)
        turns.append(
            Turn(
                k.say(
                    (
                        "Let me open the page with the form.",
                        "Trying the services page.",
                        "Going back to the start page.",
                        None,
                    ),
                    p_silent=0.4,
                ),
                [ToolUse(tool, {key: host + p}, f"Navigated to {host + p}. Title: {titles[p]}")],
            )
        )
    final, failure = k.give_up()
    return Run(
        f"Find the building permit application form on {host} and tell me which documents it asks for.",
        k.pick(("hermes", "browser_agent")),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "closing-pleasantries-groupchat",
    LOOP,
    "After the decision is made, the agents of a group chat keep exchanging closing courtesies until the round limit",
    (pr("ag2ai/ag2", 1958),),
    "The decision agent has answered and the chat should terminate, but it does not: the sales and cancellation "
    "agents go on offering further help and thanking each other in new words every round, with nothing added, "
    "until the maximum number of rounds stops them.",
)
def closing_pleasantries_groupchat(k: Kit) -> Run:
    customer = k.pick(("Ms. Alvarez", "Mr. Okafor", "the customer"))
    plan = k.pick(("Premium", "Family", "Business Basic"))
    offers = (
        f"If {customer} has any more questions, I'm happy to help.",
        "Glad we could sort this out. Let me know if anything else comes up!",
        f"Thanks, everyone. {customer} is all set with the {plan} plan.",
        "Happy to assist further if needed. Have a great day!",
        "Thank you! Feel free to reach out anytime.",
        f"Great teamwork. Nothing more needed on the {plan} change from my side.",
        "Thanks again! I'm here if you need me.",
    )
    turns = [
        Turn(f"{customer} wants to cancel; the reason given is price.", agent="cancellation_agent"),
        Turn(
            f"I can offer the {plan} plan at 30% off for six months instead of cancelling.",
            agent="sales_agent",
        ),
        Turn(
            f"Decision: keep the subscription, switch to {plan} with the 30% discount. TERMINATE",
            agent="decision_agent",
        ),
    ]
    speakers = ("sales_agent", "cancellation_agent", "decision_agent")
    for i in range(k.n(6, 12)):
        turns.append(Turn(k.pick(offers), agent=speakers[i % 2] if k.maybe(0.8) else k.pick(speakers)))
    return Run(
        f"{customer} asked to cancel their subscription. Decide together what to do.",
        "chat_manager",
        k.model(),
        turns,
        None,
        k.pick(("MaxRoundsReached: Maximum rounds (12) reached", None)),
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "sql-error-self-corrects",
    HEALTHY,
    "A SQL agent's queries fail on a reserved word and a wrong function; each error is read, the query fixed, and the answer found",
    (pr("apache/airflow", 68117),),
    "Two failed queries, each answered with the database's own error, each followed by a corrected query that runs "
    "(an unquoted reserved alias, PARSE_JSON on a column that is already VARIANT): errors that lead to a different "
    "next call and then to results are self-correction, not a failure loop.",
    ("output-validation-retry-exhausted", "auth-error-repeat", "file-not-found-repeat"),
)
def sql_error_self_corrects(k: Kit) -> Run:
    table = k.pick(("EVENTS", "ORDERS_RAW", "WEB_SESSIONS"))
    field = k.pick(("country", "plan", "device"))
    query = k.pick(("query", "sql_query", "run_sql"))
    rows = [[k.pick(("DE", "US", "JP", "BR")), k.n(100, 9000)] for _ in range(3)]
    turns = [
        Turn(None, [ToolUse("list_tables", {}, _j(["CUSTOMERS", table, "PRODUCTS"]))]),
        Turn(
            None,
            [
                ToolUse(
                    "get_schema",
                    {"table": table},
                    _j(
                        {
                            "columns": [
                                {"name": "ID", "type": "NUMBER"},
                                {"name": "PAYLOAD", "type": "VARIANT"},
                                {"name": "CREATED_AT", "type": "TIMESTAMP_NTZ"},
                            ]
                        }
                    ),
                )
            ],
        ),
        Turn(
            "Counting rows per day.",
            [
                ToolUse(
                    query,
                    {"sql": f"SELECT DATE(CREATED_AT) d, COUNT(*) rows FROM {table} GROUP BY d"},
                    error="SQL compilation error: syntax error line 1 at position 39 unexpected 'rows'.",
                    error_type="ProgrammingError",
                )
            ],
        ),
        Turn(
            "ROWS is reserved; quoting the alias.",
            [
                ToolUse(
                    query,
                    {
                        "sql": f'SELECT DATE(CREATED_AT) d, COUNT(*) AS "ROWS" FROM {table} GROUP BY d ORDER BY d DESC LIMIT 3'
                    },
                    _j(
                        [
                            ["2026-11-30", k.n(1000, 5000)],
                            ["2026-11-29", k.n(1000, 5000)],
                            ["2026-11-28", k.n(1000, 5000)],
                        ]
                    ),
                )
            ],
        ),
        Turn(
            f"Now the breakdown by {field}.",
            [
                ToolUse(
                    query,
                    {
                        "sql": f"SELECT PARSE_JSON(PAYLOAD):{field}::string k, COUNT(*) FROM {table} GROUP BY k"
                    },
                    error="SQL compilation error: Invalid argument types for function 'PARSE_JSON': (VARIANT)",
                    error_type="ProgrammingError",
                )
            ],
        ),
        Turn(
            "PAYLOAD is already VARIANT; reading the field directly.",
            [
                ToolUse(
                    query,
                    {
                        "sql": f"SELECT PAYLOAD:{field}::string k, COUNT(*) n FROM {table} GROUP BY k ORDER BY n DESC LIMIT 3"
                    },
                    _j(rows),
                )
            ],
        ),
    ]
    final = f"Daily volumes are above; top {field} values: " + ", ".join(f"{a} ({b})" for a, b in rows) + "."
    return Run(
        f"How many {table} rows per day lately, and what is the split by {field}?",
        k.pick(("sql_agent", "analyst")),
        k.model(),
        turns,
        final,
    )


@situation(
    "freebusy-each-attendee",
    HEALTHY,
    "Scheduling a meeting: the same free/busy call for each attendee, then one event created at the first common slot",
    (gh("nextcloud/calendar", 6654),),
    "'Schedule an event with user1 and user2 at the first common available slot next week': one availability call "
    "per person (same tool, a different person and a different answer each time), then the event is created; "
    "repeating a lookup over the people involved is the method.",
    ("empty-listing-rotation", "react-history-lost-recurring", "alternating-period-2"),
)
def freebusy_each_attendee(k: Kit) -> Run:
    people = k.sample(("alice", "bob", "chen", "dana", "emre", "fatima"), k.n(2, 4))
    tool = k.pick(("get_free_busy", "calendar_freebusy", "check_availability"))
    day = k.pick(("2026-12-07", "2026-12-08", "2026-12-09"))
    turns = [
        Turn(
            "Listing the calendars first.",
            [ToolUse("list_calendars", {}, _j(["Personal", "Work", "Team events"]))],
        )
    ]
    for p in people:
        busy = sorted({f"{day}T{h:02d}:00" for h in k.sample(range(8, 17), k.n(1, 4))})
        turns.append(
            Turn(
                k.say((f"Checking {p}'s availability.", None), p_silent=0.5),
                [
                    ToolUse(
                        tool,
                        {"user": p, "start": f"{day}T08:00", "end": f"{day}T18:00"},
                        _j({"user": p, "busy": busy}),
                    )
                ],
            )
        )
    slot = f"{day}T{k.pick((9, 13, 16)):02d}:00"
    turns.append(
        Turn(
            "The first slot free for everyone:",
            [
                ToolUse(
                    "schedule_event",
                    {
                        "calendar": "Work",
                        "title": "Planning sync",
                        "start": slot,
                        "duration_minutes": 30,
                        "attendees": people,
                    },
                    _j({"uid": k.uuid(), "status": "created", "invitations_sent": len(people)}),
                )
            ],
        )
    )
    return Run(
        f"Schedule a 30-minute planning sync with {', '.join(people)} at the first slot they all have free on {day}.",
        k.pick(("context_agent", "assistant")),
        k.model(),
        turns,
        f"Booked 'Planning sync' on {slot}; invitations sent to {len(people)} people.",
    )


@situation(
    "read-heavy-turn",
    HEALTHY,
    "One turn reads sixteen to twenty-four different files (skills, sources, tests) before a single edit that passes its tests",
    (gh("open-gsd/gsd-pi", 1067),),
    "A read-heavy opening turn: the same read tool again and again, but every call targets a different existing file "
    "and returns its own content, then the agent edits and the tests pass. The report's guard blocked the 16th "
    "distinct read as an 'infinite loop'.",
    ("overlapping-window-rereads", "cycle-period-4", "exact-repeat-listing"),
)
def read_heavy_turn(k: Kit) -> Run:
    read, rkey = k.pick((("read", "path"), ("read_file", "file_path")))
    skills = [
        f".gsd/skills/{s}/SKILL.md"
        for s in k.sample(("testing", "typescript", "git", "review", "api-design", "migrations"), k.n(3, 5))
    ]
    sources = k.paths(k.n(8, 12))
    tests = [p.replace("/", "/__tests__/", 1) for p in k.sample(sources, k.n(3, 5))]
    files = [*skills, "PLAN.md", *sources, *tests]
    turns = []
    for f in files:
        body = "\n".join(f"{k.word(5)} {k.word(7)} {k.word(4)}" for _ in range(k.n(3, 8)))
        turns.append(Turn(k.say((f"Reading {f}.", None), p_silent=0.7), [ToolUse(read, {rkey: f}, body)]))
    target = sources[0]
    turns.append(
        Turn(
            "Applying the change from the plan.",
            [
                ToolUse(
                    "edit",
                    {"path": target, "old_text": "return null", "new_text": "return defaultValue"},
                    f"Edited {target}",
                )
            ],
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "bash",
                    {"command": "npm test -- --run"},
                    f"Test Files  {len(tests)} passed ({len(tests)})\n     Tests  {k.n(20, 80)} passed",
                )
            ],
        )
    )
    return Run(
        "Execute task T03 from PLAN.md: return the configured default instead of null.",
        "gsd-executor",
        k.model(),
        turns,
        "T03 done: the default is returned; tests pass.",
    )


@situation(
    "rollout-status-progress",
    HEALTHY,
    "Watching a deployment roll out: the same status command repeated while the count of updated replicas rises",
    (pr("fastclaw-ai/fastclaw", 80),),
    "A polling workflow: the same command with the same arguments, whose answer progresses (1 of 4, 2 of 4, 2 of 4, "
    "3 of 4 replicas updated) until the rollout completes and a smoke test follows; the same call with a "
    "progressing result is not a loop.",
    ("assistant-run-incomplete-poll", "exact-repeat-listing", "volatile-footer-reread"),
)
def rollout_status_progress(k: Kit) -> Run:
    app = k.pick(("api", "checkout", "search-indexer", "notifier"))
    ns = k.pick(("prod", "staging", "default"))
    replicas = k.n(3, 8)
    shell, key = k.shell_tool()
    turns = [
        Turn(
            "Applying the manifest.",
            [
                ToolUse(
                    shell,
                    {key: f"kubectl apply -n {ns} -f deploy/{app}.yaml"},
                    f"deployment.apps/{app} configured\nservice/{app} unchanged",
                )
            ],
        )
    ]
    done = 0
    cmd = f"kubectl rollout status deployment/{app} -n {ns} --timeout=20s"
    while done < replicas:
        if k.maybe(0.75):
            done += 1
        msg = f'Waiting for deployment "{app}" rollout to finish: {done} of {replicas} updated replicas are available...\nerror: timed out waiting for the condition'
        if done == replicas:
            msg = f'deployment "{app}" successfully rolled out'
        turns.append(
            Turn(
                k.say(("Checking the rollout.", "Still rolling out; checking again.", None), p_silent=0.5),
                [ToolUse(shell, {key: cmd}, msg)],
                gap_ms=k.n(5000, 20000),
            )
        )
    version = f"v{k.n(1, 4)}.{k.n(0, 30)}.{k.n(0, 9)}"
    turns.append(
        Turn(
            "Smoke test.",
            [
                ToolUse(
                    shell,
                    {key: f"curl -s https://{app}.{ns}.internal/healthz"},
                    _j({"status": "ok", "version": version}),
                )
            ],
        )
    )
    return Run(
        f"Deploy the new {app} image to {ns} and confirm it is healthy.",
        k.pick(("ops-agent", "fastclaw")),
        k.model(),
        turns,
        f"{app} {version} is rolled out to all {replicas} replicas in {ns} and healthy.",
    )


@situation(
    "scaffold-many-files",
    HEALTHY,
    "Building a small service from scratch: fifteen to twenty-five writes of different files, a build error fixed, tests passing",
    (gh("aaif-goose/goose", 3739),),
    "'Perform an action which involves many repeated actions': the same write tool called for file after file, each "
    "with different content, then a build that fails once on an undefined name, a fix, and a clean build and test "
    "run. A long run of one tool is the job here.",
    ("retry-restarts-task", "save-memory-repeat", "empty-listing-rotation"),
)
def scaffold_many_files(k: Kit) -> Run:
    writer, wkey = k.pick(
        (("text_editor", "path"), ("write_file", "file_path"), ("developer__text_editor", "path"))
    )
    root = k.pick(("~/Projects/webhook-server", "~/src/hookbin", "/workspace/webhooks"))
    files = [
        "go.mod",
        "main.go",
        "internal/store/store.go",
        "internal/store/memory.go",
        "internal/http/router.go",
        "internal/http/handlers.go",
        "internal/http/middleware.go",
        "internal/model/request.go",
        "web/templates/index.html",
        "web/templates/request.html",
        "web/static/app.css",
        "web/static/app.js",
        "internal/store/memory_test.go",
        "internal/http/handlers_test.go",
        "Makefile",
        "README.md",
        "Dockerfile",
        ".gitignore",
        "internal/config/config.go",
        "internal/http/sse.go",
        "web/templates/layout.html",
        "cmd/seed/main.go",
    ]
    files = files[: k.n(15, len(files))]
    turns = []
    for f in files:
        body = f"// {f}\n" + "\n".join(f"{k.word(4)} {k.word(6)}({k.word(3)})" for _ in range(k.n(4, 12)))
        extra = (
            {"command": "write", "file_text": body} if writer.endswith("text_editor") else {"content": body}
        )
        turns.append(
            Turn(
                k.say((f"Creating {f}.", "Next file.", None), p_silent=0.5),
                [ToolUse(writer, {wkey: f"{root}/{f}", **extra}, f"Successfully wrote to {root}/{f}")],
            )
        )
    shell, key = k.shell_tool()
    turns.append(
        Turn(
            "Building.",
            [
                ToolUse(
                    shell, {key: "go build ./..."}, "internal/http/handlers.go:14:9: undefined: store.Store"
                )
            ],
        )
    )
    turns.append(
        Turn(
            "The interface is named Repository; fixing the reference.",
            [
                ToolUse(
                    writer,
                    {
                        wkey: f"{root}/internal/http/handlers.go",
                        **(
                            {
                                "command": "str_replace",
                                "old_str": "store.Store",
                                "new_str": "store.Repository",
                            }
                            if writer.endswith("text_editor")
                            else {"content": "// fixed handlers"}
                        ),
                    },
                    f"Successfully edited {root}/internal/http/handlers.go",
                )
            ],
        )
    )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    shell,
                    {key: "go build ./... && go test ./..."},
                    f"ok  \twebhooks/internal/store\t0.0{k.n(10, 99)}s\nok  \twebhooks/internal/http\t0.{k.n(100, 400)}s",
                )
            ],
        )
    )
    return Run(
        "Build a webhook test server (like webhook.site) in Go with in-memory storage for requests.",
        "goose",
        k.model(),
        turns,
        f"The server is in {root}: {len(files)} files, builds cleanly and its tests pass.",
    )


@situation(
    "jira-startat-pagination",
    HEALTHY,
    "Paging through a Jira search with startAt 0, 50, 100... until the total is reached, then reporting",
    (pr("sooperset/mcp-atlassian", 198),),
    "The search tool returns at most 50 issues and a total; the agent advances startAt page by page, each call a "
    "new offset returning issues it had not seen, stops when it has them all, and summarises them.",
    ("react-history-lost-recurring", "exact-repeat-listing", "browser-navigate-cycle"),
)
def jira_startat_pagination(k: Kit) -> Run:
    project = k.pick(("OPS", "PAY", "MOBILE", "DATA"))
    total = k.n(120, 260)
    limit = 50
    tool = k.pick(("jira_search", "search_issues"))
    jql = f"project = {project} AND status != Done AND created >= -90d ORDER BY created DESC"
    turns = []
    counts = {"To Do": 0, "In Progress": 0, "In Review": 0}
    for start in range(0, total, limit):
        n = min(limit, total - start)
        issues = []
        for i in range(n):
            status = k.pick(tuple(counts))
            counts[status] += 1
            issues.append({"key": f"{project}-{total - start - i + 1000}", "status": status})
        body = _j(
            {
                "startAt": start,
                "maxResults": limit,
                "total": total,
                "issues": [*issues[:5], {"...": f"{n - 5} more"}] if n > 5 else issues,
            }
        )
        turns.append(
            Turn(
                k.say((f"Fetching issues from {start}.", "Next page.", None), p_silent=0.5),
                [ToolUse(tool, {"jql": jql, "limit": limit, "startAt": start}, body)],
            )
        )
    final = (
        f"{total} open {project} issues from the last 90 days: "
        + ", ".join(f"{v} {s}" for s, v in counts.items())
        + "."
    )
    return Run(
        f"How many {project} issues created in the last 90 days are still open, by status?",
        k.pick(("jira_assistant", "assistant")),
        k.model(),
        turns,
        final,
    )


@situation(
    "supervisor-delegation-rounds",
    HEALTHY,
    "A supervisor sends work to a researcher, a writer and a fact-checker, then a second round for the two claims found unsupported",
    (pr("mastra-ai/mastra", 13323),),
    "The same three delegations happen twice, but the second round asks for different things (sources for two "
    "named claims, a revision) and gets different answers, and the fact-checker finally passes the draft: repeated "
    "delegation with new work each time, ending in a finished report.",
    ("closing-pleasantries-groupchat", "handoff-pingpong", "retry-restarts-task"),
)
def supervisor_delegation_rounds(k: Kit) -> Run:
    topic = k.pick(("heat pumps in cold climates", "four-day work weeks", "urban rooftop solar"))
    researcher, writer, checker = k.pick(
        (
            ("agent-researcher", "agent-writer", "agent-factChecker"),
            ("research_agent", "writing_agent", "fact_check_agent"),
        )
    )
    turns = [
        Turn(
            "Gathering sources first.",
            [
                ToolUse(
                    researcher,
                    {"prompt": f"Find recent evidence on {topic}."},
                    f"5 sources on {topic}: field trial (2024), national survey (2025), two reviews, one industry report. Key numbers: 2.1-3.4 efficiency at -15C; 62% adoption growth.",
                )
            ],
        ),
        Turn(
            "Drafting.",
            [
                ToolUse(
                    writer,
                    {"prompt": f"Write a 300-word brief on {topic} from these sources."},
                    f"Draft v1 ({k.n(280, 320)} words): {topic} perform better than expected... claims: efficiency holds at -25C; costs fell 40% since 2020.",
                )
            ],
        ),
        Turn(
            "Checking the draft.",
            [
                ToolUse(
                    checker,
                    {"prompt": "Verify every claim in draft v1 against the sources."},
                    "2 of 6 claims unsupported: 'efficiency holds at -25C' (sources stop at -15C); 'costs fell 40%' (no source).",
                )
            ],
        ),
        Turn(
            "Two claims need sources.",
            [
                ToolUse(
                    researcher,
                    {"prompt": "Find evidence on efficiency below -15C and on cost changes since 2020."},
                    "Below -15C: one lab study, COP 1.8 at -25C. Costs: installed cost down 18% (2020-2025, government statistics).",
                )
            ],
        ),
        Turn(
            "Revising with the new evidence.",
            [
                ToolUse(
                    writer,
                    {"prompt": "Revise draft v1: COP 1.8 at -25C, costs down 18%."},
                    f"Draft v2 ({k.n(290, 320)} words) with both claims corrected and cited.",
                )
            ],
        ),
        Turn(
            "Final check.",
            [
                ToolUse(
                    checker,
                    {"prompt": "Verify every claim in draft v2."},
                    "All 6 claims supported by the cited sources.",
                )
            ],
        ),
    ]
    return Run(
        f"Produce a fact-checked 300-word brief on {topic}.",
        "supervisor",
        k.model(),
        turns,
        f"Here is the fact-checked brief on {topic} (draft v2, all claims sourced).",
    )
