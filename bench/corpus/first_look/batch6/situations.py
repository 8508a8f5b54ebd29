# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 6: CrewAI crews, ADK loop agents, agentic RAG, browser and coding agents, written blind.

Each situation is what happened in one public issue thread or pull request of an agent
framework or tool the corpus and batches 1 to 5 had not cited for it (CrewAI's delegation
and tool-reuse threads, ADK's LoopAgent exit threads, a browser-use scrolling thread,
LangGraph's agentic RAG example, Microsoft Agent Framework's argument validation, opencode,
Haystack, fabrik, omnigent), labelled from the situation itself: ``loop`` when the run spends its
steps learning nothing new and ends without getting further, ``healthy`` when the
repetition is the work. Two framework shapes are new to the first looks: a CrewAI crew
(roles as agents, the ``Delegate work to coworker`` / ``Ask question to coworker`` tools)
and an ADK ``LoopAgent`` (sub-agents taking turns each iteration, an ``exit_loop`` tool).
Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch6"
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

DELEGATE = "Delegate work to coworker"
ASK = "Ask question to coworker"
CREW_STOPPED = "Agent stopped due to iteration limit or time limit."


# ======================================================================================
# Loops
# ======================================================================================


@situation(
    "crew-delegate-same-task-back",
    LOOP,
    "A CrewAI writer with delegation on sends the research it was handed back to the researcher, again and again, and never writes",
    (gh("crewAIInc/crewAI", 330), gh("crewAIInc/crewAI", 6)),
    "The researcher finishes its task and hands over five trends; the writer then delegates 'compile the latest "
    "trends' back to the researcher in new words each time, and each time gets the same five trends. Nothing is "
    "added after the first hand-back, the article is never written, and the crew stops on its iteration limit.",
)
def crew_delegate_same_task_back(k: Kit) -> Run:
    researcher = k.pick(("Senior Research Analyst", "Researcher", "AI Research Specialist"))
    writer = k.pick(("Tech Content Strategist", "Writer", "Senior Tech Writer"))
    search = k.pick(("Search the internet with Serper", "DuckDuckGoSearchRun", "search_tool"))
    topic = k.pick(("AI agents in 2026", "open-weight language models", "AI-assisted programming tools"))
    trends = k.shuffle(
        [
            "1. Agent frameworks move from demos to production workloads",
            "2. Small open-weight models match last year's frontier on coding",
            "3. Tool-use standards (MCP) spread across IDEs and chat apps",
            "4. Evaluation and tracing become part of every agent stack",
            "5. Inference cost per token keeps falling by roughly half a year",
        ]
    )
    report = "\n".join(trends)
    turns = [
        Turn(
            "Thought: I need to find the latest developments first.",
            [
                ToolUse(
                    search,
                    {"search_query": f"latest developments {topic}"},
                    "\n".join(f"Title: {t[3:]}\nLink: https://news.example/{k.word(8)}" for t in trends),
                )
            ],
            agent=researcher,
        ),
        Turn(f"Thought: I now know the final answer\nFinal Answer: {report}", agent=researcher),
    ]
    asks = (
        f"Compile a comprehensive list of the latest trends in {topic}",
        f"Please research the most significant recent developments in {topic} and list them",
        f"I need a detailed list of current trends in {topic} with a short explanation of each",
        f"Find the key advancements in {topic} so I can write the post",
        f"List the most important breakthroughs in {topic} this year",
        f"Gather the latest trends in {topic}, including lesser-known ones",
    )
    thoughts = (
        "Thought: Before writing I should make sure the research is complete.",
        "Thought: I need more detailed information from the researcher.",
        "Thought: Do I need to use a tool? Yes",
        "Thought: To write an engaging post I need the researcher's full list of trends.",
        None,
    )
    for _ in range(k.n(6, 12)):
        tool = k.pick((DELEGATE, DELEGATE, ASK))
        key = "task" if tool == DELEGATE else "question"
        turns.append(
            Turn(
                k.pick(thoughts),
                [
                    ToolUse(
                        tool,
                        {
                            key: k.pick(asks),
                            "context": f"We are writing a blog post about {topic}.",
                            "coworker": researcher,
                        },
                        report,
                        duration_ms=k.n(4000, 12000),
                    )
                ],
                agent=writer,
            )
        )
    return Run(
        f"Using the insights provided, develop an engaging blog post that highlights the most significant developments in {topic}.",
        "crew",
        k.pick(("gpt-4-1106-preview", "gpt-4o", "llama3-70b-8192")),
        turns,
        CREW_STOPPED if k.maybe() else None,
        None if k.maybe(0.5) else "TimeoutError: crew execution exceeded its time limit",
    )


@situation(
    "crew-tool-reused-input-notice",
    LOOP,
    "A CrewAI agent keeps calling its API tool with the same input; after the first call CrewAI answers each one with its 'reusing the same input' notice",
    (gh("crewAIInc/crewAI", 737),),
    "The first call returns the API's field list; every call after it has the same input, and CrewAI answers each "
    "with the same notice that the input was already used, so the tool never runs again. The agent says in new "
    "words that it will make the call now, makes the same call, and the crew ends on a timeout with no algorithm "
    "written.",
)
def crew_tool_reused_input_notice(k: Kit) -> Run:
    role = k.pick(("Code Expert", "API Integration Specialist", "Data Retrieval Agent"))
    tool = k.pick(("Make API Call", "make_api_call", "call_rest_api"))
    endpoint = k.pick(("/v1/customers", "/api/orders", "/v2/shipments"))
    args = {"method": "GET", "endpoint": endpoint, "params": {"limit": 5}}
    notice = "I tried reusing the same input, I must stop using this action input. I'll try something else instead.\n\n"
    fields = _j(
        {
            "data": [{"id": k.n(1000, 9999), "status": "active", "created_at": k.clock()}],
            "fields": ["id", "status", "created_at", "owner", "total"],
        }
    )
    thoughts = (
        "Thought: I need to call the API to get the data for the requested fields.",
        "Thought: Let me call the API endpoint to retrieve the fields.",
        "Thought: I should make the API call to see the response structure.",
        "Thought: To write the algorithm I first need the API's response.",
        "Thought: I'll fetch the data from the API now.",
        None,
    )
    turns = [Turn(k.pick(thoughts[:4]), [ToolUse(tool, args, fields)], agent=role)]
    for _ in range(k.n(6, 12)):
        turns.append(Turn(k.pick(thoughts), [ToolUse(tool, args, notice, duration_ms=2)], agent=role))
    return Run(
        f"From the API documentation, write an algorithm (a list of steps) that retrieves the fields owner and total for each record of {endpoint}.",
        "crew",
        k.pick(("gpt-4o", "gpt-4o-2024-05-13")),
        turns,
        None,
        "TimeoutError: agent execution timed out",
    )


def _adk_rows(k: Kit) -> tuple[str, str]:
    """An SQL query of an ADK refinement loop and what executing it returns."""
    region = k.pick(("EMEA", "APAC", "NA"))
    sql = f"SELECT product_id, SUM(quantity) AS units FROM sales WHERE region = '{region}' AND sale_date >= '2026-01-01' GROUP BY product_id ORDER BY units DESC LIMIT 5"
    rows = [{"product_id": f"P-{k.n(100, 999)}", "units": k.n(200, 5000)} for _ in range(5)]
    rows.sort(key=lambda r: -r["units"])
    return sql, _j({"status": "success", "row_count": 5, "rows": rows})


@situation(
    "adk-exit-loop-never-exits",
    LOOP,
    "An ADK refinement loop's refiner calls its exit tool every iteration, the loop goes round again, and the same query is executed and approved each time",
    (gh("google/adk-python", 2988),),
    "The query is right from the first iteration: it runs, returns the same five rows, and the refiner calls the "
    "exit tool, which answers with an empty object. The loop does not stop, so the executor runs the identical "
    "query again and the refiner calls the exit tool again, iteration after iteration, with nothing new; the run "
    "ends only when it is stopped.",
)
def adk_exit_loop_never_exits(k: Kit) -> Run:
    generator = "SQLGeneratorAgent"
    executor = "QueryExecutorAgent"
    refiner = "FeedbackAnalyzerAndRefinerAgent"
    exit_tool = k.pick(("exit_loop_tool_function", "exit_loop"))
    run_sql = k.pick(("execute_sql_query", "run_bigquery_sql"))
    sql, rows = _adk_rows(k)
    turns = [Turn(sql, agent=generator)]
    for _ in range(k.n(5, 10)):
        turns.append(
            Turn(None, [ToolUse(run_sql, {"query": sql}, rows, duration_ms=k.n(300, 1500))], agent=executor)
        )
        turns.append(
            Turn(
                k.pick(("The query executed successfully and answers the request.", None, None)),
                [ToolUse(exit_tool, {}, "{}", duration_ms=1)],
                agent=refiner,
            )
        )
    return Run(
        "Which five products sold the most units this year in my region?",
        "QueryRefinementLoop",
        k.pick(("gemini-2.0-flash", "gemini-2.5-flash")),
        turns,
        None,
        k.pick(("AbortError: cancelled by the user", None)),
    )


@situation(
    "adk-loop-approved-never-exits",
    LOOP,
    "An ADK loop's checker approves the same result in new words every iteration and the loop never ends, until the model is rate-limited",
    (gh("google/adk-python", 3672),),
    "Model calls only: the worker produces the organised file list, the checker says it is correct; the next "
    "iteration the worker produces the same list and the checker approves it again in other words, and so on. The "
    "output is right from the first iteration, nothing changes after it, and the run ends with a 429 "
    "RESOURCE_EXHAUSTED error instead of the answer.",
)
def adk_loop_approved_never_exits(k: Kit) -> Run:
    worker = k.pick(("FileOrganizerAgent", "organizer_agent"))
    checker = k.pick(("QualityChecker", "validator_agent"))
    files = k.sample(
        (
            "invoice_2026_03.pdf",
            "holiday.jpg",
            "notes.txt",
            "budget.xlsx",
            "IMG_2041.png",
            "contract_signed.pdf",
            "todo.md",
            "slides.pptx",
        ),
        6,
    )
    groups: dict[str, list[str]] = {}
    for f in files:
        ext = f.rsplit(".", 1)[1]
        folder = {
            "pdf": "Documents",
            "xlsx": "Documents",
            "pptx": "Documents",
            "txt": "Notes",
            "md": "Notes",
        }.get(ext, "Images")
        groups.setdefault(folder, []).append(f)
    plan = "\n".join(f"{folder}/: {', '.join(names)}" for folder, names in sorted(groups.items()))
    worker_texts = (
        f"Proposed organisation:\n{plan}",
        f"Here is the organised structure:\n{plan}",
        f"Proposed organisation:\n{plan}\nAll files are assigned.",
    )
    approvals = (
        "The organisation is correct: every file is in the right folder. No changes needed.",
        "Verified. All files are grouped correctly by type; the result is complete.",
        "This output is correct and complete. Nothing to fix.",
        "Looks good - documents, notes and images are separated as requested. Approved.",
        "The structure satisfies the request. No further changes are required.",
    )
    turns: list[Turn] = []
    for _ in range(k.n(5, 9)):
        turns.append(Turn(k.pick(worker_texts), agent=worker))
        turns.append(Turn(k.pick(approvals), agent=checker))
    turns.append(
        Turn(
            error="429 RESOURCE_EXHAUSTED. {'error': {'code': 429, 'message': 'Resource has been exhausted (e.g. check quota).', 'status': 'RESOURCE_EXHAUSTED'}}",
            error_type="ClientError",
            agent=worker,
        )
    )
    return Run(
        f"Organise these files into folders by type: {', '.join(files)}",
        k.pick(("OrganizeLoop", "refinement_loop")),
        k.pick(("gemini-2.0-flash", "gemini-2.5-flash-lite")),
        turns,
        None,
        "ClientError: 429 RESOURCE_EXHAUSTED",
    )


@situation(
    "browser-scroll-past-bottom",
    LOOP,
    "A browser agent looking for a button scrolls the page down at every step, long after the bottom, each step judged a success",
    (gh("browser-use/browser-use", 191),),
    "The button is inside a panel with its own scroll bar, so scrolling the page never reveals it; after the first "
    "few steps the page is at its bottom and every scroll returns the same message over the same page. The model's "
    "memory changes only in its step count, it never tries another action, and the run ends at its step limit.",
)
def browser_scroll_past_bottom(k: Kit) -> Run:
    label = k.pick(("Speed test", "测速", "Export settings", "Advanced options"))
    url = k.pick(
        (
            "file:///Users/jerry/Downloads/Clash.html",
            "http://localhost:9090/ui/proxies",
            "http://192.168.1.1/admin/status",
        )
    )
    turns = [
        Turn(
            "Eval: Unknown - starting. Memory: Task started. Next goal: open the page.",
            [ToolUse("go_to_url", {"url": url}, f"🔗  Navigated to {url}")],
        )
    ]
    n = k.n(12, 24)
    for i in range(n):
        text = k.pick(
            (
                f"Eval: Success - scrolled down. Memory: Scrolled down the page; the '{label}' button is not visible yet. Next goal: Scroll down again to see more of the page.",
                f"Eval: Success. Memory: Scrolled down {i + 1} times, still looking for '{label}'. Next goal: Scroll down again.",
                f"Eval: Success - Scrolled down the page. Memory: Looking for the '{label}' button (step {i + 2}). Next goal: Scroll down again to see more of the page.",
            )
        )
        turns.append(
            Turn(text, [ToolUse("scroll_down", {"amount": None}, "🔍  Scrolled down the page by one page")])
        )
    return Run(
        f"Navigate to {url} and scroll down the page to find the '{label}' button, then click it.",
        k.pick(("browser_use_agent", "Agent")),
        k.pick(("gemini-2.5-pro-preview-03-25", "gpt-4o", "deepseek-chat")),
        turns,
        None,
        f"MaxStepsReached: stopped after {n + 1} steps without completing the task",
    )


def _chunks(k: Kit, source: str, texts: tuple[str, ...]) -> list[dict]:
    return [{"source": source, "content": t, "score": round(0.5 + k.n(0, 30) / 100, 2)} for t in texts]


AGENT_MEMORY_CHUNKS = (
    "Memory can be defined as the processes used to acquire, store, retain, and later retrieve information. Short-term memory: in-context learning.",
    "Long-term memory provides the agent with the capability to retain and recall information over extended periods, often by leveraging an external vector store.",
    "Maximum Inner Product Search (MIPS): the external memory can alleviate the restriction of finite attention span. Common choices are LSH, ANNOY, HNSW, FAISS and ScaNN.",
)


@situation(
    "rag-grade-rewrite-cycle",
    LOOP,
    "An agentic RAG graph retrieves, grades the documents not relevant, rewrites the question and retrieves the same chunks again, round after round",
    (pr("langchain-ai/langgraph", 5954),),
    "The index holds nothing about the question, so every retrieval returns the same three chunks (in a slightly "
    "different order, with slightly different scores), the grader says 'no' each time and the question is "
    "rewritten in new words. Each round learns what the first did; the graph has no exit from the cycle and ends "
    "on its recursion limit without an answer.",
)
def rag_grade_rewrite_cycle(k: Kit) -> Run:
    tool = k.pick(("retrieve_blog_posts", "retriever_tool", "search_knowledge_base"))
    source = "https://lilianweng.github.io/posts/2023-06-23-agent/"
    question = k.pick(
        (
            "How do I configure a Postgres checkpointer for LangGraph?",
            "What is the refund policy for annual plans?",
            "How does LangGraph persist thread state between runs?",
        )
    )
    rewrites = (
        f"What are the steps to set up persistent storage, as asked in: {question}",
        "Configuration of a database-backed state saver for a graph-based agent framework",
        "How can an agent's conversation state be stored in a SQL database between sessions?",
        "Persisting agent memory to an external relational database: setup instructions",
        "Database integration for saving and restoring agent state",
        "Where is agent state stored and how is the storage backend configured?",
        "Setting up durable state storage for a multi-step LLM agent",
    )
    turns: list[Turn] = []
    query = question
    for i in range(k.n(4, 7)):
        chunks = k.shuffle(_chunks(k, source, AGENT_MEMORY_CHUNKS))
        turns.append(Turn(None, [ToolUse(tool, {"query": query}, _j(chunks))]))
        turns.append(Turn(_j({"binary_score": "no"})))
        query = rewrites[i % len(rewrites)] if k.maybe(0.8) else k.pick(rewrites)
        turns.append(Turn(query))
    return Run(
        question,
        k.pick(("agentic_rag", "LangGraph")),
        k.pick(("gpt-4o-mini", "gpt-4.1")),
        turns,
        None,
        "GraphRecursionError: Recursion limit of 25 reached without hitting a stop condition",
    )


TODO_TITLES = (
    "Create architecture recommendation plan document",
    "Compare managed and self-hosted options",
    "Estimate monthly cost for each option",
    "Write migration steps",
    "Review plan with the team",
)


@situation(
    "todo-args-parse-failed-retried",
    LOOP,
    "With the plan written, the model adds its todo items with the wrong argument shape and retries the byte-identical call after each 'Argument parsing failed', minutes apart",
    (gh("microsoft/agent-framework", 7222),),
    "The todo tool expects a 'todos' list; the model sends 'items' shaped like the shared state, is told only "
    "'Argument parsing failed.', and sends the identical call again, minutes later each time (each round trip "
    "spends a long reasoning pass). Nothing in the error or the call changes, the todo list is never written, and "
    "the turn ends only at the function-call limit.",
)
def todo_args_parse_failed_retried(k: Kit) -> Run:
    doc = k.pick(("docs/architecture-recommendation.md", "plans/recommendation.md"))
    turns = [
        Turn(
            "Reading the current architecture notes.",
            [
                ToolUse(
                    "read_file",
                    {"path": "docs/current-architecture.md"},
                    "# Current architecture\n\nA single VM runs the API, the worker and PostgreSQL 13. Backups are nightly pg_dump to a bucket.\n",
                )
            ],
        ),
        Turn(
            "Writing the recommendation plan.",
            [
                ToolUse(
                    "write_file",
                    {
                        "path": doc,
                        "content": "# Recommendation\n\n1. Move PostgreSQL to a managed service.\n2. Split the worker into its own container.\n3. Add point-in-time recovery.\n",
                    },
                    f"Wrote {doc} (142 bytes)",
                )
            ],
        ),
    ]
    items = [{"id": i + k.n(3, 5), "title": t} for i, t in enumerate(TODO_TITLES[: k.n(3, 5)])]
    for _ in range(k.n(4, 7)):
        turns.append(
            Turn(
                k.pick((None, "Adding the todo items for the plan.")),
                [
                    ToolUse(
                        "todos_add",
                        {"items": items},
                        error="Argument parsing failed.",
                        error_type="ToolArgumentError",
                        duration_ms=3,
                    )
                ],
                gap_ms=k.n(15_000, 330_000),
                duration_ms=k.n(60_000, 150_000),
            )
        )
    return Run(
        "Draft an architecture recommendation plan for moving our app off the single VM, and track the work as todos.",
        k.pick(("ag_ui_agent", "planner")),
        k.pick(("mistral-medium-3.5", "mistral-medium-latest")),
        turns,
        None,
        "Maximum number of function calls reached for this turn",
    )


@situation(
    "commit-retried-nothing-to-commit",
    LOOP,
    "After committing a phase the coding agent keeps re-running git add and commit (new message each time) and git status; the tree is clean every time",
    (gh("anomalyco/opencode", 43800),),
    "The phase's changes are committed once; after that the agent re-issues the commit with a reworded message "
    "and checks the status, over and over, and each answer is 'nothing to commit, working tree clean'. The only "
    "thing that changes is the wording of a commit message that is never created; the next phase is never "
    "started and the user interrupts.",
)
def commit_retried_nothing_to_commit(k: Kit) -> Run:
    shell, key = k.shell_tool()
    branch = k.pick(("feature/cursor-pagination", "feat/export-csv", "phase-2"))
    files = k.paths(3)
    h = k.hex(7)
    turns = [
        *k.prelude(0, 1),
        Turn(
            "Phase 2 changes are done; running the tests.",
            [
                ToolUse(
                    shell,
                    {key: "npm test --silent"},
                    "Test Suites: 14 passed, 14 total\nTests:       96 passed, 96 total",
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    shell,
                    {key: f'git add {" ".join(files)} && git commit -m "feat: phase 2 pagination"'},
                    f"[{branch} {h}] feat: phase 2 pagination\n 3 files changed, 118 insertions(+), 22 deletions(-)",
                )
            ],
        ),
    ]
    clean = f"On branch {branch}\nnothing to commit, working tree clean"
    messages = (
        "feat: phase 2 pagination",
        "feat(api): add cursor pagination",
        "feat(api): add cursor pagination to list endpoints",
        "feat: implement phase 2 (pagination)",
        "chore: commit phase 2 changes",
        "feat(api): cursor-based pagination for list endpoints",
    )
    for _ in range(k.n(6, 11)):
        if k.maybe(0.6):
            turns.append(
                Turn(
                    k.pick(("Committing the phase 2 changes.", "Let me commit these changes.", None)),
                    [ToolUse(shell, {key: f'git add -A && git commit -m "{k.pick(messages)}"'}, clean)],
                )
            )
        else:
            turns.append(
                Turn(
                    k.pick(("Checking the working tree.", None)), [ToolUse(shell, {key: "git status"}, clean)]
                )
            )
    return Run(
        "Implement the cursor pagination plan: phase 1 schema, phase 2 API, phase 3 client. Commit after each phase.",
        k.pick(("build", "opencode")),
        k.pick(("deepseek-v4-flash", "deepseek-chat")),
        turns,
        None,
        "AbortError: the request was aborted by the user",
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "crew-manager-delegates-distinct-tasks",
    HEALTHY,
    "A CrewAI manager delegates a different task to each coworker, asks one follow-up question, and computes the answer from their figures",
    (gh("crewAIInc/crewAI", 979),),
    "The manager uses the same two delegation tools several times, but each call gives a different coworker a "
    "different task (revenue, cost, a follow-up on units) and each returns a different figure; the coworkers do "
    "their own tool work in between, and the manager ends with the margin computed from the figures.",
    lookalike_of=("crew-delegate-same-task-back", "crew-tool-reused-input-notice"),
)
def crew_manager_delegates_distinct_tasks(k: Kit) -> Run:
    manager = "Crew Manager"
    revenue_analyst = k.pick(("Revenue Analyst", "Sales Data Analyst"))
    cost_analyst = k.pick(("Cost Analyst", "Finance Analyst"))
    query = k.pick(("Query the finance warehouse", "run_sql_query", "sql_tool"))
    quarter = k.pick(("Q3 2026", "Q2 2026", "Q1 2026"))
    revenue = k.n(1_200_000, 4_800_000)
    cost = int(revenue * k.n(55, 80) / 100)
    emea = int(revenue * k.n(30, 45) / 100)
    margin = round(100 * (revenue - cost) / revenue, 1)
    turns = [
        Turn(
            "Thought: The revenue figure comes first; the revenue analyst should compute it.",
            [
                ToolUse(
                    DELEGATE,
                    {
                        "task": f"Compute total recognised revenue for {quarter}",
                        "context": "Use the finance warehouse; amounts in EUR.",
                        "coworker": revenue_analyst,
                    },
                    f"Total recognised revenue for {quarter}: {revenue} EUR",
                    duration_ms=k.n(4000, 9000),
                )
            ],
            agent=manager,
        ),
        Turn(
            None,
            [
                ToolUse(
                    query,
                    {"sql": f"SELECT SUM(amount_eur) FROM revenue WHERE quarter = '{quarter}'"},
                    _j({"rows": [[revenue]]}),
                )
            ],
            agent=revenue_analyst,
        ),
        Turn(
            f"Thought: I now know the final answer\nFinal Answer: Total recognised revenue for {quarter}: {revenue} EUR",
            agent=revenue_analyst,
        ),
        Turn(
            "Thought: Now the cost side, from the cost analyst.",
            [
                ToolUse(
                    DELEGATE,
                    {
                        "task": f"Compute total cost of goods sold for {quarter}",
                        "context": f"Revenue is {revenue} EUR; amounts in EUR.",
                        "coworker": cost_analyst,
                    },
                    f"Total cost of goods sold for {quarter}: {cost} EUR",
                    duration_ms=k.n(4000, 9000),
                )
            ],
            agent=manager,
        ),
        Turn(
            None,
            [
                ToolUse(
                    query,
                    {"sql": f"SELECT SUM(cogs_eur) FROM costs WHERE quarter = '{quarter}'"},
                    _j({"rows": [[cost]]}),
                )
            ],
            agent=cost_analyst,
        ),
        Turn(
            f"Thought: I now know the final answer\nFinal Answer: Total cost of goods sold for {quarter}: {cost} EUR",
            agent=cost_analyst,
        ),
        Turn(
            "Thought: The report also needs the EMEA share of revenue.",
            [
                ToolUse(
                    ASK,
                    {
                        "question": f"How much of the {quarter} revenue came from EMEA?",
                        "context": f"Total revenue {revenue} EUR.",
                        "coworker": revenue_analyst,
                    },
                    f"EMEA revenue for {quarter}: {emea} EUR",
                    duration_ms=k.n(3000, 7000),
                )
            ],
            agent=manager,
        ),
        Turn(
            None,
            [
                ToolUse(
                    query,
                    {
                        "sql": f"SELECT SUM(amount_eur) FROM revenue WHERE quarter = '{quarter}' AND region = 'EMEA'"
                    },
                    _j({"rows": [[emea]]}),
                )
            ],
            agent=revenue_analyst,
        ),
    ]
    answer = f"{quarter}: revenue {revenue} EUR (EMEA {emea} EUR), cost of goods sold {cost} EUR, gross margin {margin}%."
    turns.append(Turn(f"Thought: I now know the final answer\nFinal Answer: {answer}", agent=manager))
    return Run(
        f"Report the gross margin for {quarter}, with revenue, cost and the EMEA share of revenue.",
        "crew",
        k.pick(("gpt-4o", "azure/gpt-4o", "gpt-4.1")),
        turns,
        answer,
    )


@situation(
    "adk-critic-refiner-converges",
    HEALTHY,
    "An ADK loop of critic and refiner goes round three times: new feedback, a rewritten draft, and finally 'No major issues found' and the exit tool",
    (gh("google/adk-docs", 67),),
    "Mostly model calls taking turns in a loop, which looks like a cycle; but each critique asks for something "
    "different, each refined draft is a different text that does what was asked, and the third critique finds "
    "nothing more, so the refiner calls the exit tool and the loop ends with the finished story.",
    lookalike_of=("adk-exit-loop-never-exits", "adk-loop-approved-never-exits"),
)
def adk_critic_refiner_converges(k: Kit) -> Run:
    writer = "InitialWriterAgent"
    critic = "CriticAgent"
    refiner = "RefinerAgent"
    hero = k.pick(("a lighthouse keeper", "a night-shift baker", "a retired astronaut", "a city fox"))
    drafts = (
        f"Once there was {hero} who found a strange light. It was interesting. The end.",
        f"Every night {hero} watched the harbour. One night a green light blinked back from the sea, and {hero} rowed out to meet it.",
        f"Every night {hero} watched the harbour, counting ships. One night a green light blinked back from the fog. Heart pounding, {hero} rowed out - and found a drifting buoy, its lamp signalling a message no one had answered in years.",
        f"Every night {hero} watched the harbour, counting ships. One night a green light blinked back from the fog. Heart pounding, {hero} rowed out and found a drifting buoy, its lamp still spelling a name in Morse - the name of the ship that had brought {hero} here, forty years before.",
    )
    critiques = (
        "Make it more exciting: add a concrete setting and a moment of tension.",
        "Better. The ending is flat - give the light a meaning or a surprise.",
        "Good, but tie the surprise to the protagonist's past so the ending lands.",
    )
    turns = [Turn(drafts[0], agent=writer)]
    rounds = k.n(2, 3)
    for i in range(rounds):
        turns.append(Turn(critiques[i], agent=critic))
        turns.append(Turn(drafts[i + 1], agent=refiner))
    turns.append(Turn("No major issues found.", agent=critic))
    turns.append(Turn(None, [ToolUse("exit_loop", {}, "{}", duration_ms=1)], agent=refiner))
    return Run(
        f"Write a very short story about {hero}.",
        k.pick(("RefinementLoop", "StoryPipelineAgent")),
        k.pick(("gemini-2.0-flash", "gemini-2.5-flash")),
        turns,
        drafts[rounds],
    )


@situation(
    "browser-feed-scroll-collects",
    HEALTHY,
    "A browser agent collecting every saved post scrolls down and extracts the newly shown posts, page after page, until nothing is below, then reports them",
    (pr("browser-use/browser-use", 4325),),
    "The scroll action answers with the same message every time, so the run is the same action over and over; but "
    "each extraction after a scroll returns posts not seen before, the count collected grows, and once the page "
    "reports nothing below the agent finishes with the full list.",
    lookalike_of=("browser-scroll-past-bottom",),
)
def browser_feed_scroll_collects(k: Kit) -> Run:
    site = k.pick(
        (
            "https://news.example.com/saved",
            "https://reader.example.org/bookmarks",
            "http://localhost:3000/saved",
        )
    )
    extract = k.pick(("extract_content", "extract_structured_data"))
    pages = k.n(4, 7)
    titles: list[str] = []
    turns = [
        Turn(
            "Eval: Unknown - starting. Memory: none. Next goal: open the saved posts.",
            [ToolUse("go_to_url", {"url": site}, f"🔗  Navigated to {site}")],
        )
    ]
    for p in range(pages):
        new = [
            f"{k.word(k.n(4, 8)).capitalize()} {k.word(k.n(3, 7))} {k.word(k.n(4, 9))}"
            for _ in range(k.n(6, 10))
        ]
        titles += new
        below = pages - p - 1
        turns.append(
            Turn(
                f"Eval: Success. Memory: {len(titles) - len(new)} posts collected so far. Next goal: extract the visible posts.",
                [
                    ToolUse(
                        extract,
                        {"query": "titles of the saved posts visible on the page"},
                        _j({"posts": new, "pages_below": below}),
                    )
                ],
            )
        )
        if below:
            turns.append(
                Turn(
                    f"Eval: Success. Memory: {len(titles)} posts collected; {below} more page(s) below. Next goal: scroll down.",
                    [ToolUse("scroll_down", {"amount": None}, "🔍  Scrolled down the page by one page")],
                )
            )
    answer = f"Collected {len(titles)} saved posts:\n" + "\n".join(f"- {t}" for t in titles)
    turns.append(
        Turn(
            "Eval: Success. Memory: reached the bottom. Next goal: report.",
            [ToolUse("done", {"text": answer, "success": True}, "Task completed")],
        )
    )
    return Run(
        f"Go to {site} and collect the titles of all my saved posts; scroll until the end of the list.",
        k.pick(("browser_use_agent", "Agent")),
        k.pick(("gpt-4.1-mini", "gpt-4o", "gemini-2.5-flash")),
        turns,
        answer,
    )


@situation(
    "rag-rewrite-once-then-relevant",
    HEALTHY,
    "A RAG agent's first retrieval misses, the question is rewritten and retrieval tried again, and the new documents answer it",
    (gh("deepset-ai/haystack", 5988),),
    "Retrieve, grade 'no', rewrite: the start of the same cycle as a stuck RAG graph, sometimes twice. But each "
    "rewritten query brings back different documents, the grader accepts the ones that contain the answer, and "
    "the run ends with an answer citing them.",
    lookalike_of=("rag-grade-rewrite-cycle",),
)
def rag_rewrite_once_then_relevant(k: Kit) -> Run:
    tool = k.pick(("retrieve_docs", "retriever_tool", "search_knowledge_base"))
    question = k.pick(
        (
            "What does 'PE' mean in the grounding section of the installation manual?",
            "Which conductor does the manual call PE?",
        )
    )
    miss_sets = (
        (
            "Price-to-earnings (P/E) ratio: the share price divided by the earnings per share.",
            "Private equity (PE) funds acquire stakes in companies not listed on an exchange.",
            "Polyethylene (PE) is the most widely produced plastic.",
        ),
        (
            "Section 2.1 Safety symbols: the warning triangle marks hazards to persons.",
            "Section 2.4 Transport: keep the unit upright and dry.",
            "Section 3.2 Mounting: use the four M6 screws supplied.",
        ),
    )
    hit = (
        "Section 4.3 Grounding: connect the protective earthing conductor (PE) to the terminal marked with the earth symbol before any other conductor.",
        "Section 4.3: the PE conductor must have a cross-section of at least 2.5 mm² and be green-yellow.",
        "Section 4.4 Testing: measure the resistance between the PE terminal and the enclosure; it must be below 0.1 ohm.",
    )
    rewrites = (
        "protective earth conductor PE grounding terminal installation manual",
        "PE terminal green-yellow conductor grounding section 4",
    )
    misses = k.n(1, 2)
    turns: list[Turn] = []
    query = question
    for i in range(misses):
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        tool,
                        {"query": query},
                        _j(_chunks(k, "manual.pdf" if i else "glossary.pdf", miss_sets[i])),
                    )
                ],
            )
        )
        turns.append(Turn(_j({"binary_score": "no"})))
        query = rewrites[i]
        turns.append(Turn(query))
    turns.append(Turn(None, [ToolUse(tool, {"query": query}, _j(_chunks(k, "manual.pdf", hit)))]))
    turns.append(Turn(_j({"binary_score": "yes"})))
    answer = "In the manual, PE is the protective earthing conductor: it is connected first, to the terminal with the earth symbol, must be green-yellow with at least 2.5 mm², and its resistance to the enclosure must be under 0.1 ohm (sections 4.3-4.4)."
    turns.append(Turn(answer))
    return Run(
        question,
        k.pick(("agentic_rag", "docs_assistant")),
        k.pick(("gpt-4o-mini", "qwen3-coder-plus", "gpt-4.1")),
        turns,
        answer,
    )


@situation(
    "tool-args-corrected-after-error",
    HEALTHY,
    "The model's first todo call has the wrong shape, the error names the missing argument, the model fixes it and then works through its todos one by one",
    (pr("microsoft/agent-framework", 7953),),
    "One failure, then a corrected call that succeeds because the error said what was wrong; after that the todo "
    "update tool is called once per item with a different id each time and the same short 'ok', which is the "
    "work being ticked off, and the run ends with the plan and its todos done.",
    lookalike_of=("todo-args-parse-failed-retried",),
)
def tool_args_corrected_after_error(k: Kit) -> Run:
    doc = k.pick(("docs/architecture-recommendation.md", "plans/recommendation.md"))
    titles = TODO_TITLES[: k.n(3, 5)]
    turns = [
        Turn(
            "Writing the recommendation plan.",
            [
                ToolUse(
                    "write_file",
                    {
                        "path": doc,
                        "content": "# Recommendation\n\n1. Move PostgreSQL to a managed service.\n2. Split the worker into its own container.\n3. Add point-in-time recovery.\n",
                    },
                    f"Wrote {doc} (142 bytes)",
                )
            ],
        ),
        Turn(
            "Adding the todos.",
            [
                ToolUse(
                    "todos_add",
                    {"items": [{"id": i + 1, "title": t} for i, t in enumerate(titles)]},
                    error="Missing required argument(s) for 'todos_add': todos",
                    error_type="ToolArgumentError",
                    duration_ms=3,
                )
            ],
        ),
        Turn(
            "The tool expects 'todos'; retrying with the right shape.",
            [
                ToolUse(
                    "todos_add",
                    {"todos": [{"title": t, "description": ""} for t in titles]},
                    _j({"added": [{"id": i + 1, "title": t} for i, t in enumerate(titles)]}),
                )
            ],
        ),
    ]
    for i, t in enumerate(titles):
        turns.append(
            Turn(
                k.pick((f"Done: {t.lower()}.", None)),
                [ToolUse("todos_update", {"id": i + 1, "status": "done"}, "ok")],
                duration_ms=k.n(20_000, 60_000),
            )
        )
    answer = f"The plan is in {doc} and all {len(titles)} todos are done."
    turns.append(Turn(answer))
    return Run(
        "Draft an architecture recommendation plan for moving our app off the single VM, and track the work as todos.",
        k.pick(("ag_ui_agent", "planner")),
        k.pick(("mistral-medium-3.5", "gpt-4.1")),
        turns,
        answer,
    )


@situation(
    "commit-after-each-task",
    HEALTHY,
    "A coding agent works through a checklist, committing after each task and checking that the tree is clean before the next; git status says the same each time",
    (gh("handarbeit/fabrik", 153),),
    "The commit command and a 'nothing to commit, working tree clean' status come back after every task, which "
    "repeats; but each commit records different files with a new hash after an edit that was not there before, "
    "the test count grows, and the run ends with every task committed and pushed.",
    lookalike_of=("commit-retried-nothing-to-commit",),
)
def commit_after_each_task(k: Kit) -> Run:
    shell, key = k.shell_tool()
    branch = k.pick(("feature/export-csv", "feat/audit-log", "impl/153"))
    n = k.n(3, 5)
    files = k.paths(n)
    tasks = k.sample(
        (
            "add the CSV serializer",
            "wire the export endpoint",
            "add the download button",
            "cover empty exports in tests",
            "document the export format",
            "add the audit log table",
        ),
        n,
    )
    clean = f"On branch {branch}\nnothing to commit, working tree clean"
    tests = k.n(40, 80)
    turns: list[Turn] = [*k.prelude(0, 2)]
    for f, task in zip(files, tasks, strict=True):
        tests += k.n(2, 6)
        turns.append(
            Turn(
                f"Next task: {task}.",
                [
                    ToolUse(
                        "write_file",
                        {
                            "path": f,
                            "content": f"// {task}\nexport function {k.word(7)}() {{ return {k.n(1, 9)}; }}\n",
                        },
                        f"Wrote {f}",
                    )
                ],
            )
        )
        turns.append(
            Turn(None, [ToolUse(shell, {key: "npm test --silent"}, f"Tests: {tests} passed, {tests} total")])
        )
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        shell,
                        {key: f'git add {f} && git commit -m "feat: {task}"'},
                        f"[{branch} {k.hex(7)}] feat: {task}\n 1 file changed, {k.n(5, 60)} insertions(+)",
                    )
                ],
            )
        )
        turns.append(Turn(k.pick(("Clean; moving on.", None)), [ToolUse(shell, {key: "git status"}, clean)]))
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    shell,
                    {key: f"git push -u origin {branch}"},
                    f"To origin\n * [new branch]      {branch} -> {branch}",
                )
            ],
        )
    )
    return Run(
        "Implement the checklist in the issue; commit after each task and push when done.",
        k.pick(("fabrik-implement", "coder")),
        k.model(),
        turns,
        f"All {n} tasks are implemented, each in its own commit, and {branch} is pushed.",
    )


@situation(
    "session-list-paged-to-the-end",
    HEALTHY,
    "An operations agent walks a long session list page by page with an opaque cursor, then reports the idle sessions it found",
    (pr("omnigent-ai/omnigent", 4892),),
    "The same list tool is called many times with the same limit and only an opaque cursor changing, which can look "
    "like one call repeated; but every cursor is the one the previous page returned, every page holds sessions not "
    "seen before, the last page says there is no more, and the run ends with the count of idle sessions.",
    lookalike_of=("mcp-cursor-ignored-same-page", "crew-tool-reused-input-notice"),
)
def session_list_paged_to_the_end(k: Kit) -> Run:
    tool = k.pick(("sys_session_list", "list_sessions"))
    limit = k.pick((20, 25))
    pages = k.n(6, 11)
    now = k.start_time()
    idle: list[str] = []
    turns = [
        Turn(
            "First the agents, then their sessions.",
            [
                ToolUse(
                    "sys_agent_list",
                    {},
                    _j(
                        {
                            "agents": [
                                {"name": n, "sessions": k.n(20, 90)} for n in ("support", "billing", "triage")
                            ]
                        }
                    ),
                )
            ],
        )
    ]
    cursor: str | None = None
    for p in range(pages):
        sessions = []
        for _ in range(limit if p < pages - 1 else k.n(3, limit - 1)):
            sid = f"ses_{k.hex(10)}"
            days = k.n(0, 30)
            if days > 7:
                idle.append(sid)
            sessions.append(
                {
                    "id": sid,
                    "agent": k.pick(("support", "billing", "triage")),
                    "last_active": k.iso(now - days * 86_400),
                }
            )
        more = p < pages - 1
        next_cursor = "v1." + k.hex(24) if more else None
        args: dict = {"limit": limit}
        if cursor is not None:
            args["cursor"] = cursor
        turns.append(
            Turn(
                k.pick((None, None, f"Page {p + 1}; {len(idle)} idle so far.")),
                [
                    ToolUse(
                        tool,
                        args,
                        _j(
                            {
                                "sessions": sessions,
                                "page": {"limit": limit, "has_more": more, "next_cursor": next_cursor},
                            }
                        ),
                    )
                ],
            )
        )
        cursor = next_cursor
    answer = (
        f"{len(idle)} sessions have been idle for more than 7 days: "
        + ", ".join(idle[:10])
        + (" ..." if len(idle) > 10 else "")
    )
    turns.append(Turn(answer))
    return Run(
        "Find every session, across all agents, that has been idle for more than a week.",
        k.pick(("ops-agent", "omnigent")),
        k.model(),
        turns,
        answer,
    )
