// One agent run of the Vercel AI SDK with its own telemetry on, exported over OTLP/HTTP.
//
//     node record.mjs '<run as JSON>'
//
// The run (written by ../vercel_ai_sdk.py) names the scripted model's base URL, the OTLP
// receiver's endpoint, the tool server's URL, the goal, the tools (name, description, JSON
// schema) and the mode: "generate" (generateText) or "stream" (streamText). Each tool's
// execute posts its arguments to the tool server, which answers from the scenario; a tool
// failure is thrown, as a failing tool does. All addresses are on loopback.

import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const run = JSON.parse(process.argv[2]);

// No resource detectors: the host's and process's details (ports, command line) stay out.
const sdk = new NodeSDK({
  autoDetectResources: false,
  resource: resourceFromAttributes({ "service.name": run.service }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: run.otlpEndpoint }))],
});
sdk.start();

function remoteTool(spec) {
  return tool({
    description: spec.description,
    inputSchema: jsonSchema(spec.parameters),
    execute: async (args) => {
      const response = await fetch(`${run.toolUrl}/${spec.name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(args),
      });
      const answer = await response.json();
      if (answer.error !== undefined) {
        throw new Error(answer.error);
      }
      return answer.result;
    },
  });
}

const provider = createOpenAI({ baseURL: run.modelBaseUrl, apiKey: "test-key" });
const request = {
  model: provider.chat("gpt-4o-mini"),
  system: "You are an on-call assistant. Use the tools, then answer.",
  prompt: run.goal,
  tools: Object.fromEntries(run.tools.map((spec) => [spec.name, remoteTool(spec)])),
  stopWhen: stepCountIs(run.maxSteps),
  experimental_telemetry: { isEnabled: true, functionId: "oncall-agent" },
};

let failed = false;
try {
  if (run.mode === "stream") {
    const result = streamText({ ...request, onError: () => {} });
    await result.consumeStream();
    await result.text;
  } else {
    await generateText(request);
  }
} catch (error) {
  console.error(`run ended with ${error?.name ?? "error"}: ${String(error?.message ?? error).slice(0, 160)}`);
  failed = true;
}
await sdk.shutdown();
process.exitCode = failed ? 1 : 0;
