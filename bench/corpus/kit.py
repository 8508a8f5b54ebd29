"""Seeded variation for corpus situations: names, wordings, ids, paths, models.

Every situation builds its runs through a :class:`Kit` seeded per (situation, variant), so
the corpus is reproducible byte for byte and each variant differs in the things real runs
differ in (tool names, argument keys and wordings, lengths, ids, paths, models, whether
the model says anything beside its tool calls), never in what the situation is.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from bench.corpus.runs import ToolUse, Turn

T = TypeVar("T")

MODELS = (
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4o-2024-08-06",
    "claude-sonnet-4-20250514",
    "gemini-2.5-pro",
    "qwen3-coder-plus",
    "deepseek-chat",
    "glm-4.6",
)
AGENTS = ("assistant", "coder", "research_agent", "ops-agent", "Agent", "react_agent", "worker", "main")
DIRS = ("src", "app", "lib", "packages/core/src", "services/api", "backend", "web/src", "pkg")
FILES = (
    "config.py",
    "main.ts",
    "utils.py",
    "server.go",
    "index.tsx",
    "models.py",
    "router.ts",
    "handlers.py",
    "schema.sql",
    "Footer.tsx",
    "client.rs",
    "settings.yaml",
    "api.js",
)


class Kit:
    """The random choices one run makes, from one seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._id_shape: Callable[[], str] | None = None

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(list(options))

    def n(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def maybe(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def shuffle(self, items: list[T]) -> list[T]:
        items = list(items)
        self.rng.shuffle(items)
        return items

    def sample(self, options: Sequence[T], k: int) -> list[T]:
        return self.rng.sample(list(options), k)

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def word(self, n: int = 6) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase) for _ in range(n))

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def volatile_id(self) -> str:
        """An identifier that changes every call, in one of the shapes services use (one
        shape per run: a service does not change how it spells its ids between calls)."""
        if self._id_shape is None:
            self._id_shape = self.pick(
                (
                    lambda: "req_" + self.hex(self.n(10, 24)),
                    lambda: "m-" + self.hex(8),
                    lambda: "run-" + self.hex(4),
                    lambda: self.uuid(),
                    lambda: self.hex(12),
                    lambda: f"{self.hex(8)}_{self.hex(4)}",
                    lambda: f"trace-{self.hex(6)}-{self.hex(6)}",
                )
            )
        return self._id_shape()

    def clock(self) -> str:
        h, m, s = self.n(0, 23), self.n(0, 59), self.n(0, 59)
        return f"2026-{self.n(1, 11):02d}-{self.n(1, 28):02d}T{h:02d}:{m:02d}:{s:02d}Z"

    def start_time(self) -> int:
        """A run's start as Unix seconds (a day in 2026), for clocks that move forward."""
        return 1_767_225_600 + self.n(0, 300) * 86_400 + self.n(0, 86_399)

    @staticmethod
    def iso(t: int) -> str:
        import datetime

        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def model(self) -> str:
        return self.pick(MODELS)

    def agent(self) -> str:
        return self.pick(AGENTS)

    def path(self) -> str:
        return f"{self.pick(DIRS)}/{self.pick(FILES)}"

    def paths(self, k: int) -> list[str]:
        stems = (
            "user",
            "order",
            "invoice",
            "billing",
            "auth",
            "session",
            "cart",
            "report",
            "export",
            "search",
            "profile",
            "settings",
            "payment",
            "refund",
            "audit",
            "mailer",
            "queue",
            "cache",
            "metrics",
            "upload",
            "avatar",
            "checkout",
            "catalog",
            "pricing",
            "tax",
        )
        exts = (".py", ".ts", ".go", ".tsx", ".rs", ".java")
        ext = self.pick(exts)
        d = self.pick(DIRS)
        return [f"{d}/{s}{ext}" for s in self.sample(stems, k)]

    def say(self, options: Sequence[str], p_silent: float = 0.25) -> str | None:
        """What the model writes beside its tool call (sometimes nothing, as many do)."""
        if self.maybe(p_silent):
            return None
        return self.pick(options)

    def shell_tool(self) -> tuple[str, str]:
        """(tool name, argument key) of a shell tool."""
        return self.pick(
            (
                ("run_shell_command", "command"),
                ("bash", "command"),
                ("execute_command", "command"),
                ("terminal", "cmd"),
                ("shell", "command"),
            )
        )

    def read_tool(self) -> tuple[str, str]:
        return self.pick(
            (("read_file", "path"), ("file_reader", "file_path"), ("view", "path"), ("cat", "file"))
        )

    def prelude(self, lo: int = 0, hi: int = 3) -> list[Turn]:
        """A few distinct, useful first steps, so a loop does not always start at step one."""
        shell, key = self.shell_tool()
        read, rkey = self.read_tool()
        pool = [
            Turn(
                self.say(("Let me look at the project layout first.", "First, the repository structure.")),
                [
                    ToolUse(
                        shell,
                        {key: "ls"},
                        "README.md\n" + "\n".join(self.sample(DIRS, 4)) + "\npyproject.toml",
                    )
                ],
            ),
            Turn(
                self.say(("I'll read the README.", "Reading the README for context.")),
                [
                    ToolUse(
                        read,
                        {rkey: "README.md"},
                        f"# {self.word(7)}\n\nA service that {self.word(5)}s "
                        f"{self.word(6)} records.\n\n## Setup\n\nmake install && make run\n",
                    )
                ],
            ),
            Turn(
                self.say(("Checking git status.",)),
                [ToolUse(shell, {key: "git status --short"}, f" M {self.path()}\n?? {self.path()}")],
            ),
            Turn(
                None,
                [
                    ToolUse(
                        shell,
                        {key: "git log --oneline -3"},
                        "\n".join(f"{self.hex(7)} {self.word(5)} {self.word(6)}" for _ in range(3)),
                    )
                ],
            ),
        ]
        return self.sample(pool, self.n(lo, min(hi, len(pool))))

    def give_up(self) -> tuple[str | None, str | None]:
        """How a looping run ends: (final text, failure) -- killed by a limit, or giving up."""
        return self.pick(
            (
                (None, "GraphRecursionError: Recursion limit of 25 reached without hitting a stop condition"),
                (None, "MaxTurnsExceeded: Max turns (20) exceeded"),
                (None, "AbortError: the request was aborted by the user"),
                ("I was not able to complete the task.", None),
                ("I could not find what I was looking for; please check the setup.", None),
                (None, None),
            )
        )
