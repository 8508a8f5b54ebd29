# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 1: browser automation, workflow builders, crawl jobs and CI, written blind.

Each situation is what happened in one public issue thread of an agent framework or tool
the corpus had not cited (browser-use, smolagents, Goose, n8n, Dify, Mastra, superplane,
coday, an MCP tool server), labelled from the situation itself: ``loop`` when the run
spends its steps learning nothing new and ends without getting further, ``healthy`` when
the repetition is the work. Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch1"
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
    "browser-stale-index-click",
    LOOP,
    "A browser agent clicks the same element index again and again; every click answers that the element is not clickable",
    (gh("browser-use/browser-use", 554),),
    "The same click on the same index fails with the same 'element not clickable, the page probably changed' "
    "warning every time; the agent neither scrolls, refreshes nor picks another element, so each step repeats "
    "a failure it has already seen and the run ends at its step limit without submitting the form.",
)
def browser_stale_index_click(k: Kit) -> Run:
    site = k.pick(
        (
            "https://careers.example-corp.com/apply",
            "https://portal.cityutilities.org/move-out",
            "https://app.hrdesk.io/leave/new",
            "https://shop.example.net/checkout",
        )
    )
    tool, key = k.pick(
        (("click_element_by_index", "index"), ("click_element", "index"), ("browser_click", "element_index"))
    )
    index = k.n(30, 140)
    as_error = k.maybe(0.5)
    warning = f"Element not clickable with index {index} - most likely the page changed"
    thoughts = (
        f"The submit button is element {index}; clicking it.",
        "The click did not go through. Trying the button again.",
        f"Submitting the form by clicking index {index}.",
        "The form still needs submitting; I'll click the submit button.",
        "Let me retry the click on the submit button.",
        "It seems the previous click failed, clicking once more.",
    )
    field = index - k.n(6, 20)
    name = k.pick(("Jordan Miles", "Ana Ruiz", "Wei Chen"))
    turns = [
        Turn(
            k.say(("Opening the form.", None)), [ToolUse("go_to_url", {"url": site}, f"Navigated to {site}")]
        ),
        Turn(
            k.say(("Filling in the name field.",)),
            [ToolUse("input_text", {key: field, "text": name}, f"Input {name} into index {field}")],
        ),
    ]
    for _ in range(k.n(6, 12)):
        call = (
            ToolUse(tool, {key: index}, error=warning, error_type="BrowserError")
            if as_error
            else ToolUse(tool, {key: index}, f"Error executing action {tool}: {warning}")
        )
        turns.append(Turn(k.say(thoughts, p_silent=0.1), [call]))
    failure = k.pick(
        (
            "AgentError: Stopping due to 3 consecutive failures",
            "MaxStepsReached: Reached max steps (25)",
            None,
        )
    )
    final = None if failure else "I could not submit the form; the submit button did not respond."
    return Run(
        f"Fill in and submit the form at {site}.",
        k.pick(("browser_use_agent", "Agent", "web_agent")),
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "checkbox-toggle-cycle",
    LOOP,
    "Clicking the same consent checkboxes round after round: the top one toggles the others, and the agent never presses Next",
    (gh("browser-use/browser-use", 2901),),
    "Checking the top box checks (or unchecks) the three below it, so the agent clicks the same four boxes in the "
    "same order round after round with the same 'clicked' answers; it never reaches the Next button and the run "
    "ends on the consent page it started on.",
)
def checkbox_toggle_cycle(k: Kit) -> Run:
    tool, key = k.pick(
        (("click_element_by_index", "index"), ("click", "index"), ("browser_click", "element_index"))
    )
    base = k.n(60, 90)
    boxes = [base, base + k.n(5, 9), base + k.n(10, 13), base + k.n(15, 20)]
    typer = k.pick(("input_text", "type_text", "fill"))
    fields = [
        ("First Name", "Minji"),
        ("Last Name", "Park"),
        ("Email", "minji.park@example.com"),
        ("Phone", "010-5555-0199"),
    ]
    turns = []
    for i, (label, value) in enumerate(fields):
        turns.append(
            Turn(
                k.say((f"Entering the {label}.",)),
                [
                    ToolUse(
                        typer,
                        {key: base - 20 + 3 * i, "text": value},
                        f"Input {value} into index {base - 20 + 3 * i}",
                    )
                ],
            )
        )
    thoughts = (
        "The consent checkboxes are not all checked yet; clicking them.",
        "Some required boxes appear unchecked. Clicking all checkboxes.",
        "Checking every consent box before pressing Next.",
        "Verifying the checkboxes: they need to be checked.",
    )
    for _ in range(k.n(3, 6)):
        for box in boxes:
            turns.append(
                Turn(
                    k.say(thoughts, p_silent=0.4),
                    [ToolUse(tool, {key: box}, f"Clicked element with index {box}")],
                )
            )
    failure = k.pick(
        ("MaxStepsReached: Reached max steps (30)", "AbortError: the request was aborted by the user", None)
    )
    return Run(
        "Enter the personal information, click all checkboxes, select the Next button and verify that the payment page opens.",
        k.pick(("browser_use_agent", "Agent")),
        k.model(),
        turns,
        None if failure else "The checkboxes are checked; I could not confirm the payment page.",
        failure,
    )


@situation(
    "answer-found-not-returned",
    LOOP,
    "The tool gives the answer at the first step; the agent keeps fetching the same thing and never returns it",
    (gh("huggingface/smolagents", 1226),),
    "The first call already returns the line the user asked for; every later step fetches the same line again "
    "and gets the same text, the agent never gives its final answer and stops at max steps (in the report with a "
    "wrong answer): nothing after the first step was new.",
)
def answer_found_not_returned(k: Kit) -> Run:
    n = k.n(3, 40)
    doc = k.pick(("the smolagents README", "README.md", "CONTRIBUTING.md", "docs/quickstart.md"))
    line = k.pick(
        (
            "smolagents is a library that enables you to run powerful agents in a few lines of code.",
            "To contribute, fork the repository and open a pull request against main.",
            "Install with pip install smolagents[toolkit] to get the default tools.",
            "Agents write their actions as Python code snippets.",
        )
    )
    code_agent = k.maybe(0.5)
    turns = []
    for i in range(k.n(5, 10)):
        if code_agent:
            var = k.pick(("line", "text", "result", f"line_{n}"))
            code = f"{var} = get_line(line_number={n})\nprint({var})"
            call = ToolUse(
                "python_interpreter",
                {"code": code},
                f"Execution logs:\n{line}\nLast output from code snippet:\nNone",
            )
        else:
            call = ToolUse(
                k.pick(("get_line", "readme_line")) if i == 0 else turns[0].calls[0].name,
                {"line_number": n},
                line,
            )
        thought = k.say(
            (
                f"Thought: I need to get line {n} of {doc}.",
                f"Thought: I have retrieved line {n}. Let me confirm it by reading it again.",
                "Thought: Let me make sure this is the right line.",
                f"Thought: I will call the tool to obtain line {n}.",
            ),
            p_silent=0.2,
        )
        turns.append(Turn(thought, [call]))
    final = k.pick((f"Line {n} could not be determined.", "The line is: Agents are easy to build.", None))
    return Run(
        f"What is the text of line {n} of {doc}?",
        k.pick(("CodeAgent", "ToolCallingAgent")),
        k.model(),
        turns,
        final,
        "AgentMaxStepsError: Reached max steps." if final is None else None,
    )


@situation(
    "empty-listing-rotation",
    LOOP,
    "Rotating through the same three listing tools, each answering an empty list or the same stub, round after round",
    (gh("superplanehq/superplane", 4123),),
    "list_integration_resources, describe_trigger and list_components are called again and again with identical "
    "or barely changed arguments; they keep answering [] or the same empty configuration, the agent never "
    "builds anything and runs until it is interrupted.",
)
def empty_listing_rotation(k: Kit) -> Run:
    integration = k.pick(("github", "gitlab", "pagerduty", "slack"))
    kind = k.pick(("repository", "channel", "service"))
    trigger = k.pick(("github.onPush", "github.onPullRequestMerged", "schedule.cron", "webhook.received"))
    stub = _j({"name": trigger, "configuration": {}, "outputs": []})
    turns = []
    for r in range(k.n(3, 6)):
        kinds = kind if r % 2 == 0 or not k.maybe(0.5) else kind + "s"
        turns.append(
            Turn(
                k.say(
                    (
                        "Let me see which resources the integration exposes.",
                        "Checking the integration resources again.",
                    )
                ),
                [ToolUse("list_integration_resources", {"integration": integration, "type": kinds}, "[]")],
            )
        )
        turns.append(
            Turn(
                k.say(("I'll look at the trigger definition.",), p_silent=0.5),
                [ToolUse("describe_trigger", {"name": trigger}, stub)],
            )
        )
        turns.append(
            Turn(
                k.say(("Listing the available components.", "Which components can I use?"), p_silent=0.5),
                [ToolUse("list_components", {}, "[]")],
            )
        )
    final, failure = k.pick(
        (
            (None, "AbortError: the request was aborted by the user"),
            (None, "MaxTurnsExceeded: Max turns (20) exceeded"),
            ("I couldn't find the resources needed to build this canvas.", None),
        )
    )
    return Run(
        f"Build a canvas that runs the deploy workflow whenever {trigger} fires for our {integration} {kind}.",
        "canvas_builder",
        k.model(),
        turns,
        final,
        failure,
    )


@situation(
    "declined-command-reasked",
    LOOP,
    "The user declines a shell command; the agent asks to run the very same command again, and again",
    (gh("aaif-goose/goose", 1971),),
    "Each attempt is the same command answered with the same refusal from the user; the agent learns nothing from "
    "'declined' and never tries another way or asks why, so the session goes round until the user aborts it.",
)
def declined_command_reasked(k: Kit) -> Run:
    shell, key = k.pick((("developer__shell", "command"), ("shell", "command"), ("run_command", "cmd")))
    cmd = k.pick(
        (
            "rm -rf node_modules && npm install",
            "git reset --hard origin/main",
            "docker compose down -v",
            "pip install -U -r requirements.txt",
            "sudo apt-get install -y postgresql",
        )
    )
    refusal = k.pick(
        (
            "The user has declined to run this tool.",
            "User denied permission to execute this command.",
            "Tool call cancelled: the user chose 'No'.",
        )
    )
    as_error = k.maybe(0.5)
    thoughts = (
        f"To fix this I need to run `{cmd}`.",
        f"Running `{cmd}` should resolve the problem.",
        "I'll run the command to continue.",
        f"The next step is `{cmd}`.",
        "Let me execute this command so we can proceed.",
    )
    turns = k.prelude(1, 2)
    for _ in range(k.n(4, 9)):
        call = (
            ToolUse(shell, {key: cmd}, error=refusal, error_type="PermissionDenied")
            if as_error
            else ToolUse(shell, {key: cmd}, refusal)
        )
        turns.append(Turn(k.say(thoughts, p_silent=0.1), [call]))
    return Run(
        "The dev server won't start after the dependency upgrade; fix it.",
        k.pick(("goose", "developer", "main")),
        k.model(),
        turns,
        None,
        k.pick(("AbortError: the request was aborted by the user", None)),
    )


@situation(
    "plan-restated-model-only",
    LOOP,
    "Model turns only: the agent announces the same next step, hesitates, and announces it again in new words",
    (gh("aaif-goose/goose", 9640),),
    "'I'll write the schema. Wait, I'll also write the .env. Actually, I'll write the schema.' over and over: "
    "every turn states the same two intentions in different words and no tool is ever called; the run spends "
    "its turns on a decision it never acts on.",
)
def plan_restated_model_only(k: Kit) -> Run:
    app = k.pick(("rpg-manager-app", "inventory-api", "booking-service", "recipe-box"))
    schema = f"{app}/backend/schema.sql"
    env = f"{app}/backend/.env"
    first = (
        f"I'll write the schema to {schema}.",
        f"Next I will create {schema} with the tables.",
        f"Let me write the database schema into {schema}.",
        f"Now I'll put the table definitions in {schema}.",
        f"I'm going to write {schema} now.",
    )
    second = (
        f"Wait, I'll also write the {env} for the backend.",
        f"Hmm, the backend also needs {env}; I'll write that too.",
        f"But first, the {env} file with the connection string.",
        f"Actually, {env} should come first so the backend can connect.",
    )
    third = (
        "Actually, I'll write the schema.",
        "No, the schema first.",
        "Let me do the schema after all.",
        "On second thought, schema first, then the env file.",
        "Okay, writing the schema.",
    )
    turns = []
    for _ in range(k.n(6, 10)):
        parts = [k.pick(first), k.pick(second)]
        if k.maybe(0.7):
            parts.append(k.pick(third))
        turns.append(Turn("\n\n".join(parts)))
    return Run(
        f"The tables are created in PostgreSQL. Now write the backend schema file and configuration for {app}.",
        k.pick(("goose", "developer")),
        k.model(),
        turns,
        None,
        k.pick(
            (
                "AbortError: the request was aborted by the user",
                None,
                "MaxTurnsExceeded: Max turns (20) exceeded",
            )
        ),
    )


@situation(
    "retry-restarts-task",
    LOOP,
    "An agent hits its iteration limit, the workflow retries the node, and the agent starts the same task from scratch",
    (gh("n8n-io/n8n", 37779),),
    "Each retry wipes the agent's tool history, so it redoes the same five lookups in the same order with the same "
    "results and hits the same limit before replying; a long cycle (period five or six) that never gets past "
    "the step where it stopped the first time.",
)
def retry_restarts_task(k: Kit) -> Run:
    ticket = f"TCK-{k.n(10000, 99999)}"
    customer = k.pick(("Acme GmbH", "Nordwind AB", "Blue Harbor LLC", "Kestrel & Co"))
    order = f"SO-{k.n(100000, 999999)}"
    sku = k.pick(("WX-200", "PRO-KIT-4", "BLK-1180"))
    steps = [
        (
            "get_ticket",
            {"ticket_id": ticket},
            _j({"id": ticket, "subject": "Wrong item delivered", "customer": customer, "status": "open"}),
        ),
        (
            "search_customers",
            {"name": customer},
            _j([{"id": f"C{k.n(1000, 9999)}", "name": customer, "tier": "business"}]),
        ),
        (
            "list_orders",
            {"customer": customer, "limit": 5},
            _j([{"order": order, "date": "2026-11-02", "items": 3}]),
        ),
        (
            "get_order",
            {"order_id": order},
            _j(
                {
                    "order": order,
                    "lines": [{"sku": sku, "qty": 2}, {"sku": "CBL-10", "qty": 1}],
                    "shipped": True,
                }
            ),
        ),
        ("check_inventory", {"sku": sku}, _j({"sku": sku, "on_hand": k.n(0, 40), "warehouse": "DE-1"})),
    ]
    if k.maybe(0.5):
        steps.append(
            ("get_shipping_policy", {"region": "EU"}, "Replacements ship free within 30 days of delivery.")
        )
    turns = []
    for _ in range(k.n(3, 4)):
        for name, args, result in steps:
            turns.append(
                Turn(
                    k.say(
                        (
                            "Looking up the ticket details.",
                            "Next, the customer's orders.",
                            "Checking stock for a replacement.",
                            None,
                        ),
                        p_silent=0.4,
                    ),
                    [ToolUse(name, args, result)],
                )
            )
    return Run(
        f"Resolve support ticket {ticket}: find what went wrong and draft a reply offering a replacement.",
        k.pick(("AI Agent", "support_agent", "Tools Agent")),
        k.model(),
        turns,
        None,
        "NodeOperationError: Max iterations (5) reached. The agent could not complete the task within the allowed number of iterations.",
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "requested-repeat-clock",
    HEALTHY,
    "The user asks for the same tool to be called N times and each answer printed; the agent does exactly that",
    (gh("langgenius/dify", 19589),),
    "'Call the current_time plugin 10 times, outputting each result immediately': the identical calls are the "
    "task itself, each answers a later time, and the agent stops at the count it was given with every result "
    "reported; repetition requested and bounded is the work, not a loop.",
    ("answer-found-not-returned", "exact-repeat-listing", "volatile-footer-reread"),
)
def requested_repeat_clock(k: Kit) -> Run:
    count = k.pick((5, 6, 8, 10))
    tool = k.pick(("current_time", "get_current_time", "time_now"))
    args = k.pick(({"timezone": "UTC"}, {"tz": "Asia/Shanghai"}, {}))
    t = k.start_time()
    fmt = k.pick(("iso", "plain"))
    results = []
    turns = []
    for i in range(count):
        t += k.n(1, 4)
        stamp = Kit.iso(t) if fmt == "iso" else Kit.iso(t).replace("T", " ").replace("Z", "")
        results.append(stamp)
        text = None if i == 0 else f"Result {i}: {results[i - 1]}"
        turns.append(Turn(text, [ToolUse(tool, dict(args), stamp)]))
    final = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(results))
    return Run(
        f"Call the {tool} tool {count} times, outputting each result immediately.",
        k.pick(("dify_agent", "assistant")),
        k.model(),
        turns,
        final,
    )


@situation(
    "crawl-job-status-poll",
    HEALTHY,
    "Start a site crawl, check its status until it completes, then summarise the crawled pages",
    (gh("mastra-ai/mastra", 5694),),
    "The crawl tool is asynchronous by design: submit, then check the job status repeatedly until it completes. "
    "The completed count rises (with the odd check where it has not moved yet), the job completes and the agent "
    "summarises pages it had not seen before.",
    ("exact-repeat-listing", "empty-listing-rotation", "retry-restarts-task"),
)
def crawl_job_status_poll(k: Kit) -> Run:
    site = k.pick(
        (
            "https://docs.example.dev",
            "https://help.acme.io",
            "https://blog.northwind.app",
            "https://www.cityparks.gov",
        )
    )
    job = k.uuid()
    total = k.n(12, 60)
    crawl, status = k.pick(
        (
            ("firecrawl_crawl", "firecrawl_check_crawl_status"),
            ("crawl_site", "crawl_status"),
            ("start_crawl", "get_crawl_job"),
        )
    )
    turns = [
        Turn(
            k.say((f"Starting a crawl of {site}.",)),
            [ToolUse(crawl, {"url": site, "limit": total}, _j({"success": True, "id": job}))],
        )
    ]
    done = 0
    polls = k.n(4, 8)
    for i in range(polls):
        if i == 0 or not k.maybe(0.25):  # (now and then the count has not moved since the last check)
            done = min(total - 1, done + k.n(1, max(2, total // polls + 2)))
        body = {
            "status": "scraping",
            "completed": done,
            "total": total,
            "creditsUsed": done,
            "expiresAt": "2026-12-04T00:00:00Z",
        }
        turns.append(
            Turn(
                k.say(("The crawl is still running; checking again.", "Checking the crawl job.", None)),
                [ToolUse(status, {"id": job}, _j(body))],
                gap_ms=k.n(3000, 15000),
            )
        )
    pages = [f"{site}/{k.pick(('guide', 'docs', 'post', 'page'))}/{k.word(7)}" for _ in range(min(total, 6))]
    data = [
        {
            "url": p,
            "title": k.word(6).title() + " " + k.word(5),
            "markdown": f"# {k.word(6)}\n{k.word(8)} {k.word(5)}",
        }
        for p in pages
    ]
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    status,
                    {"id": job},
                    _j({"status": "completed", "completed": total, "total": total, "data": data}),
                )
            ],
            gap_ms=k.n(3000, 15000),
        )
    )
    final = (
        f"Crawled {total} pages of {site}. Main sections: " + ", ".join(d["title"] for d in data[:4]) + "."
    )
    return Run(
        f"Crawl {site} and give me an overview of its content.",
        k.pick(("research-agent", "crawler")),
        k.model(),
        turns,
        final,
    )


@situation(
    "cloudflare-wait-then-page",
    HEALTHY,
    "A browser agent waits out a 'checking your browser' page: wait, look, wait, look, then the page loads and it extracts the data",
    (pr("browser-use/browser-use", 3979),),
    "An interstitial bot check shows the same 'Just a moment...' page several times while the agent waits between "
    "looks (a period-2 cycle with identical results); then the real page appears and the agent extracts what it "
    "came for. A wait that ends in new content followed by work is not a loop.",
    ("browser-stale-index-click", "alternating-period-2", "exact-repeat-listing"),
)
def cloudflare_wait_then_page(k: Kit) -> Run:
    url = k.pick(
        (
            "https://www.example-tickets.com/events/2026",
            "https://prices.example-air.com/LIS-BER",
            "https://registry.example.org/companies/0451",
        )
    )
    wait_tool, look_tool = k.pick(
        (("wait", "get_page_title"), ("wait", "extract_page_state"), ("sleep", "page_snapshot"))
    )
    seconds = k.pick((3, 5, 10))
    interstitial = k.pick(
        (
            "Just a moment...\nChecking if the site connection is secure",
            "Verifying you are human. This may take a few seconds.",
            "Please wait while we check your browser...",
        )
    )
    grow = k.maybe(0.4)
    turns = [Turn(k.say(("Opening the page.",)), [ToolUse("go_to_url", {"url": url}, f"Navigated to {url}")])]
    for i in range(k.n(3, 6)):
        s = seconds * (i + 1) if grow else seconds
        turns.append(
            Turn(
                k.say(
                    (
                        "The page is still showing the browser check; waiting.",
                        "Still verifying. I'll wait a bit longer.",
                        None,
                    )
                ),
                [ToolUse(wait_tool, {"seconds": s}, f"Waited for {s} seconds")],
            )
        )
        turns.append(Turn(None, [ToolUse(look_tool, {}, interstitial)]))
    content = k.pick(
        (
            "Events 2026\n- Mar 14 Lisbon Jazz Night, from EUR 35\n- Apr 2 Porto Indie Fest, from EUR 48\n- May 9 Faro Beach Session, from EUR 22",
            "LIS -> BER\n- 07:10 TP 540, EUR 129\n- 12:45 EW 7621, EUR 89\n- 18:30 FR 1883, EUR 64",
            "Company 0451\nName: Harbor Logistics Ltd\nStatus: Active\nIncorporated: 2011-06-02\nDirectors: 2",
        )
    )
    turns.append(Turn("The page has loaded.", [ToolUse(look_tool, {}, content)]))
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "extract_structured_data",
                    {"query": "the listed items with prices or details"},
                    content.split("\n", 1)[1],
                )
            ],
        )
    )
    return Run(
        f"Get the listings from {url}.",
        k.pick(("browser_use_agent", "Agent")),
        k.model(),
        turns,
        "Here is what the page lists:\n" + content,
    )


@situation(
    "ci-checks-busy-poll",
    HEALTHY,
    "After pushing, the agent checks the PR's CI (all pending) with a sleep between checks until every check passes, then merges",
    (gh("Dave-London/Pare", 930),),
    "With no blocking watch available the agent has to poll the one-shot checks tool from the model loop, a "
    "background sleep between polls; the identical 'pending' summaries end in 'all passed' and the merge follows: "
    "a patient wait that ends in an answer never seen before, followed by work.",
    ("alternating-period-2", "exact-repeat-listing", "empty-result-retry"),
)
def ci_checks_busy_poll(k: Kit) -> Run:
    num = k.n(800, 4000)
    checks = k.sample(
        ("build", "lint", "unit-tests", "e2e", "typecheck", "docker-image", "codeql"), k.n(3, 5)
    )
    checks_tool = k.pick(("pr_checks", "mcp__pare-github__pr-checks", "github_pr_checks"))
    sleep_tool, sleep_key = k.pick(
        (("bash", "command"), ("sleep", "seconds"), ("run_shell_command", "command"))
    )
    delay = k.pick((30, 60, 90))
    pending = _j(
        {
            "pr": num,
            "summary": {"total": len(checks), "passed": 0, "failed": 0, "pending": len(checks)},
            "checks": [{"name": c, "state": "pending"} for c in checks],
        }
    )
    branch = f"fix/{k.word(6)}"
    turns = [
        Turn(
            k.say(("Pushing the branch.",)),
            [ToolUse("git_push", {"branch": branch}, f"To origin\n * [new branch] {branch}")],
        ),
    ]
    for _ in range(k.n(4, 7)):
        turns.append(
            Turn(
                k.say(("Checking CI status.", "CI is still running; checking again.", None)),
                [ToolUse(checks_tool, {"pr": num}, pending)],
            )
        )
        sleep_args = {sleep_key: f"sleep {delay}"} if sleep_key == "command" else {sleep_key: delay}
        turns.append(Turn(None, [ToolUse(sleep_tool, sleep_args, "", duration_ms=delay * 1000)]))
    passed = _j(
        {
            "pr": num,
            "summary": {"total": len(checks), "passed": len(checks), "failed": 0, "pending": 0},
            "checks": [{"name": c, "state": "success"} for c in checks],
        }
    )
    turns.append(Turn("Checking CI status.", [ToolUse(checks_tool, {"pr": num}, passed)]))
    turns.append(
        Turn(
            "All checks passed; merging.",
            [ToolUse("merge_pr", {"pr": num, "method": "squash"}, _j({"merged": True, "sha": k.hex(40)}))],
        )
    )
    return Run(
        f"Push the fix, wait for CI on PR #{num} to go green, then merge it.",
        k.agent(),
        k.model(),
        turns,
        f"PR #{num} is merged; all {len(checks)} checks passed.",
    )


@situation(
    "think-tool-batch",
    HEALTHY,
    "Asked to use the think tool five times and reflect on each output, the agent writes five different thoughts",
    (gh("n8n-io/n8n", 22771),),
    "The same tool five times in a row, answered with the same short acknowledgement (or the thought echoed), but "
    "every call carries a new thought that builds on the previous one, the count is the one asked for, and the "
    "agent ends with its conclusion.",
    ("plan-restated-model-only", "save-memory-repeat", "monologue-same-message"),
)
def think_tool_batch(k: Kit) -> Run:
    topic = k.pick(
        (
            "moving our nightly ETL from cron to an orchestrator",
            "raising the API rate limit for partners",
            "sunsetting the v1 webhooks",
        )
    )
    thoughts = [
        f"Option space for {topic}: do nothing, phased change, or a one-shot cutover.",
        "Risks: the phased change doubles the operational load for a month; the cutover risks a missed night of data.",
        "Cost: the orchestrator needs one more small instance; the team already knows it from the billing pipeline.",
        "Mitigation: run both in parallel for a week and compare row counts before switching off the old path.",
        "Decision: phased change with a one-week parallel run, owner on-call during the switch.",
        "Follow-up: document the rollback command and add an alert on missing partitions.",
    ][: k.pick((5, 5, 6))]
    echo = k.maybe(0.5)
    turns = [
        Turn(
            k.say(("Reflecting step by step.", None)),
            [ToolUse("think", {"thought": t}, t if echo else "Your thought has been logged.")],
        )
        for t in thoughts
    ]
    return Run(
        f"Think about {topic}. Call Think {len(thoughts)} times, reflect on each output, then give a recommendation.",
        "AI Agent",
        k.model(),
        turns,
        "Recommendation: " + thoughts[-2].split(": ", 1)[1],
    )


@situation(
    "same-search-different-levels",
    HEALTHY,
    "One search tool called for each value the question needs (level B2, then E2, then E4...), each answer different",
    (pr("whoz-oss/coday", 926),),
    "The same tool called several times in a row is the plan when every call asks about a different value and "
    "gets a different list back; the agent combines the lists into its answer. The report's detector flagged it "
    "by tool name alone.",
    ("empty-listing-rotation", "reworded-search-same-answer", "exact-repeat-listing"),
)
def same_search_different_levels(k: Kit) -> Run:
    tool = k.pick(("SearchQualifications", "search_qualifications", "find_people_by_skill"))
    skill = k.pick(("Kubernetes", "SAP FI", "React Native", "Data governance"))
    levels = k.sample(("B1", "B2", "E1", "E2", "E3", "E4"), k.n(3, 5))
    names = [
        "Lea Martin",
        "Omar Haddad",
        "Ines Duarte",
        "Tom Becker",
        "Yuki Sato",
        "Priya Nair",
        "Jonas Berg",
        "Eva Novak",
        "Ravi Kumar",
        "Clara Roux",
    ]
    turns = []
    found = []
    for lvl in levels:
        people = k.sample(names, k.n(0, 3))
        found += [(p, lvl) for p in people]
        turns.append(
            Turn(
                k.say((f"Searching level {lvl}.", None), p_silent=0.5),
                [
                    ToolUse(
                        tool,
                        {"skill": skill, "level": lvl},
                        _j({"level": lvl, "count": len(people), "people": people}),
                    )
                ],
            )
        )
    final = (
        f"{len(found)} people with {skill}: "
        + (", ".join(f"{p} ({lvl})" for p, lvl in found) or "none at these levels")
        + "."
    )
    return Run(
        f"Who in the company has {skill} at levels {', '.join(levels)}?",
        k.pick(("staffing_agent", "coday")),
        k.model(),
        turns,
        final,
    )
