# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 5: voice agents, e-commerce, Kubernetes, MCP catalogues and multi-agent runs, written blind.

Each situation is what happened in one public issue thread or pull request of an agent
framework or tool the corpus and batches 1 to 4 had not cited (Datus, GitHub Copilot CLI,
comfyui-mcp, langchain_dart, Convex Agent, LiveKit Agents, the MCP specification, naas
ABI, traceroost, WSO2 Agent Manager, agentregistry, Shopify CLI), labelled from the
situation itself: ``loop`` when the run spends its steps learning nothing new and ends
without getting further, ``healthy`` when the repetition is the work. Registered in this
batch's own registry, never the corpus's. Rendered also in the Vercel AI SDK's telemetry
(the Convex Agent of one thread is built on it).
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch5"
WRITTEN = "2026-12-03"
AUTHOR = "written blind"

#: The renderings of this batch: the corpus's three conventions and four further shapes.
CONVENTIONS = (
    "genai",
    "openinference",
    "openllmetry",
    "genai-events",
    "openinference-langgraph",
    "openai-content-events",
    "vercel-ai-sdk",
)

SITUATIONS: dict[str, Situation] = {}
situation = registrar(SITUATIONS)


# ======================================================================================
# Loops
# ======================================================================================


@situation(
    "sql-answer-found-query-replayed",
    LOOP,
    "The monthly revenue query answers the question at the third turn; the same query is then run again and again, each time 'about to give the final answer'",
    (pr("Datus-ai/Datus-agent", 1395),),
    "The answer (a 23-row table) is in hand at the third turn and the model says so in new words at every turn, "
    "yet each turn runs the byte-identical query again and gets the same 23 rows, until the turn limit ends the "
    "run with no answer given.",
)
def sql_answer_found_query_replayed(k: Kit) -> Run:
    months = [
        f"{y}-{m:02d}"
        for y, m in [(2016, 10), (2016, 12)]
        + [(2017, i) for i in range(1, 13)]
        + [(2018, i) for i in range(1, 10)]
    ]
    rows = [{"month": mth, "revenue": round(k.n(10_000, 1_100_000) + k.n(0, 99) / 100, 2)} for mth in months]
    sql = k.pick(
        (
            "SELECT strftime('%Y-%m', o.order_purchase_timestamp) AS month, ROUND(SUM(p.payment_value), 2) AS revenue FROM orders o JOIN order_payments p ON p.order_id = o.order_id GROUP BY month ORDER BY month",
            "SELECT DATE_TRUNC('month', order_purchase_timestamp) AS month, SUM(payment_value) AS revenue FROM olist.orders JOIN olist.order_payments USING (order_id) GROUP BY 1 ORDER BY 1",
        )
    )
    tool = k.pick(("execute_sql", "run_sql", "query_database"))
    result = _j({"columns": ["month", "revenue"], "rows": rows, "row_count": len(rows)})
    turns = [
        Turn(
            k.say(("Let me find the tables with orders and payments.",)),
            [
                ToolUse(
                    "search_table",
                    {"query": "orders payments revenue"},
                    _j({"tables": ["orders", "order_payments", "order_items", "customers"]}),
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "describe_table",
                    {"table": "order_payments"},
                    _j(
                        {
                            "columns": [
                                "order_id",
                                "payment_sequential",
                                "payment_type",
                                "payment_installments",
                                "payment_value",
                            ]
                        }
                    ),
                )
            ],
        ),
        Turn(None, [ToolUse(tool, {"sql": sql}, result)]),
    ]
    thoughts = (
        "The SQL validated successfully. I have my answer. Let me produce the final output.",
        "The query returned 23 months of revenue; that answers the question. Producing the final JSON now.",
        "I already have the monthly revenue. Final answer next.",
        "Results confirmed: revenue per month from 2016-10 to 2018-09. Let me output the final result.",
        None,
    )
    for _ in range(k.n(10, 22)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(tool, {"sql": sql}, result)]))
    return Run(
        k.pick(("每个月的收入是多少?", "What is the revenue for each month?")),
        "olist_order_analyst",
        k.pick(("deepseek-v4-pro", "deepseek-chat", "kimi-k2")),
        turns,
        None,
        "MaxTurnsExceeded: Max turns (30) exceeded",
    )


@situation(
    "autopilot-restates-done",
    LOOP,
    "Autopilot keeps continuing after the work is done; each turn the model says, in new words, that it is done",
    (gh("github/copilot-cli", 2374),),
    "The feature is built and the build passes; after that every continuation produces a reworded statement that "
    "the task is complete (with the same list of changes) and no tool call. Nothing changes between these turns, "
    "the run cannot end on its own, and the user cancels it.",
)
def autopilot_restates_done(k: Kit) -> Run:
    page = k.pick(
        ("Pages/Venta/VentaRapida.cshtml", "Pages/Sales/QuickSale.cshtml", "Views/Pos/Checkout.cshtml")
    )
    solution = k.pick(("ZeusVentaRapida.sln", "Shop.Pos.sln"))
    build = f"dotnet build {solution} --no-restore"
    turns = [
        Turn(
            "Reading the quick sale page.",
            [
                ToolUse(
                    "view",
                    {"path": page},
                    '<select id="producto" class="select2"></select>\n<span id="precio"></span>\n',
                )
            ],
        ),
        Turn(
            "Adding the stock and service indicator beside the product selector.",
            [
                ToolUse(
                    "edit",
                    {
                        "path": page,
                        "old_str": '<span id="precio"></span>',
                        "new_str": '<span id="precio"></span>\n<small id="existencia"></small>',
                    },
                    f"Edited {page}",
                )
            ],
        ),
        Turn(
            None, [ToolUse("bash", {"command": build}, "Build succeeded.\n    0 Warning(s)\n    0 Error(s)")]
        ),
    ]
    changes = f"{page} updated; stock/service indicator added; resets on init, clear and add; no Select2 or backend changes; `{build}` succeeded."
    wordings = (
        f"There is no unfinished work on this task. Already implemented and verified: {changes} I cannot call task_complete because that tool is not available in this session.",
        f"The task is complete. Verified final result: {changes} No work remains.",
        f"This task is finished. Completed and verified: {changes}",
        "The repeated completion prompt is stale automation. The work is done and there is no additional action I can take.",
        "Done. Nothing further to change; the build is green.",
        f"All requested changes are in place ({page}) and the solution builds. I have nothing left to do here.",
    )
    for _ in range(k.n(6, 12)):
        turns.append(Turn(k.pick(wordings)))
    return Run(
        f"Show the current stock (or 'Service') of the selected product on {page}, and reset it when the form is cleared.",
        "copilot",
        k.pick(("gpt-5.4", "claude-sonnet-4.6", "claude-haiku-4.5")),
        turns,
        None,
        "AbortError: cancelled by the user",
    )


@situation(
    "tool-catalog-search-never-matches",
    LOOP,
    "A small local model searches the tool catalogue for a Civitai tool with a new query every round; no tool ever matches",
    (pr("artokun/comfyui-mcp", 191),),
    "The tool it is looking for does not exist, and every search says 'No tools matched'. Because each query "
    "differs ('civitai', 'lora', 'flux', ...) no two calls are the same, but each learns the same thing as the "
    "first; the model never tries another way and the run ends with nothing on the canvas.",
)
def tool_catalog_search_never_matches(k: Kit) -> Run:
    tool = k.pick(("list_tools", "search_tools", "panel_list_tools"))
    queries = k.shuffle(
        [
            "civitai",
            "lora",
            "flux",
            "civitai lora",
            "download lora",
            "flux lora civitai",
            "model search",
            "add lora",
            "civitai download",
            "lora loader",
        ]
    )
    shape = k.pick(
        (
            lambda q: f"No tools matched '{q}'.",
            lambda q: _j({"query": q, "tools": [], "total": 0}),
            lambda q: f"0 results for {q}",
        )
    )
    thoughts = (
        "Thinking…",
        "Let me search the tools for Civitai support.",
        "Maybe it is listed under another name.",
        None,
        None,
    )
    turns = []
    for q in queries[: k.n(7, 10)]:
        turns.append(Turn(k.pick(thoughts), [ToolUse(tool, {"query": q}, shape(q))]))
    return Run(
        "Find a good Flux LoRA on Civitai and add it to my workflow.",
        k.pick(("local-agent", "comfy-assistant")),
        k.pick(("gemma4:e4b", "gemma3:12b", "qwen3:8b")),
        turns,
        None,
        k.pick(
            (
                "tool_loop: ended the turn after repeated catalogue searches",
                "AbortError: stopped by the user",
                None,
            )
        ),
    )


@situation(
    "realtime-required-tool-repeats",
    LOOP,
    "A realtime voice session with tool choice 'required' calls the same tool again after every result, forever",
    (gh("davidmigloz/langchain_dart", 696),),
    "With tool choice set to 'required' the model may not answer in speech, so after the tool returns (an empty "
    "object) it calls the same tool with the same arguments again, and again; nothing new comes back and the "
    "caller never hears an answer.",
)
def realtime_required_tool_repeats(k: Kit) -> Run:
    tool, args = k.pick(
        (
            ("save_caller_note", {"note": "Caller asked about opening hours on Saturday."}),
            ("log_intent", {"intent": "opening_hours", "confidence": 0.93}),
            ("set_call_topic", {"topic": "store hours"}),
        )
    )
    empty = k.pick(("{}", _j({}), ""))
    turns = [Turn(None, [ToolUse(tool, dict(args), empty)]) for _ in range(k.n(10, 20))]
    return Run(
        "Are you open on Saturday?",
        k.pick(("realtime_assistant", "voice-receptionist")),
        k.pick(("gpt-4o-mini-realtime-preview", "gpt-4o-realtime-preview")),
        turns,
        None,
        k.pick(("AbortError: session closed by the client", None)),
    )


@situation(
    "prompt-builder-repeats-positive-result",
    LOOP,
    "The agent builds the image prompt, is told it succeeded, and builds it again until the step limit; the image is never generated",
    (gh("get-convex/agent", 167),),
    "The run should end with the image tool; instead the prompt-building tool is called again at every step with "
    "the same request and answers 'success' with the same prompt each time, until the five steps are used up and "
    "the run stops with no image.",
)
def prompt_builder_repeats_positive_result(k: Kit) -> Run:
    subject = k.pick(
        (
            "a red fox in a snowy forest at dawn",
            "a minimalist poster of a coffee cup",
            "a watercolor lighthouse in a storm",
        )
    )
    built = f"{subject}, highly detailed, soft natural light, 4k, trending on artstation"
    result = _j({"success": True, "prompt": built})
    args = {"description": subject}
    steps = k.pick((5, 5, 6, 8))
    turns = [Turn(None, [ToolUse("promptBuilder", dict(args), result)])]
    for _ in range(steps - 1):
        turns.append(
            Turn(k.pick((None, None, "The prompt is ready.")), [ToolUse("promptBuilder", dict(args), result)])
        )
    return Run(
        f"Generate an image of {subject}.",
        "Agent",
        k.pick(("gpt-5-nano", "gpt-5-mini")),
        turns,
        None,
        k.pick((f"maxSteps ({steps}) reached without a generateImage call", None)),
    )


@situation(
    "voice-email-readback-loop",
    LOOP,
    "A voice receptionist records the caller's email correctly three times and reads it back the same way each time; the call ends without a booking",
    (pr("livekit/agents", 6990),),
    "Each time the caller rejects the read-back, the agent records the same address again and reads it back as a "
    "word again, so the caller hears the same thing and rejects it again. No attempt differs from the first and "
    "the call ends without the room being booked.",
)
def voice_email_readback_loop(k: Kit) -> Run:
    first, last = k.pick((("shayne", "cole"), ("aimee", "rhys"), ("jon", "mcbride")))
    domain = k.pick(("gmail.com", "outlook.com"))
    email = f"{first}.{last}@{domain}"
    tool = k.pick(("update_email_address", "update_email", "set_email"))
    ack = k.pick((_j({"email": email, "status": "recorded"}), f"Email recorded: {email}"))
    readbacks = (
        f"I have your email as {first} dot {last} at {domain.split('.')[0]} dot com. Is that correct?",
        f"Thank you. So that's {first}.{last} at {domain}, right?",
        f"Got it, {first} dot {last} at {domain.split('.')[0]} dot com. Did I get that right?",
    )
    turns = [
        Turn(
            "Let me check availability for those dates.",
            [
                ToolUse(
                    "check_availability",
                    {"check_in": "2026-12-18", "check_out": "2026-12-20", "guests": 2},
                    _j({"available": True, "room_type": "double", "rate": 189}),
                )
            ],
        )
    ]
    for _ in range(k.n(3, 4)):
        turns.append(Turn(k.pick(readbacks), [ToolUse(tool, {"email": email}, ack)]))
    return Run(
        "I'd like to book a double room from the 18th to the 20th of December.",
        k.pick(("hotel_receptionist", "front-desk")),
        k.pick(("gpt-4.1", "gpt-4o-mini")),
        turns,
        None,
        k.pick(("call ended: participant disconnected", "session closed before a booking was made")),
    )


@situation(
    "async-task-polled-without-waiting",
    LOOP,
    "A long task is polled back to back with no pause between checks; the context fills up with 'running' before the task ends",
    (gh("modelcontextprotocol/modelcontextprotocol", 1955),),
    "Without a way to wait, the agent fixates on the running task and asks for its status immediately after each "
    "answer, dozens of times within seconds; every answer is 'running' with the same partial output, nothing is "
    "learned after the first, and the run ends when its context is exhausted, before the task finishes.",
)
def async_task_polled_without_waiting(k: Kit) -> Run:
    start = k.pick(("start_async_task", "run_async"))
    get = k.pick(("get_async_task", "task_status"))
    task = k.volatile_id()
    command = k.pick(
        (
            "terraform apply -auto-approve",
            "helm upgrade --install api ./chart --wait",
            "kubectl rollout status deploy/api --timeout=15m",
        )
    )
    head = k.pick(
        (
            "Acquiring state lock. This may take a few moments...",
            'Release "api" does not exist. Installing it now.',
            'Waiting for deployment "api" rollout to finish: 0 of 3 updated replicas are available...',
        )
    )
    running = _j({"id": task, "status": "running", "head": head})
    turns = [
        Turn(
            k.say(("Starting it in the background.",)),
            [ToolUse(start, {"command": command}, _j({"id": task, "status": "running"}))],
        )
    ]
    for _ in range(k.n(14, 26)):
        turns.append(
            Turn(
                k.pick(("Checking whether it has finished.", None, None)),
                [ToolUse(get, {"id": task}, running)],
                gap_ms=k.n(0, 300),
            )
        )
    return Run(
        f"Apply the infrastructure change for the staging cluster ({command}) and tell me when it is done.",
        k.pick(("stakpak", "infra-agent")),
        k.model(),
        turns,
        None,
        "ContextWindowExceeded: the conversation exceeded the model's context window",
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "sequential-supervisor-delegation",
    HEALTHY,
    "A supervisor hands one step to each sub-agent in turn, gets control back each time, and writes the answer",
    (pr("jupyter-naas/abi", 1068),),
    "Control passes supervisor -> sub-agent -> supervisor several times in one turn, which looks like hand-offs "
    "going round; but each sub-agent does a different step and returns a different result, and the supervisor "
    "ends with the answer built from them.",
    lookalike_of=("handoff-pingpong", "closing-pleasantries-groupchat", "slack-ack-pingpong"),
)
def sequential_supervisor_delegation(k: Kit) -> Run:
    sku = k.pick(("running shoes", "espresso machines", "winter jackets"))
    quarter = k.pick(("Q3 2026", "Q4 2026"))
    units = k.n(4_000, 40_000)
    growth = k.n(3, 28)
    forecast = int(units * (1 + growth / 100))
    supervisor = k.pick(("AbiAgent", "supervisor"))
    turns = [
        Turn(
            f"First I need the {quarter} sales for {sku}.",
            [
                ToolUse(
                    "transfer_to_sales_data_agent",
                    {"task": f"Units sold of {sku} in {quarter}"},
                    "Transferred to sales_data_agent",
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "run_sales_query",
                    {"category": sku, "period": quarter},
                    _j({"units": units, "revenue_eur": units * k.n(40, 300)}),
                )
            ],
            agent="sales_data_agent",
        ),
        Turn(f"{units} units of {sku} were sold in {quarter}.", agent="sales_data_agent"),
        Turn(
            "Now the forecast for next quarter.",
            [
                ToolUse(
                    "transfer_to_forecast_agent",
                    {"task": f"Forecast next quarter from {units} units"},
                    "Transferred to forecast_agent",
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "seasonal_forecast",
                    {"series": sku, "last_value": units},
                    _j({"forecast_units": forecast, "growth_pct": growth}),
                )
            ],
            agent="forecast_agent",
        ),
        Turn(f"Forecast: {forecast} units (+{growth}%).", agent="forecast_agent"),
        Turn(
            "Finally the stock position.",
            [
                ToolUse(
                    "transfer_to_inventory_agent",
                    {"task": f"Stock on hand for {sku}"},
                    "Transferred to inventory_agent",
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "stock_on_hand",
                    {"category": sku},
                    _j({"on_hand": k.n(500, 9000), "inbound": k.n(0, 5000)}),
                )
            ],
            agent="inventory_agent",
        ),
        Turn("Stock levels reported.", agent="inventory_agent"),
    ]
    return Run(
        f"Prepare a short brief on {sku}: last quarter's sales, next quarter's forecast and whether we need to reorder.",
        supervisor,
        k.model(),
        turns,
        f"{sku.title()}: {units} units sold in {quarter}; {forecast} forecast next quarter (+{growth}%); a reorder is recommended against current stock.",
    )


@situation(
    "lint-after-each-edit-clean",
    HEALTHY,
    "The linter is re-run after each file is fixed and prints the same clean result every time, then the tests pass",
    (pr("traceroost/core", 215),),
    "The same verification command with the same clean output several times over looks like a stuck agent, but "
    "each run follows an edit to a different file: it checks new work, and the run moves on to the next file and "
    "ends with the change done and the tests green.",
    lookalike_of=("exact-repeat-listing", "reverify-after-done", "empty-git-grep-until-max-turns"),
)
def lint_after_each_edit_clean(k: Kit) -> Run:
    shell, key = k.shell_tool()
    edit = k.pick(("str_replace_editor", "edit_file", "replace_in_file"))
    lint = k.pick(("ruff check .", "npx eslint . --max-warnings 0", "golangci-lint run"))
    clean = {
        "ruff check .": "All checks passed!",
        "npx eslint . --max-warnings 0": "",
        "golangci-lint run": "0 issues.",
    }[lint]
    files = k.paths(k.n(3, 5))
    turns = list(k.prelude(0, 2))
    for f in files:
        old = f"timeout={k.n(1, 9)}"
        turns.append(
            Turn(
                k.say((f"Passing the request timeout through in {f}.", f"Now {f}.")),
                [
                    ToolUse(
                        edit,
                        {"path": f, "old_str": old, "new_str": "timeout=settings.request_timeout"},
                        f"The file {f} has been edited.",
                    )
                ],
            )
        )
        turns.append(Turn(None, [ToolUse(shell, {key: lint}, clean)]))
    passed = k.n(40, 300)
    turns.append(
        Turn(
            "Running the test suite.",
            [ToolUse(shell, {key: "make test"}, f"{passed} passed in {k.n(3, 40)}.{k.n(10, 99)}s")],
        )
    )
    return Run(
        "Make every outgoing HTTP call use the configured request timeout instead of hard-coded values.",
        k.agent(),
        k.model(),
        turns,
        f"All {len(files)} call sites now use settings.request_timeout; lint is clean and {passed} tests pass.",
    )


@situation(
    "agent-503-until-booted",
    HEALTHY,
    "A freshly deployed agent answers 503 while it boots; the caller waits and retries until a call is answered",
    (pr("wso2/agent-manager", 1484),),
    "Right after a deploy the pod is routed traffic before the agent listens, so the first calls fail with 503 "
    "for about a minute and a half; the caller waits between attempts, the agent comes up, and the question gets "
    "its answer. The repeated failure is the boot time, and it ends.",
    lookalike_of=(
        "rate-limit-storm-never-recovers",
        "rate-limited-every-attempt",
        "tool-rate-limited-every-time",
    ),
)
def agent_503_until_booted(k: Kit) -> Run:
    invoke = k.pick(("invoke_agent", "call_agent_endpoint", "http_post"))
    deploy = k.pick(("deploy_agent", "agent_deploy"))
    url = "https://agents.internal.example/it-helpdesk/invoke"
    question = k.pick(
        (
            "How do I reset my VPN token?",
            "My laptop cannot reach the printer on floor 3.",
            "Request access to the finance share.",
        )
    )
    turns = [
        Turn(
            "Deploying the it-helpdesk agent.",
            [
                ToolUse(
                    deploy,
                    {"name": "it-helpdesk", "image": f"registry.example/it-helpdesk:{k.hex(7)}"},
                    _j({"status": "active", "replicas": 1}),
                )
            ],
        )
    ]
    for _ in range(k.n(3, 5)):
        turns.append(
            Turn(
                k.pick(("The agent is probably still starting; retrying shortly.", None)),
                [
                    ToolUse(
                        invoke,
                        {"url": url, "body": {"message": question}},
                        error=f"HTTP 503 Service Unavailable: no healthy upstream (x-request-id: {k.uuid()})",
                        error_type="HTTPError",
                    )
                ],
                gap_ms=k.n(15_000, 30_000),
            )
        )
    answer = k.pick(
        (
            "Open the self-service portal, choose 'VPN', then 'Reset token'; the new token arrives by SMS.",
            "Ticket INC-4821 was opened for the printer queue on floor 3.",
            "Access request AR-2291 was sent to the finance share owner.",
        )
    )
    turns.append(
        Turn(
            None,
            [ToolUse(invoke, {"url": url, "body": {"message": question}}, _j({"reply": answer}))],
            gap_ms=k.n(15_000, 30_000),
        )
    )
    return Run(
        f"Deploy the it-helpdesk agent and ask it: {question}",
        k.pick(("ops-agent", "platform-assistant")),
        k.model(),
        turns,
        f"The it-helpdesk agent is up (it took about a minute and a half to start) and answered: {answer}",
    )


@situation(
    "agent-resource-ready-poll",
    HEALTHY,
    "After deploying an agent to Kubernetes the agent resource is read until Ready turns True (DeploymentNotReady several times), then used",
    (gh("agentregistry-dev/agentregistry", 230),),
    "The resource reports Ready=False while its deployment comes up, so the same status query returns the same "
    "answer a few times with pauses in between; then it reports Ready=True, the agent is called, and the run "
    "ends with the deployment confirmed working.",
    lookalike_of=("poll-never-ends", "poll-done-keeps-polling", "async-task-polled-without-waiting"),
)
def agent_resource_ready_poll(k: Kit) -> Run:
    shell, key = k.shell_tool()
    name = k.pick(("k8s-troubleshooter", "helm-agent", "observability-agent"))
    ns = k.pick(("kagent", "agents"))
    status_cmd = f"kubectl get agents.kagent.dev {name} -n {ns} -o jsonpath='{{.status.conditions[?(@.type==\"Ready\")]}}'"
    not_ready = _j(
        {
            "type": "Ready",
            "status": "False",
            "reason": "DeploymentNotReady",
            "message": "Deployment is not ready, 0/1 pods are ready",
        }
    )
    turns = [
        Turn(
            f"Deploying {name} to the cluster.",
            [
                ToolUse(
                    shell,
                    {key: f"arctl deploy {name} --runtime kubernetes --namespace {ns}"},
                    f"Agent {name} deployed to namespace {ns}.",
                )
            ],
        )
    ]
    for _ in range(k.n(3, 6)):
        turns.append(
            Turn(
                k.pick(("Not ready yet; waiting.", None, None)),
                [ToolUse(shell, {key: status_cmd}, not_ready)],
                gap_ms=k.n(10_000, 20_000),
            )
        )
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    shell,
                    {key: status_cmd},
                    _j(
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Reconciled",
                            "message": "Agent is ready",
                        }
                    ),
                )
            ],
            gap_ms=k.n(10_000, 20_000),
        )
    )
    turns.append(
        Turn(
            "It is ready; sending a test question.",
            [
                ToolUse(
                    shell,
                    {key: f"kagent invoke -a {name} -n {ns} --task 'list pods in kube-system'"},
                    "coredns-5d78c9869d-2x7kq   Running\nkube-proxy-9wz4m   Running\nmetrics-server-7cd5d9f7b9-lq2hn   Running",
                )
            ],
        )
    )
    return Run(
        f"Deploy the {name} agent to the cluster and check that it answers.",
        k.pick(("platform-agent", "ops-agent")),
        k.model(),
        turns,
        f"{name} is deployed in {ns}, Ready=True, and answered a test task.",
    )


@situation(
    "bulk-operation-count-grows",
    HEALTHY,
    "A bulk export of the store's products is polled: quick checks at first, then slower ones, the object count climbing until COMPLETED",
    (pr("Shopify/cli", 6695),),
    "The status call is the same every time and says RUNNING many times, but the object count it reports grows "
    "from poll to poll (0, then thousands) and the operation completes; the export is fetched and the run ends "
    "with the product count. The progress is in the numbers.",
    lookalike_of=("poll-never-ends", "mcp-cursor-ignored-same-page", "assistant-run-incomplete-poll"),
)
def bulk_operation_count_grows(k: Kit) -> Run:
    op = f"gid://shopify/BulkOperation/{k.n(10**11, 10**12 - 1)}"
    status = k.pick(("bulk_operation_status", "get_bulk_operation"))
    total = k.n(6_000, 40_000)
    turns = [
        Turn(
            "Starting a bulk export of all products.",
            [
                ToolUse(
                    "bulk_operation_run_query",
                    {"query": "{ products { edges { node { id handle status totalInventory } } } }"},
                    _j({"id": op, "status": "CREATED"}),
                )
            ],
        )
    ]
    for _ in range(k.n(2, 4)):
        turns.append(
            Turn(
                None,
                [ToolUse(status, {"id": op}, _j({"id": op, "status": "RUNNING", "objectCount": 0}))],
                gap_ms=1_000,
            )
        )
    count = 0
    while count < total:
        count = min(total, count + k.n(total // 5, total // 2))
        done = count == total
        body = {"id": op, "status": "COMPLETED" if done else "RUNNING", "objectCount": count}
        if done:
            body["url"] = f"https://storage.example/bulk/{k.hex(16)}.jsonl"
        turns.append(Turn(None, [ToolUse(status, {"id": op}, _j(body))], gap_ms=5_000))
    active = k.n(total // 2, total)
    turns.append(
        Turn(
            "The export is complete; reading it.",
            [
                ToolUse(
                    "download_jsonl",
                    {"id": op},
                    _j({"lines": total, "by_status": {"ACTIVE": active, "DRAFT": total - active}}),
                )
            ],
        )
    )
    return Run(
        "How many products in the store are active, and how many are still drafts?",
        k.pick(("shop-assistant", "store-ops")),
        k.model(),
        turns,
        f"{active} of the {total} products are active; {total - active} are drafts.",
    )


@situation(
    "voice-name-capture-converges",
    HEALTHY,
    "A healthcare voice agent records the caller's name three times as the caller corrects it, then goes on to book the appointment",
    (pr("livekit/agents", 4606),),
    "The same update tool is called three times in a row, but each time with a different value, because the "
    "caller corrects what was heard ('Still', 'Tomo', then the right name); once it is right the agent collects "
    "the rest and books the visit. The repetition is the correction converging.",
    lookalike_of=("voice-email-readback-loop", "update-same-record-respelled", "checkbox-toggle-cycle"),
)
def voice_name_capture_converges(k: Kit) -> Run:
    right_first, right_last = k.pick((("Theo", "Monnom"), ("Niamh", "Okoro"), ("Joaquin", "Baptiste")))
    misheard = k.pick(
        (
            [("Still", ""), ("Tomo", "")],
            [(right_first[:3], ""), (right_first, right_last[:-2])],
            [("Neve", "Okora"), (right_first, "Okora")],
        )
    )
    update = k.pick(("update_name", "record_patient_name", "set_name"))
    turns = []
    for first, last in [*misheard, (right_first, right_last)]:
        args = {"first_name": first} if not last else {"first_name": first, "last_name": last}
        text = f"Thank you. I have {first} {last}".strip() + ". Is that right?"
        turns.append(Turn(text, [ToolUse(update, args, _j({"recorded": args}))]))
    dob = f"19{k.n(50, 99)}-{k.n(1, 12):02d}-{k.n(1, 28):02d}"
    doctor = k.pick(("Dr. Patel", "Dr. Nguyen", "Dr. Fischer"))
    slot = f"2026-12-{k.n(8, 22):02d}T{k.pick(('09:30', '11:00', '14:15'))}"
    turns += [
        Turn(
            "And your date of birth?",
            [ToolUse("update_date_of_birth", {"date_of_birth": dob}, _j({"recorded": dob}))],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "update_insurance",
                    {"provider": k.pick(("Aetna", "Cigna")), "member_id": k.hex(9).upper()},
                    _j({"verified": True}),
                )
            ],
        ),
        Turn(
            "Let me find a time with the doctor.",
            [
                ToolUse(
                    "list_available_slots",
                    {"doctor": doctor, "from": "2026-12-08", "to": "2026-12-22"},
                    _j({"slots": [slot]}),
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    "schedule_appointment",
                    {"doctor": doctor, "start": slot, "patient": f"{right_first} {right_last}"},
                    _j({"confirmation": f"HC-{k.n(10000, 99999)}"}),
                )
            ],
        ),
    ]
    return Run(
        "I'd like to see a doctor about my back pain.",
        k.pick(("healthcare_agent", "clinic-voice")),
        k.pick(("gpt-4.1-mini", "gpt-4o-mini")),
        turns,
        f"You're booked with {doctor} on {slot.replace('T', ' at ')}, {right_first}.",
    )
