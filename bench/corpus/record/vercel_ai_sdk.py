"""Record the Vercel AI SDK's own telemetry (``ai.generateText`` / ``ai.streamText``,
``ai.toolCall``) from the real npm packages.

    (cd bench/corpus/record/vercel_ai_sdk && npm ci)
    python bench/corpus/record/vercel_ai_sdk.py [--stream] [--sdk 6|4]

For each scenario, ``node vercel_ai_sdk/record.mjs`` runs one ``generateText`` (``--stream``:
``streamText``) with ``experimental_telemetry`` on, ``@ai-sdk/openai``'s chat model pointed
at the fake model on loopback, and ``@opentelemetry/sdk-node`` exporting with the real
OTLP/HTTP protobuf exporter to the JSON lines receiver. The tools are the harness's: their
``execute`` posts the arguments to a tool server here, which answers from the scenario's
world (a failure comes back as an error the tool throws; with the SDK 4, whose run ends
on a thrown error, as the tool's answer). ``--sdk 4`` runs the SDK's major version 4 (the
package's ``ai-v4`` alias), whose telemetry names a call's arguments ``args`` and its
token counts ``promptTokens`` / ``completionTokens``. Writes ``vercel-ai-sdk`` (``-v4``
with ``--sdk 4``, then ``-stream`` with ``--stream``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, get_type_hints

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.corpus.record.harness import (
    SCENARIOS,
    FakeModel,
    OtlpJsonLinesReceiver,
    Recorder,
    ToolFailure,
    Tools,
    out_dir,
)
from tests.e2e.http_thread import ServerThread, reply

PACKAGE = Path(__file__).resolve().parent / "vercel_ai_sdk"
#: More steps than any scenario's script has turns: the script, not the SDK, ends each run.
MAX_STEPS = 20
_JSON_TYPES = {str: "string", int: "integer"}


def tool_specs(functions: list[Callable[..., str]]) -> list[dict[str, Any]]:
    """Each tool's name, description and JSON schema, from its Python signature."""
    specs = []
    for function in functions:
        hints = get_type_hints(function)
        names = inspect.signature(function).parameters
        properties = {name: {"type": _JSON_TYPES[hints[name]]} for name in names}
        specs.append(
            {
                "name": function.__name__,
                "description": inspect.getdoc(function) or "",
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                },
            }
        )
    return specs


def tool_server(tools: Tools) -> ServerThread:
    """``POST /<tool>`` with the JSON arguments: ``{"result": ...}`` or ``{"error": ...}``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            name = self.path.rstrip("/").rsplit("/", 1)[-1]
            try:
                answer = {"result": tools.world(name, **json.loads(raw or b"{}"))}
            except ToolFailure as exc:
                answer = {"error": str(exc)}
            reply(self, 200, json.dumps(answer).encode(), "application/json")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ServerThread("127.0.0.1", Handler)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", action="store_true", help="streamText instead of generateText")
    parser.add_argument("--sdk", type=int, choices=(6, 4), default=6, help="the AI SDK's major version")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None or not (PACKAGE / "node_modules").is_dir():
        print(f"needs node and the packages: (cd {PACKAGE} && npm ci)", file=sys.stderr)
        return 2

    framework = "vercel-ai-sdk" + ("-v4" if args.sdk == 4 else "") + ("-stream" if args.stream else "")
    tools = Tools()
    specs = tool_specs(tools.functions())
    server = tool_server(tools)
    server.start()
    try:
        with (
            OtlpJsonLinesReceiver() as receiver,
            FakeModel(next(iter(SCENARIOS.values())).script()) as model,
        ):
            recorder = Recorder(framework, "vercel-ai-sdk", out_dir(framework), receiver)
            for scenario in SCENARIOS.values():
                model.script = scenario.script()
                tools.world = scenario.world()
                run = {
                    "service": framework,
                    "modelBaseUrl": model.base_url,
                    "otlpEndpoint": receiver.endpoint,
                    "toolUrl": f"http://127.0.0.1:{server.port}/tools",
                    "goal": scenario.goal,
                    "tools": specs,
                    "mode": "stream" if args.stream else "generate",
                    "sdk": args.sdk,
                    "maxSteps": MAX_STEPS,
                }

                def node_run(run: dict[str, Any] = run) -> None:
                    done = subprocess.run(
                        [node, "record.mjs", json.dumps(run)],
                        cwd=PACKAGE,
                        capture_output=True,
                        text=True,
                        timeout=120,
                        env=os.environ | {"OTEL_LOGS_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
                    )
                    if done.returncode != 0:
                        raise RuntimeError(done.stderr.strip()[-300:])

                # node exports and shuts its SDK down before it exits: nothing left to flush.
                recorder.record(scenario, node_run, lambda: None)
            recorder.write()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
