# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 3: email, Slack, dataframes, translation, fine-tuning and coding agents, written blind.

Each situation is what happened in one public issue thread of an agent framework or tool
the corpus had not cited (Vercel AI SDK, SWE-agent, LlamaIndex, jcode, Wayland, Spring AI,
Hermes Agent, translation-agent, Pipedream, Azure ML, DSPy), labelled from the situation
itself: ``loop`` when the run spends its steps learning nothing new and ends without
getting further, ``healthy`` when the repetition is the work. Registered in this batch's
own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch3"
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
    "answered-then-steps-exhausted",
    LOOP,
    "The answer is written at step two; every remaining step repeats the same tool call until maxSteps runs out",
    (gh("vercel/ai", 3470),),
    "After the tool result the model already states the answer, yet each following step requests the same tool "
    "with the same arguments and gets the same result, until exactly maxSteps steps have run; the answer at the "
    "end is the one it had at step two.",
)
def answered_then_steps_exhausted(k: Kit) -> Run:
    tool = k.pick(("lookupPolicy", "searchKnowledgeBase", "getProductInfo"))
    topic, answer = k.pick(
        (
            (
                "parental leave",
                "Employees get 16 weeks of fully paid parental leave, usable within the first year.",
            ),
            (
                "expense limits",
                "Meals are reimbursed up to EUR 45 per day while travelling; receipts are required above EUR 10.",
            ),
            (
                "warranty on the X200 dock",
                "The X200 dock has a 3-year limited warranty covering manufacturing defects.",
            ),
        )
    )
    result = _j({"topic": topic, "summary": answer, "source": f"handbook/{topic.replace(' ', '-')}.md"})
    max_steps = k.pick((5, 6, 8, 10))
    wordings = (
        answer,
        f"According to the handbook: {answer}",
        f"To summarise, {answer[0].lower()}{answer[1:]}",
        None,
    )
    turns = [Turn(None, [ToolUse(tool, {"query": topic}, result)])]
    for _ in range(max_steps - 1):
        turns.append(Turn(k.pick(wordings), [ToolUse(tool, {"query": topic}, result)]))
    return Run(
        f"What is our policy on {topic}?",
        k.pick(("chat", "support-bot")),
        k.pick(("gemini-1.5-pro", "gemini-2.5-pro", "claude-sonnet-4-20250514")),
        turns,
        answer,
    )


@situation(
    "edit-reports-no-change",
    LOOP,
    "A search-and-replace edit answered 'file not modified' again and again, with the same edit each time",
    (gh("SWE-agent/SWE-agent", 1083),),
    "'Always output file not modified': the agent sends the same search/replace to the same file, the tool "
    "answers that nothing changed, the agent sometimes opens the file (unchanged) and sends the edit again; no "
    "attempt differs and the run ends at its cost or call limit.",
)
def edit_reports_no_change(k: Kit) -> Run:
    path = k.pick(("config/config.go", "pool/options.go", "internal/server/timeouts.go"))
    search = k.pick(
        (
            'Idletime int `yaml:"idletime,omitempty"`',
            'Timeout int `yaml:"timeout"`',
            'MaxIdle int `yaml:"max_idle"`',
        )
    )
    replace = search.replace(" int ", " DurationMs ")
    note = k.pick(
        (
            f"File {path} not modified: no changes were made.",
            "No replacement was performed: the file content is unchanged.",
            f"The file {path} was not modified.",
        )
    )
    field = search.split()[0]
    listing = "\n".join(
        f"{40 + i}: {line}"
        for i, line in enumerate(
            (f"type {k.word(6).title()}Config struct {{", f"\t{search}", '\tName string `yaml:"name"`', "}")
        )
    )
    thoughts = (
        f"Let's update the `{field}` field to use `DurationMs` instead of `int`.",
        f"I'll change `{field}` to `DurationMs`.",
        f"The `{field}` field still needs the `DurationMs` type.",
    )
    turns = []
    for _ in range(k.n(5, 10)):
        turns.append(
            Turn(
                k.pick(thoughts),
                [ToolUse("edit", {"path": path, "search": search, "replace": replace}, note)],
            )
        )
        if k.maybe(0.3):
            turns.append(
                Turn(
                    "Let me look at the file again.",
                    [ToolUse("open", {"path": path, "line_number": 40}, listing)],
                )
            )
    return Run(
        f"Make the {field} setting accept durations in milliseconds (see the issue about idle timeouts).",
        "swe-agent",
        k.model(),
        turns,
        None,
        k.pick(
            (
                "CostLimitExceededError: per-instance cost limit exceeded",
                "_TotalExecutionTimeExceeded: total execution time exceeded",
                None,
            )
        ),
    )


@situation(
    "dataframe-react-no-final",
    LOOP,
    "A ReAct agent over a dataframe gets the right number, then keeps asking the same question in new words",
    (gh("run-llama/llama_index", 16982),),
    "The query engine answers correctly at the first call; the agent never returns a final answer and goes on "
    "writing its own thoughts and action inputs, each a rephrasing of the same question answered with the same "
    "number, until the iteration limit.",
)
def dataframe_react_no_final(k: Kit) -> Run:
    company = k.pick(("Acme Corp", "Globex", "Initech", "Umbrella Ltd"))
    metric, value = k.pick(
        (
            ("employees", f"{k.n(200, 9000):,}"),
            ("revenue in 2023", f"${k.n(10, 900)}M"),
            ("headquarters city", k.pick(("Austin", "Lyon", "Osaka"))),
        )
    )
    answer = f"{company}'s {metric}: {value}"
    phrasings = (
        f"What is the {metric} of {company}?",
        f"{company} {metric}",
        f"Find {metric} for company == '{company}'",
        f"How many {metric} does {company} have?"
        if metric == "employees"
        else f"Look up the {metric} of {company}",
        f"{metric} of {company} from company_data",
    )
    tool = k.pick(("company_data", "company_query_engine", "pandas_query"))
    turns = []
    for i in range(k.n(6, 11)):
        thought = k.pick(
            (
                "Thought: The current language of the user is English. I need to use a tool to help me answer the question.",
                f"Thought: I have the {metric}, but let me verify it with the tool.",
                f"Thought: I should query the data about {company} again.",
            )
        )
        turns.append(
            Turn(thought, [ToolUse(tool, {"input": phrasings[0] if i == 0 else k.pick(phrasings)}, answer)])
        )
    return Run(
        f"What is the {metric} of {company}?",
        "ReActAgent",
        k.pick(("mistral", "llama3.1:8b", "qwen2.5:7b")),
        turns,
        None,
        "ValueError: Reached max iterations.",
    )


@situation(
    "empty-files-thrash",
    LOOP,
    "Reading two empty files in turn, dozens of times, with an occasional identical directory listing",
    (gh("1jehuang/jcode", 797),),
    "Both files are empty and every read says so; the agent alternates between them (and lists the same "
    "directory now and then) without ever telling the user the files are empty or restoring them, until the "
    "user interrupts: 93 of 105 results were '(empty file)' in the report.",
)
def empty_files_thrash(k: Kit) -> Run:
    d = k.pick(("web/src/lib", "src/utils", "app/helpers"))
    a, b = (
        f"{d}/{k.pick(('downloadNaming', 'slugify', 'dateFormat'))}.ts",
        f"{d}/{k.pick(('file', 'paths', 'mime'))}.ts",
    )
    read, rkey = k.read_tool()
    shell, key = k.shell_tool()
    listing = f"total 8\n-rw-r--r--  1 dev  staff  0 Aug  6 10:12 {a.rsplit('/', 1)[1]}\n-rw-r--r--  1 dev  staff  0 Aug  6 10:12 {b.rsplit('/', 1)[1]}"
    turns = []
    for i in range(k.n(12, 26)):
        if k.maybe(0.15):
            turns.append(Turn(None, [ToolUse(shell, {key: f"ls -la {d}/"}, listing)]))
        turns.append(Turn(None, [ToolUse(read, {rkey: a if i % 2 == 0 else b}, "(empty file)")]))
    return Run(
        f"Add a helper in {a} that builds download file names from a title and a date.",
        k.pick(("jcode", "coder")),
        k.model(),
        turns,
        None,
        "AbortError: the request was aborted by the user",
    )


@situation(
    "email-self-reply-loop",
    LOOP,
    "An email agent auto-replies to a message that is its own previous reply, which lands in the same inbox, and again",
    (gh("FerroxLabs/wayland", 547),),
    "Each inbound message is the agent's own last reply coming back (the channel's address is both sender and "
    "recipient); the agent answers it, the answer arrives again, ~2 emails every 30 s until the channel is "
    "disconnected. The ids and the 'Re:' chain are new every time, but nothing the agent reads was written by "
    "anyone else.",
)
def email_self_reply_loop(k: Kit) -> Run:
    me = k.pick(("core@agents.example.com", "assistant@ethereal.example", "support-bot@example.org"))
    subject = k.pick(("Question about invoice 4471", "Delivery date?", "Meeting next week"))
    replies = (
        "Thanks for your message! I've noted your question and will follow up shortly.",
        "Thank you for reaching out. I have recorded your request and will get back to you soon.",
        "Thanks for writing in. Your message has been received and I'll reply with details shortly.",
    )
    inbox, send = k.pick((("check_inbox", "send_email"), ("list_new_messages", "send_message")))
    turns = [
        Turn(
            None,
            [
                ToolUse(
                    inbox,
                    {"folder": "INBOX"},
                    _j(
                        [
                            {
                                "id": k.hex(12),
                                "from": "client@customer.example",
                                "subject": subject,
                                "body": "Hi, can you confirm the date?",
                            }
                        ]
                    ),
                )
            ],
        ),
        Turn(
            None,
            [
                ToolUse(
                    send,
                    {"to": "client@customer.example", "subject": f"Re: {subject}", "body": replies[0]},
                    _j({"id": k.hex(12), "status": "sent"}),
                )
            ],
        ),
    ]
    previous = replies[0]
    for depth in range(1, k.n(6, 11)):
        subj = "Re: " * depth + subject
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        inbox,
                        {"folder": "INBOX"},
                        _j(
                            [
                                {
                                    "id": k.hex(12),
                                    "from": me,
                                    "subject": subj,
                                    "body": previous + "\n\n> " + previous,
                                }
                            ]
                        ),
                    )
                ],
                gap_ms=k.n(25_000, 35_000),
            )
        )
        previous = k.pick(replies)
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        send,
                        {"to": me, "subject": "Re: " + subj, "body": previous},
                        _j({"id": k.hex(12), "status": "sent"}),
                    )
                ],
            )
        )
    return Run(
        "Answer incoming email on the support channel.",
        k.pick(("Wayland Core", "email_agent")),
        k.model(),
        turns,
        None,
        k.pick(("ChannelDisconnected: the email channel was disconnected by the user", None)),
    )


@situation(
    "failing-tool-correction-overflow",
    LOOP,
    "A tool fails the same way on every call; the model keeps 'correcting' its arguments until the context overflows",
    (gh("spring-projects/spring-ai-examples", 71),),
    "The failure is in the service, not the arguments: every variation the model tries (case, date, parameter "
    "names) gets the same connection error, the correction attempts never end, and the run dies when the "
    "conversation no longer fits the model's context window.",
)
def failing_tool_correction_overflow(k: Kit) -> Run:
    tool = k.pick(("getExchangeRate", "currencyConverter", "fetch_rates"))
    host = k.pick(("api.example-rates.com", "fx.internal:8443", "rates.example.net"))
    error = f'I/O error on GET request for "https://{host}/latest": Connection refused'
    variants = [
        {"base": "EUR", "target": "USD"},
        {"base": "eur", "target": "usd"},
        {"base": "EUR", "target": "USD", "date": "latest"},
        {"from": "EUR", "to": "USD"},
        {"base": "EUR", "symbols": "USD"},
        {"base": "EUR", "target": "USD", "date": "2026-12-02"},
        {"currency_pair": "EUR/USD"},
    ]
    thoughts = (
        "The call failed; let me correct the parameters and try again.",
        "Perhaps the currency codes must be lowercase.",
        "I'll retry with a date parameter.",
        "Let me try the parameter names from the documentation.",
        None,
    )
    turns = []
    for i in range(k.n(8, 14)):
        turns.append(
            Turn(
                k.pick(thoughts),
                [
                    ToolUse(
                        tool,
                        dict(k.pick(variants)) if i else dict(variants[0]),
                        error=error,
                        error_type="ResourceAccessException",
                    )
                ],
            )
        )
    turns.append(
        Turn(
            error="This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.",
            error_type="BadRequestError",
        )
    )
    return Run(
        "How many US dollars is 2,500 euros today?",
        k.pick(("ChatClient", "assistant")),
        k.model(),
        turns,
        None,
        "NonTransientAiException: context_length_exceeded",
    )


@situation(
    "slack-ack-pingpong",
    LOOP,
    "Two agents in one Slack thread acknowledge each other's acknowledgements forever",
    (pr("NousResearch/hermes-agent", 14117),),
    "Agent A delegated, agent B delivered, and then each reply in the thread triggers the other: '✓', '✓', "
    "'👍', '✓'... Every post gets a fresh timestamp, but the thread carries nothing new after the delivery and "
    "never ends on its own.",
)
def slack_ack_pingpong(k: Kit) -> Run:
    slack = _SlackThread(k)
    a, b = slack.a, slack.b
    turns = [
        slack.post(f"<@{b}> please compile last week's signup numbers", a),
        Turn(
            None,
            [
                ToolUse(
                    "query_metrics",
                    {"metric": "signups", "range": "last_week"},
                    _j({"total": k.n(900, 4000), "change": f"+{k.n(1, 20)}%"}),
                )
            ],
            agent=b,
        ),
        slack.post("Signups last week are up; numbers attached.", b),
    ]
    acks = ("✓", "✓", "👍", "✓ thanks", "✓")
    for i in range(k.n(8, 16)):
        turns.append(slack.post(k.pick(acks), a if i % 2 == 0 else b))
    return Run("Handle the messages in the #ops thread.", "slack_gateway", k.model(), turns, None, None)


class _SlackThread:
    """Two agents sharing one Slack thread: who they are, where they post, and each post
    as a model turn answered with the message's own new timestamp."""

    def __init__(self, k: Kit) -> None:
        self.k = k
        self.a, self.b = k.pick((("ops_agent", "metrics_agent"), ("hermes-lead", "hermes-worker")))
        self.channel = f"C{k.hex(9).upper()}"
        self.thread = f"{k.n(1_760_000_000, 1_790_000_000)}.{k.n(100000, 999999)}"
        self.tool = k.pick(("slack_post_message", "send_slack_message"))

    def post(self, text: str, agent: str, channel: str | None = None) -> Turn:
        """``agent`` posts ``text`` in the thread (or, given ``channel``, to that channel)."""
        args = (
            {"channel": channel, "text": text}
            if channel
            else {"channel": self.channel, "thread_ts": self.thread, "text": text}
        )
        ts = f"{self.k.n(1_790_000_000, 1_799_999_999)}.{self.k.n(100000, 999999)}"
        return Turn(
            None, [ToolUse(self.tool, args, _j({"ok": True, "channel": self.channel, "ts": ts}))], agent=agent
        )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "translation-chunks-model-only",
    HEALTHY,
    "Model calls only: a long document translated chunk by chunk, then reflected on and improved",
    (gh("andrewyng/translation-agent", 50),),
    "Many model turns in a row with the same shape and the same recurring names (kept consistent across chunks on "
    "purpose), but each turn translates a different chunk, then a reflection lists concrete fixes and the "
    "improved translation applies them: different content every turn, ending in the finished text.",
    ("plan-restated-model-only", "closing-pleasantries-groupchat", "monologue-same-message"),
)
def translation_chunks_model_only(k: Kit) -> Run:
    city = k.pick(("Beijing", "Kyoto", "Istanbul"))
    years = sorted(k.sample(range(1200, 1990), 9))
    verbs = (
        "rebuilt",
        "expanded",
        "walled",
        "renamed",
        "flooded",
        "modernised",
        "bombed",
        "restored",
        "opened",
    )
    things = (
        "the old market",
        "the northern gate",
        "the canal district",
        "the imperial library",
        "the tram line",
        "the harbour",
        "the cathedral square",
        "the silk exchange",
        "the observatory",
    )
    n = k.n(5, 9)
    chunks = []
    turns = []
    for i in range(n):
        text = f"[{i + 1}/{n}] In {years[i]} the city of {city} {verbs[i]} {things[i]}; chroniclers of {city} recorded {k.n(2, 40)} {k.pick(('petitions', 'fires', 'festivals', 'decrees'))} that year."
        chunks.append(text)
        turns.append(Turn(text))
    turns.append(
        Turn(
            f"Suggestions: 1) keep '{city}' consistent in chunks 2 and {n}; 2) 'chroniclers' reads better as 'annalists' in chunk 4; 3) use past perfect in chunk 1."
        )
    )
    final = " ".join(c.split("] ", 1)[1] for c in chunks).replace("chroniclers", "annalists", 1)
    turns.append(Turn(final))
    return Run(
        f"Translate this history of {city} from Chinese into English (split into {n} chunks).",
        "translation_agent",
        k.model(),
        turns,
        final,
    )


@situation(
    "archive-one-by-one",
    HEALTHY,
    "With no bulk action available, the agent archives twenty to thirty-five search results one message at a time",
    (gh("PipedreamHQ/pipedream", 20460),),
    "'An agent that needs to archive a batch of search results has to call archive-email repeatedly': the only "
    "argument that changes is the message id, and the acknowledgement is the same short answer every time, but "
    "every call archives a different message and the run ends when the list is done.",
    ("slack-ack-pingpong", "send-retry-volatile-ids", "save-memory-repeat"),
)
def archive_one_by_one(k: Kit) -> Run:
    ids = [k.hex(16) for _ in range(k.n(20, 35))]
    search, archive = k.pick(
        (("gmail-find-email", "gmail-archive-email"), ("search_emails", "archive_email"))
    )
    query = k.pick(
        (
            "category:promotions older_than:30d",
            "from:newsletter@ is:unread older_than:14d",
            "label:notifications before:2026/11/01",
        )
    )
    same_ack = k.maybe(0.5)
    turns = [
        Turn(
            "Finding the messages.",
            [
                ToolUse(
                    search,
                    {"q": query, "maxResults": 50},
                    _j([{"id": i, "snippet": k.word(6) + " " + k.word(8)} for i in ids]),
                )
            ],
        )
    ]
    for i in ids:
        ack = "Archived." if same_ack else _j({"id": i, "labelIds": ["CATEGORY_PROMOTIONS"]})
        turns.append(Turn(None, [ToolUse(archive, {"messageId": i}, ack)]))
    return Run(
        f"Archive everything matching '{query}'.",
        k.pick(("inbox_agent", "assistant")),
        k.model(),
        turns,
        f"Archived {len(ids)} messages matching '{query}'.",
    )


@situation(
    "sub-question-rag",
    HEALTHY,
    "A comparison question split into sub-questions, sent alternately to two document tools, each answer new",
    (pr("run-llama/llama_index", 3419),),
    "Two query-engine tools called in turn (A, B, A, B) look like a period-2 cycle, but each call asks a different "
    "sub-question (growth, then risks, then margins) and gets a different answer; the sub-answers are "
    "synthesised into the comparison.",
    ("alternating-period-2", "dataframe-react-no-final", "react-history-lost-recurring"),
)
def sub_question_rag(k: Kit) -> Run:
    (a, an), (b, bn) = k.pick(
        (
            (("uber_10k", "Uber"), ("lyft_10k", "Lyft")),
            (("acme_annual_report", "Acme"), ("globex_annual_report", "Globex")),
        )
    )
    year = k.pick((2021, 2022, 2023))
    aspects = k.sample(
        ("revenue growth", "main risk factors", "operating margin", "headcount", "capital expenditure"),
        k.n(2, 4),
    )
    turns = []
    summary = []
    for aspect in aspects:
        for tool, name in ((a, an), (b, bn)):
            result = f"{name}'s {aspect} in {year}: " + k.pick(
                (
                    f"{k.n(5, 80)}% year over year",
                    f"${k.n(1, 40)}.{k.n(0, 9)}B",
                    "regulatory exposure and driver classification",
                    f"{k.n(1000, 30000):,} employees",
                    "-" + str(k.n(1, 30)) + "%",
                )
            )
            summary.append(result)
            turns.append(
                Turn(None, [ToolUse(tool, {"input": f"What was {name}'s {aspect} in {year}?"}, result)])
            )
    return Run(
        f"Compare {an} and {bn} in {year}: " + ", ".join(aspects) + ".",
        k.pick(("sub_question_engine", "rag_agent")),
        k.model(),
        turns,
        "; ".join(summary) + ".",
    )


@situation(
    "finetune-job-poll",
    HEALTHY,
    "Submitting a fine-tuning job and checking on it every minute: 'running' again and again, then 'succeeded', then a test call",
    (pr("Azure/azureml-assets", 2606),),
    "'Job not in terminal status. Waiting.': the status check repeats with an identical 'running' answer for "
    "several minutes (the event log meanwhile shows the step count rising), then the job succeeds and the new "
    "model is tried; a wait that ends with an answer never seen before, followed by work.",
    ("assistant-run-incomplete-poll", "exact-repeat-listing", "empty-result-retry"),
)
def finetune_job_poll(k: Kit) -> Run:
    job = f"ftjob-{k.hex(24)}"
    base = k.pick(("gpt-4.1-mini", "gpt-4o-mini-2024-07-18"))
    steps = k.pick((300, 500, 800))
    turns = [
        Turn(
            "Submitting the job.",
            [
                ToolUse(
                    "create_fine_tuning_job",
                    {"model": base, "training_file": f"file-{k.hex(24)}", "suffix": "support-tone"},
                    _j({"id": job, "status": "validating_files"}),
                )
            ],
        ),
    ]
    done = 0
    for _ in range(k.n(4, 8)):
        turns.append(
            Turn(
                k.say(("Job not in terminal status yet; waiting.", None), p_silent=0.5),
                [
                    ToolUse(
                        "retrieve_fine_tuning_job",
                        {"job_id": job},
                        _j({"id": job, "status": "running", "fine_tuned_model": None}),
                    )
                ],
                gap_ms=60_000,
            )
        )
        if k.maybe(0.4):
            done = min(steps - 1, done + k.n(40, 160))
            turns.append(
                Turn(
                    None,
                    [
                        ToolUse(
                            "list_fine_tuning_events",
                            {"job_id": job, "limit": 1},
                            _j([{"message": f"Step {done}/{steps}: training loss={1.9 - done / steps:.2f}"}]),
                        )
                    ],
                )
            )
    model = f"ft:{base}:acme:support-tone:{k.hex(8)}"
    turns.append(
        Turn(
            None,
            [
                ToolUse(
                    "retrieve_fine_tuning_job",
                    {"job_id": job},
                    _j(
                        {
                            "id": job,
                            "status": "succeeded",
                            "fine_tuned_model": model,
                            "trained_tokens": k.n(100_000, 900_000),
                        }
                    ),
                )
            ],
            gap_ms=60_000,
        )
    )
    turns.append(
        Turn(
            "Trying the new model.",
            [
                ToolUse(
                    "chat_completion",
                    {"model": model, "prompt": "My order is late."},
                    "I'm sorry about the delay! Let me check where your order is right now.",
                )
            ],
        )
    )
    return Run(
        "Fine-tune the support model on the new tone examples and check that it works.",
        k.pick(("ml_ops_agent", "assistant")),
        k.model(),
        turns,
        f"{model} is ready and answers in the new tone.",
    )


@situation(
    "slack-delegation-done",
    HEALTHY,
    "One agent delegates in a Slack thread, the other gathers the numbers and reports, the first posts a summary: done",
    (pr("NousResearch/hermes-agent", 14117),),
    "The intended use the report describes: agent A tags agent B with a task, B queries three different metrics "
    "and replies with them, A posts one summary to the channel. Two agents, several posts, each with new content, "
    "and the exchange ends.",
    ("slack-ack-pingpong", "closing-pleasantries-groupchat", "handoff-pingpong"),
)
def slack_delegation_done(k: Kit) -> Run:
    slack = _SlackThread(k)
    a, b = slack.a, slack.b
    metrics = {
        m: k.n(100, 9000) for m in k.sample(("signups", "activations", "churned", "tickets", "mrr_eur"), 3)
    }
    turns = [slack.post(f"<@{b}> please compile last week's " + ", ".join(metrics), a)]
    for m, v in metrics.items():
        turns.append(
            Turn(
                None,
                [
                    ToolUse(
                        "query_metrics", {"metric": m, "range": "last_week"}, _j({"metric": m, "value": v})
                    )
                ],
                agent=b,
            )
        )
    report = ", ".join(f"{m}: {v}" for m, v in metrics.items())
    turns.append(slack.post(f"Last week: {report}", b))
    turns.append(slack.post(f"Weekly numbers are in: {report}.", a, channel="#leadership"))
    return Run(
        "Get last week's numbers from the metrics agent and share them with #leadership.",
        "slack_gateway",
        k.model(),
        turns,
        f"Posted: {report}.",
    )


@situation(
    "tool-executed-twice-then-answer",
    HEALTHY,
    "Every tool call runs twice in a row (a framework quirk), but after each pair the agent moves on, and it answers",
    (gh("stanfordnlp/dspy", 804),),
    "'ReAct calls custom tools twice': each action appears as an identical pair of calls with identical results, "
    "which is waste, but the run never comes back to a pair it has done: text-to-SQL, then a new column, then "
    "the final query, then the answer. A duplicate that does not recur is not a loop.",
    ("exact-repeat-listing", "dataframe-react-no-final", "answered-then-steps-exhausted"),
)
def tool_executed_twice_then_answer(k: Kit) -> Run:
    activity = k.pick(("Approve invoice", "Ship order", "Close ticket"))
    hours, share, updated = round(k.n(50, 900) / 10, 1), round(k.n(1, 40) / 100, 2), k.n(1000, 90000)
    steps = [
        ToolUse(
            "sql_tool",
            {"question": f"Average time until '{activity}' per case?"},
            _j({"sql": "SELECT AVG(duration_h) FROM events WHERE activity = ?", "rows": [[hours]]}),
        ),
        ToolUse(
            "create_new_column",
            {"instructions": f"Add column is_rework = 1 when '{activity}' occurs more than once in a case."},
            f"Column 'is_rework' added to events (rows updated: {updated}).",
        ),
        ToolUse(
            "sql_tool",
            {"question": "Share of cases with rework?"},
            _j({"sql": "SELECT AVG(is_rework) FROM cases", "rows": [[share]]}),
        ),
    ]
    turns = []
    for call in steps:
        for _ in range(2):
            turns.append(Turn(k.say(("Action: using the tool.", None), p_silent=0.5), [call]))
    return Run(
        f"How long does '{activity}' take on average, and how many cases need rework?",
        "ReAct",
        k.model(),
        turns,
        f"'{activity}' takes {hours} h on average; {share:.0%} of cases need rework.",
    )
