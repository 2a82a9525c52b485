/**
 * Conversation brains: the graph spec (schema, validation, `{{var}}` interpolation), the
 * in-process {@link GraphBrain}, the HTTP {@link RemoteBrain}, and the remote-brain wire schemas.
 *
 * Permissions: none; a graph parsed from YAML needs `--ignore-env=LOG_TOKENS,LOG_STREAM` (npm
 * `yaml` reads them), and a {@link RemoteBrain} `--allow-net` to its brain's host.
 *
 * @example
 * ```ts
 * import { GraphBrain, parseGraphSpec } from "@flowcat/flowcat/agent";
 * const res = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
 * if (res.ok) console.log(new GraphBrain(res.spec).systemPrompt());
 * ```
 * @module
 */

export {
  formatValue,
  interpolate,
  type Placeholder,
  templatePlaceholders,
  VARIABLE_NAME_RE,
} from "./interpolate.ts";
export {
  formatPath,
  formatProblems,
  type Problem,
  type SchemaError,
  type Validator,
  zodProblems,
} from "./problems.ts";
export {
  END_CALL_TOOL,
  type GraphCollect,
  type GraphNode,
  type GraphSpec,
  type GraphSpecFormat,
  type GraphSpecInput,
  type GraphSpecResult,
  graphSpecSchema,
  type GraphTransition,
  type GraphWorkflowTool,
  NODE_ID_RE,
  parseGraphSpec,
  TOOL_NAME_RE,
  validateGraphSpec,
} from "./graph_spec.ts";
export {
  END_CALL_DECL,
  type EndAction,
  GraphBrain,
  type GraphBrainAction,
  type GraphBrainOptions,
} from "./graph_brain.ts";
export {
  BRAIN_UNAVAILABLE,
  DEFAULT_BRAIN_TIMEOUT_MS,
  type FetchLike,
  MAX_BRAIN_REPLY_BYTES,
  RemoteBrain,
  type RemoteBrainOptions,
} from "./remote_brain.ts";
export {
  actionFromWire,
  actionToWire,
  type SessionRequest,
  sessionRequestSchema,
  type SessionResponse,
  sessionResponseSchema,
  type ToolCallRequest,
  toolCallRequestSchema,
  type ToolCallResponse,
  toolCallResponseSchema,
  toolsFromWire,
  type WireAction,
  wireToolSchema,
} from "./brain_wire.ts";
export { type ExtraTools, withExtraTools } from "./extra_tools.ts";
