/**
 * What a model is given for an MCP tool result: its text, its structured content, or an
 * `{ error }` when the tool said it failed. Images and audio cannot reach a voice model's
 * context; they are named, not sent.
 * @module
 */

/** The parts of an MCP `CallToolResult` read here. */
export interface McpToolResult {
  /** Content blocks: `{type: "text", text}`, images, audio, resources. */
  content?: unknown;
  /** Structured result, when the tool declares an output schema. */
  structuredContent?: unknown;
  /** True when the tool failed (its content says why). */
  isError?: unknown;
}

/** The value the model reads as the tool's result. */
export function toolResultValue(result: McpToolResult): unknown {
  const blocks = Array.isArray(result.content) ? result.content as Record<string, unknown>[] : [];
  const texts = blocks.filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string);
  if (result.isError === true) return { error: texts.join("\n") || "the tool failed" };
  if (result.structuredContent !== undefined) return result.structuredContent;
  if (texts.length === blocks.length) return texts.join("\n");
  return blocks.map((b) =>
    b.type === "text" ? b.text : { type: b.type, note: "not readable by a voice model" }
  );
}
