# ruff: noqa: E501  (situation data: quoted tool outputs are kept on one line, as agents saw them)
"""First look, batch 7: data-analysis, SQL, code, research, support and CI agents and group chats, written blind.

Each situation is what happened in one public issue thread or pull request the corpus and
batches 1 to 6 had not cited (a LangChain pandas agent, an AutoGen two-agent chat, Lumen's
SQL agent, smolagents' code agent and its ``final_answer``, any-agent's research agent, a
mahilo multi-agent support team, a LlamaIndex ReAct agent over citation query engines, a
GitHub Actions polling subgraph, a support agent's hand-off tool, DroidRun's and OpenManus's
planners, review agents on pull requests, a Cal.com booking agent), labelled from the
situation itself: ``loop`` when the run spends its steps learning nothing new and ends
without getting further, ``healthy`` when the repetition is the work.
Registered in this batch's own registry, never the corpus's.
"""

from __future__ import annotations

from bench.corpus.kit import Kit
from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.situations import HEALTHY, LOOP, Situation, _j, gh, pr, registrar

BATCH = "batch7"
WRITTEN = "2026-12-03"
AUTHOR = "written blind"

#: The renderings of this batch: the corpus's three conventions and every further shape.
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

NOT_A_TOOL = "{name} is not a valid tool, try another one."


# ======================================================================================
# Loops
# ======================================================================================


@situation(
    "pandas-agent-prose-as-tool-name",
    LOOP,
    "A pandas dataframe agent writes a sentence where the tool name belongs, is told it is not a valid tool, and writes another sentence, step after step",
    (gh("langchain-ai/langchain", 2252),),
    "The one tool is python_repl_ast; after a correct first question the model puts a description of what it wants "
    "to do in the Action field ('Use pandas boolean indexing to...', 'Use python_repl_ast to execute...'), and each "
    "time the executor answers that this is not a valid tool. The sentence is reworded every step but the query is "
    "never run, so nothing about the data is learned after the first answer and the run ends on the iteration limit.",
)
def pandas_agent_prose_as_tool_name(k: Kit) -> Run:
    product = k.pick(("FG-40F Series", "FG-60F Series", "FG-100F Series"))
    column = k.pick(("Local Reporting", "SD-WAN", "Wireless Controller"))
    code = f"df[df['Product'] == '{product}']['{column}']"
    names = (
        f"Use pandas boolean indexing to filter the dataframe to the '{product}' row and check the '{column}' column.",
        "Use python_repl_ast to execute the previous input.",
        "Use python_repl_ast to run the filter on the dataframe.",
        f"Filter df for {product} and read the {column} value",
        "I should use print() to display the result.",
        "python_repl_ast with print()",
        f"Check the '{column}' column for the {product} row using pandas",
        "Run the code in the Python shell",
    )
    thoughts = (
        "Thought: I made a mistake, I should use python_repl_ast instead.",
        "Thought: I made another mistake, I should print the result.",
        f"Thought: We need to check whether the {product} row has 'Yes' in the {column} column.",
        "Thought: Let me try running the query again.",
        None,
    )
    repl = k.pick(("python_repl_ast", "python_repl"))
    turns = [
        Turn("Thought: I need the number of rows in the dataframe.", [ToolUse(repl, {"query": "len(df)"}, str(k.n(30, 60)))]),
        Turn(f"Thought: We need to check if the {product} row has 'Yes' in the {column} column."),
    ]
    for _ in range(k.n(6, 12)):
        name = k.pick(names)
        turns.append(
            Turn(
                k.pick(thoughts),
                [ToolUse(name, {"query": k.pick((code, f"print({code})", f"`{code}`"))}, error=NOT_A_TOOL.format(name=name), error_type="InvalidTool", span=k.maybe(0.5), duration_ms=1)],
            )
        )
    return Run(
        f"How many rows are there, and does the {product} support {column.lower()}?",
        k.pick(("AgentExecutor", "pandas_dataframe_agent")),
        k.pick(("gpt-3.5-turbo", "gpt-3.5-turbo-0301", "text-davinci-003")),
        turns,
        None if k.maybe(0.6) else "Agent stopped due to iteration limit or time limit.",
        "AgentExecutor stopped: max_iterations (15) reached",
    )


@situation(
    "autogen-terminate-never-said-same-answer",
    LOOP,
    "In an AutoGen two-agent chat the solver gives the same handshake count again and again while the proxy agent keeps replying CONTINUE, until the auto-reply limit",
    (gh("microsoft/autogen", 391),),
    "Model calls only: the solver answers 45 in its first reply, which is right. The user proxy, an LLM told to say "
    "TERMINATE when the task is solved, answers with a restatement and CONTINUE instead; the solver then explains "
    "the same combination formula in other words and reaches 45 again, round after round. Nothing new is said after "
    "the first answer and the chat stops only at max_consecutive_auto_reply.",
)
def autogen_terminate_never_said_same_answer(k: Kit) -> Run:
    people = k.pick((10, 10, 12))
    total = people * (people - 1) // 2
    solver = k.pick(("SOLVER", "solver", "math_assistant"))
    proxy = k.pick(("user_proxy", "UserProxy"))
    answers = (
        f"To solve this problem we use combinations: each handshake is a pair of people, so the count is C({people}, 2) = {people}! / (2!({people}-2)!) = {total}. There are {total} handshakes in total.",
        f"Each of the {people} people shakes hands with {people - 1} others, which counts every handshake twice: {people} x {people - 1} / 2 = {total}. The answer is {total}.",
        f"Let me verify: choosing 2 people out of {people} gives {people}*{people - 1}/2 = {total} unique handshakes. So the total is {total}.",
        f"The number of handshakes equals the number of pairs among {people} people, C({people},2) = {total}. Final answer: {total}.",
        f"Counting again: person 1 shakes {people - 1} hands, person 2 shakes {people - 2} new ones, and so on: {' + '.join(str(i) for i in range(people - 1, 0, -1))} = {total}.",
    )
    replies = (
        f"The solver says there are {total} handshakes. CONTINUE",
        "Please double-check the reasoning. CONTINUE",
        f"The answer {total} seems correct, but make sure it is fully explained. CONTINUE",
        "CONTINUE",
        f"We have an answer of {total}; please confirm it. CONTINUE",
    )
    turns: list[Turn] = []
    for _ in range(k.n(5, 10)):
        turns.append(Turn(k.pick(answers), agent=solver))
        turns.append(Turn(k.pick(replies), agent=proxy))
    return Run(
        f"There are {people} people in a room. Each person shakes hands with every other person exactly once. How many handshakes are there in total?",
        k.pick(("groupchat", "two_agent_chat")),
        k.pick(("gpt-3.5-turbo", "gpt-4", "gpt-35-turbo-16k")),
        turns,
        None,
        None if k.maybe(0.5) else "max_consecutive_auto_reply (10) reached",
    )


@situation(
    "sql-agent-retries-same-missing-column",
    LOOP,
    "An SQL agent's query fails on a column the table does not have, and each retry rewrites the query's form but keeps the column, failing the same way",
    (gh("holoviz/lumen", 1419),),
    "The table has no 'revenue' column (it has 'amount'); every retry changes aliases, spacing, casing or the "
    "ORDER BY but still selects the missing column, and the database answers with the same binder error (only the "
    "query id differs). The agent never looks at the schema, so each retry costs time and tokens and learns "
    "nothing; the run ends inside the retries.",
)
def sql_agent_retries_same_missing_column(k: Kit) -> Run:
    table = k.pick(("orders", "sales", "transactions"))
    tool = k.pick(("execute_sql", "run_sql_query", "duckdb_query"))
    forms = (
        f"SELECT region, SUM(revenue) AS total FROM {table} GROUP BY region ORDER BY total DESC",
        f"SELECT region, SUM(revenue) AS total_revenue FROM {table} GROUP BY region ORDER BY 2 DESC",
        f"select region, sum(revenue) as total\nfrom {table}\ngroup by region\norder by total desc",
        f"SELECT t.region, SUM(t.revenue) AS total FROM {table} t GROUP BY t.region ORDER BY total DESC",
        f'SELECT "region", SUM("revenue") AS "total" FROM "{table}" GROUP BY "region" ORDER BY "total" DESC',
        f"SELECT region, SUM(revenue) total FROM {table} GROUP BY 1 ORDER BY total DESC LIMIT 100",
    )
    thoughts = (
        "The query failed; let me fix the SQL and try again.",
        "I'll adjust the aggregation and retry.",
        "Retrying with a corrected query.",
        "Let me rewrite the query with explicit aliases.",
        None,
    )
    turns: list[Turn] = []
    for _ in range(k.n(6, 11)):
        turns.append(
            Turn(
                k.pick(thoughts),
                [
                    ToolUse(
                        tool,
                        {"sql": k.pick(forms)},
                        error=f'Binder Error: Referenced column "revenue" not found in FROM clause!\nCandidate bindings: "{table}.amount", "{table}.region", "{table}.order_id"\n(query id {k.volatile_id()})',
                        error_type="BinderException",
                        duration_ms=k.n(20, 200),
                    )
                ],
            )
        )
    return Run(
        f"Show total revenue by region from the {table} table.",
        k.pick(("SQLAgent", "sql_agent")),
        k.pick(("gpt-4o-mini", "gpt-4.1-mini", "claude-3-5-haiku-latest")),
        turns,
        None,
        k.pick((None, "CancelledError: interrupted by the user")),
    )


def _code_step(code: str, logs: str, output: str = "None") -> str:
    return f"Execution logs:\n{logs}\nLast output from code snippet:\n{output}"


@situation(
    "code-agent-multiline-final-answer-unseen",
    LOOP,
    "A smolagents code agent passes a multi-line string to final_answer; the answer is not detected, and it sends the same code again each step until max_steps",
    (gh("huggingface/smolagents", 1428),),
    "The answer is in the task; the agent's code calls final_answer with it as a triple-quoted multi-line literal. "
    "The executor does not recognise the call as the final answer, so the step ends with no output and the agent "
    "writes the same call again (sometimes with a comment or a print added), getting the same empty observation, "
    "until the step limit ends the run without the answer.",
)
def code_agent_multiline_final_answer_unseen(k: Kit) -> Run:
    lines = k.pick((["This", "is", "the", "answer."], ["Line one", "Line two", "Line three"], ["alpha", "beta", "gamma", "delta"]))
    literal = '"""' + "\n".join(lines) + '"""'
    codes = (
        f"final_answer({literal})",
        f"# pass the answer exactly as given\nfinal_answer({literal})",
        f"print('Submitting the answer')\nfinal_answer({literal})",
        f"final_answer(\n    {literal}\n)",
    )
    thoughts = (
        "Thought: I will pass the answer directly to final_answer as instructed.",
        "Thought: The answer was not returned; I'll call final_answer again with the exact text.",
        "Thought: I need to provide the final answer exactly as is.",
        "Thought: Let me submit the multiline answer using final_answer.",
    )
    tool = k.pick(("python_interpreter", "execute_code"))
    turns = []
    for _ in range(k.n(5, 9)):
        code = k.pick(codes)
        logs = "Submitting the answer" if code.startswith("print") else ""
        turns.append(Turn(f"{k.pick(thoughts)}\nCode:\n```py\n{code}\n```<end_code>", [ToolUse(tool, {"code": code}, _code_step(code, logs))]))
    return Run(
        "The answer is available below. You just need to pass it exactly as is to final_answer. Pass it directly, i.e. do not store it in a variable.\n\n" + literal,
        "CodeAgent",
        k.pick(("gpt-4.1-mini", "Qwen/Qwen2.5-Coder-32B-Instruct")),
        turns,
        None,
        "AgentMaxStepsError: Reached max steps.",
    )


def _shows(k: Kit) -> list[dict]:
    titles = k.sample(
        (
            ("The Pitt", "2025-01-09", "Medical drama"),
            ("Severance", "2025-01-17", "Sci-fi thriller"),
            ("The White Lotus", "2025-02-16", "Satirical drama"),
            ("Adolescence", "2025-03-13", "Crime drama"),
            ("Andor", "2025-04-22", "Sci-fi"),
            ("The Last of Us", "2025-04-13", "Post-apocalyptic drama"),
            ("Squid Game", "2025-06-27", "Survival thriller"),
        ),
        5,
    )
    return [{"title": t, "release": d, "genre": g, "url": f"https://tv.example/{t.lower().replace(' ', '-')}"} for t, d, g in titles]


@situation(
    "research-agent-final-answer-never-called",
    LOOP,
    "A research agent has its five trending shows after the first search but keeps saying it will give the final answer and calling the same search again",
    (gh("mozilla-ai/any-agent", 662),),
    "The first search returns five shows with release dates and genres, which is the whole answer. The model then "
    "announces its final answer in new words each step but emits the search call again with the same query (once "
    "in a while a trivially re-spelled one), receives the same five results, and never calls final_answer; the run "
    "ends on its step limit with nothing delivered.",
)
def research_agent_final_answer_never_called(k: Kit) -> Run:
    shows = _shows(k)
    search = k.pick(("search_tavily", "search_web", "web_search"))
    queries = ("trending TV shows 2025", "trending TV shows 2025", "trending tv shows 2025", "Trending TV shows in 2025")
    result = _j({"results": [{"title": s["title"], "content": f"{s['title']} ({s['genre']}) premiered {s['release']}.", "url": s["url"]} for s in shows]})
    says = (
        "I have all the information I need. Let me provide the final answer.",
        "Now I can give the final answer with the five shows.",
        "I'll now return the final answer.",
        f"The five shows are {', '.join(s['title'] for s in shows)}. Calling final_answer.",
        "DO NOT OVERTHINK: I have the answer and will stop now.",
        None,
    )
    turns = [Turn("I'll search for trending shows.", [ToolUse(search, {"query": queries[0]}, result, duration_ms=k.n(800, 2500))])]
    for _ in range(k.n(6, 11)):
        turns.append(Turn(k.pick(says), [ToolUse(search, {"query": k.pick(queries)}, result, duration_ms=k.n(800, 2500))]))
    return Run(
        "What are 5 tv shows that are trending in 2025? Please provide the name of the show, the exact release date, the genre, and a brief description of the show. Stop as soon as you have one final answer.",
        k.pick(("ToolCallingAgent", "any_agent_smolagents")),
        k.pick(("ollama/qwen3:8b", "ollama/llama3.1:8b")),
        turns,
        None,
        "AgentMaxStepsError: Reached max steps.",
    )


@situation(
    "support-agents-relay-questions-to-absent-human",
    LOOP,
    "A product agent and a support agent pass questions to each other and to a human who never answers; each is forwarded with a new wording and acknowledged the same way",
    (gh("wjayesh/mahilo", 30),),
    "The customer-facing agent cannot answer the product agent's questions, so it forwards each to the human with "
    "contact_human and gets the same 'Sent text message to human' back; the product agent then asks another "
    "variation of the same few questions (ticket evaluation criteria, follow-up channels) and the cycle repeats. "
    "No answer ever comes back, no ticket or plan is produced, and the run continues until it is killed.",
)
def support_agents_relay_questions_to_absent_human(k: Kit) -> Run:
    product = k.pick(("ProductAgent", "product_agent"))
    support = k.pick(("SalesAgent", "support_agent", "CustomerAgent"))
    questions = (
        "What are the main criteria for ticket evaluation?",
        "Which criteria do you use to evaluate a support ticket?",
        "What communication channels do you prefer for follow-ups on tickets?",
        "How would you like to be contacted about ticket follow-ups?",
        "What makes a ticket high priority for your team?",
        "Can you tell us how tickets should be prioritised and evaluated?",
    )
    turns: list[Turn] = []
    for _ in range(k.n(5, 9)):
        q = k.pick(questions)
        turns.append(Turn(f"Pending question for the customer: {q}", agent=product))
        message = f"The Product Agent is asking: {q} Can you provide that information?"
        turns.append(Turn(None, [ToolUse("contact_human", {"message": message}, f"Sent text message to human: {message}")], agent=support))
        turns.append(Turn("I've reached out to the human regarding this, as requested by the Product Agent. I'll keep you updated once I receive a response.", agent=support))
    return Run(
        "Design a ticket triage workflow with the customer's input.",
        k.pick(("mahilo_team", "agent_manager")),
        k.pick(("gpt-4o", "gpt-4o-mini")),
        turns,
        None,
        k.pick((None, "KeyboardInterrupt")),
    )


# ======================================================================================
# Healthy look-alikes
# ======================================================================================


@situation(
    "pandas-agent-keyerror-fixed-by-looking",
    HEALTHY,
    "A data-analysis agent's first column lookup fails with KeyError, it lists the columns, finds the name has a leading space, and answers",
    (gh("Pengeace/LncRNA-Disease-link", 1),),
    "One failure and several runs of the same Python tool: but after the KeyError the agent inspects the columns "
    "(a new observation), sees ' Name' with a space, uses it, and each later call computes something different "
    "(counts, a top-5 list) that the final answer reports.",
    ("pandas-agent-prose-as-tool-name", "sql-agent-retries-same-missing-column"),
)
def pandas_agent_keyerror_fixed_by_looking(k: Kit) -> Run:
    repl = k.pick(("python_repl_ast", "python_repl"))
    diseases = k.sample(("lung cancer", "breast cancer", "glioma", "hepatocellular carcinoma", "colorectal cancer", "gastric cancer", "leukemia"), 5)
    counts = sorted((k.n(20, 140) for _ in diseases), reverse=True)
    total = k.n(2400, 3200)
    turns = [
        Turn("Thought: I'll count the distinct lncRNA names.", [ToolUse(repl, {"query": "df['Name'].nunique()"}, error="KeyError: 'Name'", error_type="KeyError")]),
        Turn("Thought: The column may be spelled differently; let me list the columns.", [ToolUse(repl, {"query": "list(df.columns)"}, "[' Name', 'Disease', 'PubMed ID', 'Description']")]),
        Turn("Thought: The column is ' Name' with a leading space.", [ToolUse(repl, {"query": "df[' Name'].nunique()"}, str(total))]),
        Turn(None, [ToolUse(repl, {"query": "df['Disease'].value_counts().head(5)"}, "\n".join(f"{d:<28}{c}" for d, c in zip(diseases, counts, strict=True)))]),
        Turn(None, [ToolUse(repl, {"query": "len(df)"}, str(total + k.n(500, 2000)))]),
    ]
    final = f"There are {total} distinct lncRNAs (the column is ' Name' with a leading space). The diseases with most associations: " + ", ".join(f"{d} ({c})" for d, c in zip(diseases, counts, strict=True)) + "."
    return Run(
        "How many distinct lncRNAs are in lncRNA_disease.csv, and which diseases have the most associations?",
        k.pick(("pandas_dataframe_agent", "data_analyst")),
        k.model(),
        turns,
        final,
    )


@situation(
    "groupchat-critic-then-terminate",
    HEALTHY,
    "An AutoGen group chat of coder, executor and critic goes round three times: the code runs, the critic asks for something new each time, and the last round ends with TERMINATE",
    (gh("microsoft/autogen", 1130),),
    "Mostly model turns in a fixed rotation, which looks like a chat going round; but each round's code differs "
    "because the critic asked for something different (handle missing values, add a chart), the executor returns "
    "new output each time, and the critic's third reply approves and ends the chat with TERMINATE.",
    ("autogen-terminate-never-said-same-answer",),
)
def groupchat_critic_then_terminate(k: Kit) -> Run:
    coder, executor, critic = "Coder", k.pick(("Executor", "user_proxy")), "Critic"
    run = k.pick(("execute_code", "exec_py"))
    mean = round(k.n(1800, 2600) / 100, 2)
    steps = [
        ("import pandas as pd\ndf = pd.read_csv('temps.csv')\nprint(df['temp'].mean())", f"{mean}\n", "The mean is printed, but 14 rows have missing temperatures; drop or interpolate them before averaging."),
        ("import pandas as pd\ndf = pd.read_csv('temps.csv')\ndf['temp'] = df['temp'].interpolate()\nprint(df['temp'].mean())\nprint(df.groupby('month')['temp'].mean().round(2).to_string())", f"{mean + 0.31}\n" + "\n".join(f"{m} {round(mean + k.n(-60, 60) / 10, 2)}" for m in ("Jan", "Feb", "Mar")), "Good. Please also save a line chart of the monthly means to monthly.png."),
        ("import pandas as pd, matplotlib.pyplot as plt\ndf = pd.read_csv('temps.csv')\ndf['temp'] = df['temp'].interpolate()\ndf.groupby('month')['temp'].mean().plot()\nplt.savefig('monthly.png')\nprint('saved')", "saved\n", "The analysis handles missing values, reports monthly means and saves the chart. The task is complete. TERMINATE"),
    ]
    turns: list[Turn] = []
    for code, output, review in steps:
        turns.append(Turn(f"```python\n{code}\n```", agent=coder))
        turns.append(Turn(None, [ToolUse(run, {"code": code}, f"exitcode: 0 (execution succeeded)\nCode output: {output}")], agent=executor))
        turns.append(Turn(review, agent=critic))
    return Run(
        "Compute the average temperature in temps.csv, by month too, and chart it.",
        k.pick(("groupchat", "chat_manager")),
        k.pick(("gpt-4-1106-preview", "gpt-4o")),
        turns,
        "TERMINATE",
    )


@situation(
    "sql-agent-error-fixed-then-pages",
    HEALTHY,
    "An SQL agent's first query names a missing column, the error lists the candidates, it switches to the right one and then pages through the result with OFFSET",
    (pr("holoviz/lumen", 1312),),
    "The same error as a stuck SQL agent, once; the next query uses the column the error suggested and succeeds. "
    "The same query is then run again with only OFFSET changing, which is paging: each page holds rows not seen "
    "before, the last one is short, and the answer sums them.",
    ("sql-agent-retries-same-missing-column",),
)
def sql_agent_error_fixed_then_pages(k: Kit) -> Run:
    table = k.pick(("orders", "sales", "transactions"))
    tool = k.pick(("execute_sql", "run_sql_query", "duckdb_query"))
    limit = 50
    pages = k.n(3, 6)
    turns = [
        Turn(None, [ToolUse(tool, {"sql": f"SELECT customer_id, SUM(revenue) AS total FROM {table} GROUP BY customer_id"}, error=f'Binder Error: Referenced column "revenue" not found in FROM clause!\nCandidate bindings: "{table}.amount", "{table}.customer_id"', error_type="BinderException")]),
    ]
    grand = 0
    for page in range(pages):
        n = limit if page < pages - 1 else k.n(3, 40)
        rows = [{"customer_id": 1000 + page * limit + i, "total": k.n(20, 900)} for i in range(n)]
        grand += sum(r["total"] for r in rows)
        sql = f"SELECT customer_id, SUM(amount) AS total FROM {table} GROUP BY customer_id ORDER BY customer_id LIMIT {limit} OFFSET {page * limit}"
        say = "The column is called amount; the result is large, so I'll read it in pages of 50." if page == 0 else None
        turns.append(Turn(say, [ToolUse(tool, {"sql": sql}, _j({"row_count": n, "rows": rows}), duration_ms=k.n(30, 300))]))
    customers = (pages - 1) * limit + n
    return Run(
        f"Total spend per customer in {table}, and the overall total.",
        k.pick(("SQLAgent", "sql_agent")),
        k.model(),
        turns,
        f"{customers} customers; overall total {grand}. The per-customer totals are in the table above.",
    )


@situation(
    "code-agent-multistep-then-final-answer",
    HEALTHY,
    "A smolagents code agent needs more than its default five steps: each step's code prints something new, several print nothing useful, and it ends with final_answer",
    (gh("huggingface/smolagents", 101),),
    "Many steps of the same code tool with similar-looking 'Last output from code snippet: None' observations, "
    "which resembles an agent whose answer is not seen; but each step runs different code, the logs show new "
    "search results and computed values, and the last step's final_answer is returned.",
    ("code-agent-multiline-final-answer-unseen",),
)
def code_agent_multistep_then_final_answer(k: Kit) -> Run:
    tool = k.pick(("python_interpreter", "execute_code"))
    city_a, city_b = k.sample(("Paris", "Berlin", "Madrid", "Rome", "Vienna", "Lisbon"), 2)
    pop_a, pop_b = k.n(1_500_000, 3_700_000), k.n(500_000, 3_700_000)
    steps = [
        (f"results = web_search('{city_a} population 2024')\nprint(results)", f"## Search Results\n{city_a}: population {pop_a:,} (2024 estimate)"),
        (f"results = web_search('{city_b} population 2024')\nprint(results)", f"## Search Results\n{city_b}: population {pop_b:,} (2024 estimate)"),
        (f"pop_a = {pop_a}\npop_b = {pop_b}", ""),
        ("ratio = pop_a / pop_b\nprint(round(ratio, 3))", f"{round(pop_a / pop_b, 3)}"),
        ("diff = abs(pop_a - pop_b)", ""),
        ("print(diff)", f"{abs(pop_a - pop_b)}"),
    ]
    thoughts = ("Thought: I will search for the first population.", "Thought: Now the second city.", "Thought: I'll store both figures.", "Thought: Compute the ratio.", "Thought: And the difference.", "Thought: Print it.")
    turns = [Turn(f"{thoughts[i]}\nCode:\n```py\n{c}\n```<end_code>", [ToolUse(tool, {"code": c}, _code_step(c, logs))]) for i, (c, logs) in enumerate(steps)]
    answer = f"{city_a} has {pop_a:,} people and {city_b} {pop_b:,}: a ratio of {round(pop_a / pop_b, 3)} and a difference of {abs(pop_a - pop_b):,}."
    code = f"final_answer({answer!r})"
    turns.append(Turn(f"Code:\n```py\n{code}\n```<end_code>", [ToolUse(tool, {"code": code}, _code_step(code, "", answer))]))
    return Run(
        f"Compare the populations of {city_a} and {city_b}: ratio and difference.",
        "CodeAgent",
        k.pick(("Qwen/Qwen2.5-Coder-32B-Instruct", "gpt-4o")),
        turns,
        answer,
    )


@situation(
    "citation-query-engines-answer",
    HEALTHY,
    "A LlamaIndex ReAct agent asks several citation query engine tools about one product, one after another, and answers with numbered sources",
    (gh("run-llama/llama_index", 20290),),
    "The same kind of tool is called several times with similar questions, which resembles a research agent that "
    "keeps searching; but each call goes to a different index (info, specs, market) and brings back different "
    "cited passages, and the agent stops and answers with the citations as soon as it has them.",
    ("research-agent-final-answer-never-called",),
)
def citation_query_engines_answer(k: Kit) -> Run:
    product = k.pick(("Aurora X2 e-bike", "Nimbus 5 headphones", "Terra 3 tent"))
    facts = {
        "info": f"{product} launched in {k.pick(('March', 'May', 'September'))} 2025 as the brand's mid-range model.",
        "specs": f"{product}: weight {k.n(1, 25)} kg, battery {k.n(20, 90)} h / range, warranty {k.n(2, 5)} years.",
        "market": f"{product} competes at {k.n(199, 2499)} USD; reviewers rank it {k.pick(('first', 'second', 'third'))} in its class.",
    }
    turns = []
    for name, fact in facts.items():
        ask = f"What does the {name} index say about the {product}?"
        out = f"{fact} [1]\n\nSources:\n[1] {name}/{k.word(6)}.pdf, page {k.n(1, 40)}"
        turns.append(Turn(f"Thought: I need the {name} details. Action: {name}", [ToolUse(name, {"input": ask}, out, duration_ms=k.n(500, 2500))]))
    final = f"{facts['info']} [1] {facts['specs']} [2] {facts['market']} [3]"
    return Run(
        f"Give me an overview of the {product} with sources.",
        k.pick(("ReActAgent", "react_agent")),
        k.model(),
        turns,
        final,
    )


@situation(
    "ci-agent-polls-run-until-done",
    HEALTHY,
    "A CI agent dispatches a workflow, polls its run every minute through queued and in_progress, sees it complete with success, and opens the release",
    (pr("airas-org/airas", 496),),
    "The same status call returns the same 'in_progress' many times in a row, with a sleep between, like a stuck "
    "poll; but the run is a real job that takes minutes, the status moves to completed/success, and the agent then "
    "does new work (downloads the artifact, creates the release) and stops.",
    ("research-agent-final-answer-never-called", "code-agent-multiline-final-answer-unseen"),
)
def ci_agent_polls_run_until_done(k: Kit) -> Run:
    run_id = k.n(10_000_000_000, 19_999_999_999)
    workflow = k.pick(("build.yml", "release.yml", "ci.yml"))
    status = k.pick(("get_workflow_run", "gh_run_view"))
    sleep = k.pick(("sleep", "wait_seconds"))
    turns = [Turn("Dispatching the workflow.", [ToolUse("dispatch_workflow", {"workflow": workflow, "ref": "main"}, _j({"run_id": run_id, "status": "queued"}))])]
    states = ["queued"] * k.n(1, 2) + ["in_progress"] * k.n(4, 8)
    for s in states:
        turns.append(Turn(None, [ToolUse(sleep, {"seconds": 60}, "slept 60s", duration_ms=60000)]))
        turns.append(Turn(k.say(("Still running; waiting.", "Checking the run again."), 0.6), [ToolUse(status, {"run_id": run_id}, _j({"id": run_id, "status": s, "conclusion": None}))]))
    turns.append(Turn(None, [ToolUse(sleep, {"seconds": 60}, "slept 60s", duration_ms=60000)]))
    turns.append(Turn(None, [ToolUse(status, {"run_id": run_id}, _j({"id": run_id, "status": "completed", "conclusion": "success"}))]))
    version = f"v{k.n(1, 3)}.{k.n(0, 20)}.{k.n(0, 9)}"
    turns.append(Turn("The build succeeded; downloading the artifact.", [ToolUse("download_artifact", {"run_id": run_id, "name": "dist"}, f"downloaded dist.zip ({k.n(2, 40)} MB)")]))
    turns.append(Turn(None, [ToolUse("create_release", {"tag": version, "files": ["dist.zip"]}, _j({"url": f"https://git.example/releases/{version}", "id": k.n(100000, 999999)}))]))
    return Run(
        f"Build {workflow} on main and publish release {version} when it passes.",
        k.pick(("release-agent", "ops-agent")),
        k.model(),
        turns,
        f"Workflow run {run_id} succeeded; release {version} is published with dist.zip.",
    )


@situation(
    "support-agent-hands-off-once",
    HEALTHY,
    "A support agent looks up the customer's order and the refund policy, documents the problem, hands the conversation to a human once, and tells the customer",
    (pr("stickerdaniel/saas-starter", 684),),
    "A support conversation with a message sent to humans, like a team forwarding questions to a human who never "
    "answers; but here each lookup returns something new, the hand-off is made once with the problem documented, "
    "its confirmation is relayed to the customer, and the turn ends.",
    ("support-agents-relay-questions-to-absent-human",),
)
def support_agent_hands_off_once(k: Kit) -> Run:
    order = f"ORD-{k.n(10000, 99999)}"
    turns = [
        Turn("Let me look up your order.", [ToolUse("get_order", {"order_id": order}, _j({"id": order, "status": "delivered", "items": [k.pick(("Pro plan (annual)", "Team seats x5"))], "charged_twice": True}))]),
        Turn(None, [ToolUse("search_help_center", {"query": "duplicate charge refund"}, "Duplicate charges are refunded by the billing team within 5 business days after a human review.")]),
        Turn("This needs the billing team; I'll hand it over with the details.", [ToolUse("request_handoff", {"reason": "duplicate charge", "summary": f"Order {order} was charged twice on checkout; customer saw two card transactions."}, _j({"handoff": "created", "thread_flag": "awaiting_human", "notified": ["billing@team"]}))]),
    ]
    return Run(
        f"I was charged twice for order {order}. Can I get a refund?",
        k.pick(("support_agent", "SupportBot")),
        k.model(),
        turns,
        "I've passed this to our billing team with the details; they will reply right here in the chat, and duplicate charges are refunded within 5 business days.",
    )


# ======================================================================================
# Planning, code-review and scheduling agents
# ======================================================================================


@situation(
    "planner-reissues-same-plan-after-done",
    LOOP,
    "A phone agent's planner hands the executor the same two tasks again after they succeed, instead of declaring the goal complete, until max steps",
    (gh("droidrun/mobilerun", 84),),
    "The executor opens the settings and turns Wi-Fi off, and both steps report success. The planner, which alone "
    "can end the run, then emits the same plan again (worded slightly differently), the executor repeats the taps "
    "on a phone already in the target state and gets the same results, and so on; the goal is met after the first "
    "round but never declared, and the run ends at its step limit.",
)
def planner_reissues_same_plan_after_done(k: Kit) -> Run:
    planner, executor = "PlannerAgent", k.pick(("CodeActAgent", "executor"))
    app = k.pick(("Settings", "com.android.settings"))
    plans = (
        f"1. Open the {app} app\n2. Turn off Wi-Fi",
        f"Tasks:\n- open {app}\n- switch Wi-Fi off",
        f"1. Launch {app}.\n2. Toggle Wi-Fi to off.",
    )
    turns: list[Turn] = []
    for round_ in range(k.n(5, 9)):
        plan = k.pick(plans)
        turns.append(Turn(None, [ToolUse("set_tasks", {"tasks": plan.splitlines()}, "Tasks set: 2")], agent=planner))
        turns.append(Turn(None, [ToolUse("start_app", {"package": "com.android.settings"}, "Started com.android.settings")], agent=executor))
        toggled = "Tapped the 'Wi-Fi' toggle: Wi-Fi is now off" if round_ == 0 else "The 'Wi-Fi' toggle is already off; nothing to tap"
        turns.append(Turn(None, [ToolUse("tap_by_text", {"text": "Wi-Fi"}, toggled)], agent=executor))
        turns.append(Turn(k.pick(("Task completed successfully.", "Both tasks are done.", "Wi-Fi is now off.")), agent=executor))
    return Run(
        "Turn off Wi-Fi on the phone.",
        "DroidAgent",
        k.pick(("gemini-2.5-flash", "gpt-4o")),
        turns,
        None,
        "MaxStepsReached: step_counter >= max_steps (15)",
    )


@situation(
    "review-agent-resubmits-same-review",
    LOOP,
    "A code-review agent answers each new mention on a pull request by approving it again at the same head commit with the same review text",
    (gh("hivemoot/hivemoot", 415),),
    "Every mention wakes the agent, which reads the PR (same head SHA, same diff) and submits another approval with "
    "the same summary; the API accepts each one. Nothing in the pull request changes between reviews, so each "
    "review adds nothing but noise, and the run goes on answering mentions with copies.",
)
def review_agent_resubmits_same_review(k: Kit) -> Run:
    number = k.n(150, 420)
    sha = k.hex(40)
    files = k.paths(3)
    review = k.pick(("LGTM: the change is small, tests cover the new branch, and the docs are updated.", "Approving: the refactor keeps behaviour, and the new tests pass."))
    pr_view = _j({"number": number, "headRefOid": sha, "files": files, "additions": k.n(10, 120), "deletions": k.n(0, 60), "checks": "passing"})
    turns: list[Turn] = []
    for _ in range(k.n(6, 10)):
        turns.append(Turn(None, [ToolUse("get_notifications", {"unread": True}, _j([{"type": "mention", "pr": number, "by": k.pick(("heater", "forager", "nurse", "builder")), "id": k.volatile_id()}]))]))
        turns.append(Turn(None, [ToolUse("gh_pr_view", {"number": number}, pr_view)]))
        turns.append(Turn(k.say(("Reviewing the pull request.", "The PR looks good; approving."), 0.5), [ToolUse("gh_pr_review", {"number": number, "event": "APPROVE", "body": review}, _j({"state": "APPROVED", "commit_id": sha, "id": k.n(10**9, 2 * 10**9)}))]))
    return Run(
        f"Respond to mentions; review pull request #{number} when asked.",
        k.pick(("hivemoot-heater", "review-agent")),
        k.model(),
        turns,
        None,
        k.pick((None, "run cancelled by scheduler")),
    )


@situation(
    "booking-agent-same-slot-rejected",
    LOOP,
    "A scheduling agent tries to book the same free-looking slot again and again and is told each time that no user is available there",
    (gh("calcom/cal.diy", 23391),),
    "The availability lookup shows the slot as free, but booking it fails with 'No available users found. Could "
    "you try another time slot?' The agent re-submits the same slot, sometimes with the time written another way "
    "or a note changed, and gets the same refusal; it never tries another slot or tells the user, and the run ends "
    "inside the retries.",
)
def booking_agent_same_slot_rejected(k: Kit) -> Run:
    day = k.n(2, 27)
    spellings = (f"2026-09-{day:02d}T13:00:00Z", f"2026-09-{day:02d}T13:00:00.000Z", f"2026-09-{day:02d} 13:00", f"2026-09-{day:02d}T15:00:00+02:00")
    notes = ("Intro call", "intro call", "Introductory call with the customer", "")
    turns = [Turn("Checking availability.", [ToolUse("get_available_slots", {"date": f"2026-09-{day:02d}", "event_type": "30min"}, _j({"slots": [f"2026-09-{day:02d}T{h}:00:00Z" for h in (9, 11, 13, 16)]}))])]
    for _ in range(k.n(6, 10)):
        turns.append(
            Turn(
                k.say(("13:00 is free; booking it.", "Retrying the booking.", "Let me try booking that slot again."), 0.4),
                [ToolUse("create_booking", {"start": k.pick(spellings), "event_type": "30min", "attendee": "dana@example.com", "notes": k.pick(notes)}, error="Could not book the meeting. No available users found. Could you try another time slot?", error_type="HttpError", duration_ms=k.n(300, 900))],
            )
        )
    return Run(
        f"Book a 30 minute intro call with dana@example.com on September {day} at 13:00 UTC, or the nearest free time.",
        k.pick(("scheduler", "calendar_agent")),
        k.model(),
        turns,
        None,
        k.pick((None, "MaxTurnsExceeded: Max turns (20) exceeded")),
    )


@situation(
    "planning-flow-step-retried-then-done",
    HEALTHY,
    "A planning flow makes a four-step plan, one step fails and is retried once successfully, and each step is marked complete in turn until the summary",
    (pr("FoundationAgents/OpenManus", 1323),),
    "The planning tool is called after every step with the same plan id and only the step index and status changing, "
    "which repeats; but each index is a different step whose work produced something new, the one failure is followed "
    "by a retry that works, and the plan ends fully completed with a summary.",
    ("planner-reissues-same-plan-after-done",),
)
def planning_flow_step_retried_then_done(k: Kit) -> Run:
    plan_id = f"plan_{k.n(1700000000, 1799999999)}"
    topic = k.pick(("electric scooters in Lisbon", "coworking prices in Berlin", "bike-share usage in Montreal"))
    steps = [f"Search for recent data on {topic}", "Extract the key figures", "Write the figures to report.md", "Summarise the findings"]
    turns = [Turn(None, [ToolUse("planning", {"command": "create", "plan_id": plan_id, "steps": steps}, f"Plan created successfully with ID: {plan_id}")])]
    work = [
        ("web_search", {"query": f"{topic} 2025 statistics"}, f"Found 6 results about {topic}", None),
        ("browser_use", {"action": "extract_content", "goal": "key figures"}, None, "error: page load timed out"),
        ("browser_use", {"action": "extract_content", "goal": "key figures"}, f"{k.n(3, 40)} thousand users; {k.n(5, 60)}% growth year on year", None),
        ("str_replace_editor", {"command": "create", "path": "report.md"}, "File created successfully at: report.md", None),
    ]
    index = 0
    for tool, args, result, error in work:
        turns.append(Turn(None, [ToolUse(tool, args, result, error=error)]))
        status = "blocked" if error else "completed"
        if error:
            turns.append(Turn("The extraction failed; retrying the step once.", [ToolUse("planning", {"command": "mark_step", "plan_id": plan_id, "step_index": index, "step_status": "in_progress", "step_notes": "retry 1 of 2"}, f"Step {index} updated in plan '{plan_id}'.")]))
            continue
        turns.append(Turn(None, [ToolUse("planning", {"command": "mark_step", "plan_id": plan_id, "step_index": index, "step_status": status}, f"Step {index} updated in plan '{plan_id}'.")]))
        index += 1
    turns.append(Turn(None, [ToolUse("planning", {"command": "mark_step", "plan_id": plan_id, "step_index": 3, "step_status": "completed"}, f"Step 3 updated in plan '{plan_id}'. Progress: 4/4 steps completed (100.0%)")]))
    return Run(
        f"Research {topic} and write a short report.",
        k.pick(("PlanningFlow", "manus")),
        k.model(),
        turns,
        f"The report on {topic} is in report.md: all four steps completed (one extraction retried after a timeout).",
    )


@situation(
    "review-agent-updates-comment-per-push",
    HEALTHY,
    "A code-review agent reviews a pull request, waits for the author's pushes, and reviews each new head commit by editing its one review comment, until it approves",
    (gh("fullsend-ai/fullsend", 452),),
    "The agent checks the PR's head again and again with a sleep between, and edits the same comment several times, "
    "which repeats; but it reviews only when the head SHA is new, each review is about a different diff (first two "
    "problems, then one, then none), and the run ends with an approval.",
    ("review-agent-resubmits-same-review",),
)
def review_agent_updates_comment_per_push(k: Kit) -> Run:
    number = k.n(150, 9000)
    shas = [k.hex(40) for _ in range(3)]
    comment_id = k.n(10**9, 2 * 10**9)
    findings = (
        "Requested changes: 1) the retry loop never resets its counter; 2) the new endpoint has no test.",
        "Requested changes: the endpoint test is there; the retry counter is still not reset on success.",
        "All earlier findings are fixed. Approving.",
    )
    turns: list[Turn] = []
    for i, sha in enumerate(shas):
        if i:
            for _ in range(k.n(1, 3)):
                turns.append(Turn(None, [ToolUse("sleep", {"seconds": 120}, "slept 120s", duration_ms=120000)]))
                turns.append(Turn(None, [ToolUse("gh_pr_view", {"number": number}, _j({"headRefOid": shas[i - 1], "state": "OPEN"}))]))
            turns.append(Turn(None, [ToolUse("sleep", {"seconds": 120}, "slept 120s", duration_ms=120000)]))
        turns.append(Turn(None, [ToolUse("gh_pr_view", {"number": number}, _j({"headRefOid": sha, "state": "OPEN"}))]))
        changed = k.path()
        turns.append(Turn(None, [ToolUse("gh_pr_diff", {"number": number}, f"diff --git a/{changed} b/{changed}\n@@ -{k.n(1, 90)},7 +{k.n(1, 90)},{k.n(8, 14)} @@\n+    {k.word(6)}_{k.word(5)} = {k.n(0, 9)}")]))
        if i == 0:
            turns.append(Turn(None, [ToolUse("gh_comment_create", {"number": number, "body": findings[0]}, _j({"id": comment_id}))]))
        else:
            turns.append(Turn(None, [ToolUse("gh_comment_edit", {"comment_id": comment_id, "body": f"Review of {sha[:7]}: {findings[i]}"}, _j({"id": comment_id, "updated": True}))]))
    turns.append(Turn(None, [ToolUse("gh_pr_review", {"number": number, "event": "APPROVE"}, _j({"state": "APPROVED", "commit_id": shas[-1]}))]))
    return Run(
        f"Review pull request #{number} and keep the review up to date until it can be approved.",
        k.pick(("review-agent", "fullsend-review")),
        k.model(),
        turns,
        f"PR #{number} approved at {shas[-1][:7]}.",
    )


@situation(
    "booking-agent-tries-next-slots",
    HEALTHY,
    "A scheduling agent's first booking is refused, it asks for fresh availability and tries the next slots in turn, and the third one books",
    (gh("calcom/cal.diy", 20406),),
    "The same booking call and the same refusal come back twice, like an agent stuck on one slot; but each attempt "
    "is a different time taken from a fresh availability list, the third attempt is confirmed with a booking id, "
    "and the agent tells the user which time it got.",
    ("booking-agent-same-slot-rejected", "sql-agent-retries-same-missing-column"),
)
def booking_agent_tries_next_slots(k: Kit) -> Run:
    day = k.n(2, 27)
    hours = k.sample((9, 10, 11, 13, 14, 15, 16), 4)
    hours.sort()
    slots = [f"2026-09-{day:02d}T{h:02d}:00:00Z" for h in hours]
    refusal = "Could not book the meeting. No available users found. Could you try another time slot?"
    turns = [Turn(None, [ToolUse("get_available_slots", {"date": f"2026-09-{day:02d}", "event_type": "30min"}, _j({"slots": slots}))])]
    for i in range(2):
        turns.append(Turn(k.say(("Booking the earliest free slot.", "Trying the next slot.")), [ToolUse("create_booking", {"start": slots[i], "event_type": "30min", "attendee": "dana@example.com"}, error=refusal, error_type="HttpError")]))
        turns.append(Turn(None, [ToolUse("get_available_slots", {"date": f"2026-09-{day:02d}", "event_type": "30min"}, _j({"slots": slots[i + 1 :]}))]))
    uid = k.word(10)
    turns.append(Turn(None, [ToolUse("create_booking", {"start": slots[2], "event_type": "30min", "attendee": "dana@example.com"}, _j({"status": "ACCEPTED", "uid": uid, "start": slots[2]}))]))
    return Run(
        f"Book a 30 minute intro call with dana@example.com on September {day}, any time.",
        k.pick(("scheduler", "calendar_agent")),
        k.model(),
        turns,
        f"Booked for {slots[2]} (booking {uid}); the two earlier slots were refused as unavailable.",
    )
