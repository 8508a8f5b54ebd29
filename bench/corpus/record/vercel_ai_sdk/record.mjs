// One agent run of the Vercel AI SDK with its own telemetry on, exported over OTLP/HTTP.
//
//     node record.mjs '<run as JSON>'
//
// The run (written by ../vercel_ai_sdk.py) names the scripted model's base URL, the OTLP
// receiver's endpoint, the tool server's URL, the goal, the tools (name, description, JSON
// schema), the mode: "generate" (generateText) or "stream" (streamText), and the SDK's
// major version: 6 ("ai", "@ai-sdk/openai") or 4 (their aliases "ai-v4",
// "@ai-sdk/openai-v1"). Each tool's execute posts its arguments to the tool server, which
// answers from the scenario. A tool failure is thrown, as a failing tool does; in the SDK 4
// a thrown error ends the whole run, so there the failure is the tool's answer instead, as
// applications on it return it. All addresses are on loopback.

import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

const run = JSON.parse(process.argv[2]);
const sdk4 = run.sdk === 4;
const { generateText, jsonSchema, stepCountIs, streamText, tool } = await import(sdk4 ? "ai-v4" : "ai");
const { createOpenAI } = await import(sdk4 ? "@ai-sdk/openai-v1" : "@ai-sdk/openai");

// No resource detectors: the host's and process's details (ports, command line) stay out.
const telemetry = new NodeSDK({
  autoDetectResources: false,
  resource: resourceFromAttributes({ "service.name": run.service }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: run.otlpEndpoint }))],
});
telemetry.start();

function remoteTool(spec) {
  return tool({
    description: spec.description,
    [sdk4 ? "parameters" : "inputSchema"]: jsonSchema(spec.parameters),
    execute: async (args) => {
      const response = await fetch(`${run.toolUrl}/${spec.name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(args),
      });
      const answer = await response.json();
      if (answer.error !== undefined) {
        if (sdk4) {
          return answer.error;
        }
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
  ...(sdk4 ? { maxSteps: run.maxSteps } : { stopWhen: stepCountIs(run.maxSteps) }),
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
await telemetry.shutdown();
process.exitCode = failed ? 1 : 0;
