/** The OpenTelemetry GenAI shapes of Flowcat's model requests (providers/obs/genai.ts). */
import assert from "node:assert/strict";
import { genAiProvider, inputMessages, outputMessage } from "../providers/obs/genai.ts";

Deno.test("genai: provider names follow the conventions' well-known values", () => {
  assert.equal(genAiProvider("openai"), "openai");
  assert.equal(genAiProvider("anthropic"), "anthropic");
  assert.equal(genAiProvider("gemini"), "gcp.gemini");
  assert.equal(genAiProvider("mistral"), "mistral_ai");
  assert.equal(genAiProvider("xai"), "x_ai");
  assert.equal(genAiProvider("ollama"), "ollama", "a local server keeps its own name");
});

Deno.test("genai: a context becomes system instructions and parts; tool calls and results keep ids", () => {
  const call = { toolCallId: "c1", functionName: "book", arguments: { seats: 2 } };
  const { system, input } = inputMessages([
    { role: "system", content: "Be brief." },
    { role: "user", content: "Two seats." },
    { role: "assistant", content: "", toolCalls: [call] },
    { role: "tool", toolCallId: "c1", content: '{"ok":true}' },
  ]);
  assert.deepEqual(system, [{ type: "text", content: "Be brief." }]);
  assert.deepEqual(input, [
    { role: "user", parts: [{ type: "text", content: "Two seats." }] },
    {
      role: "assistant",
      parts: [{ type: "tool_call", id: "c1", name: "book", arguments: { seats: 2 } }],
    },
    { role: "tool", parts: [{ type: "tool_call_response", id: "c1", response: '{"ok":true}' }] },
  ]);
  assert.deepEqual(outputMessage("Done.", [], "stop"), {
    role: "assistant",
    parts: [{ type: "text", content: "Done." }],
    finish_reason: "stop",
  });
});
