/**
 * Call-control tools a model can call: `send_dtmf` (press keys on the far end's phone menu)
 * and `transfer_call` (hand the caller to a person). A brain offers them like any workflow tool
 * (a graph's `workflow_tools`, or in its `tools()`), answering `stay` without a result; the
 * BrainProcessor then does the call control itself: an OutputDtmf frame, or a TransferCall
 * frame whose TransferResult decides whether the call ends (`transferred`) or goes on.
 *
 * @example
 * ```ts
 * import { SEND_DTMF_TOOL, TRANSFER_CALL_TOOL } from "@flowcat/flowcat";
 * const tools = [SEND_DTMF_TOOL, TRANSFER_CALL_TOOL]; // offer both to the model
 * ```
 * @module
 */

import { parseDtmfKeys } from "./audio/dtmf_keys.ts";
import { errorMessage } from "./errors.ts";
import type { KeypadEntry, ToolDecl, TransferMode } from "./frames.ts";

/** Name of the key-press tool. */
export const SEND_DTMF = "send_dtmf";
/** Name of the transfer tool. */
export const TRANSFER_CALL = "transfer_call";
/** The disposition (and end reason) of a call handed over by {@link TRANSFER_CALL}. */
export const TRANSFERRED = "transferred";
/**
 * The moves an answering-machine decision makes: the BrainProcessor calls the brain's tool of
 * this name (a graph transition) when the current node offers it, as if the model had.
 */
export const AMD_MOVES: Readonly<Record<"human" | "machine", string>> = Object.freeze({
  human: "answered_by_human",
  machine: "answered_by_machine",
});
/** Most keys one `send_dtmf` call may press (a phone menu path, an account number). */
export const MAX_DTMF_KEYS = 32;

/** The `send_dtmf` tool declaration. */
export const SEND_DTMF_TOOL: ToolDecl = Object.freeze({
  name: SEND_DTMF,
  description: "Press keys on the phone keypad (to navigate a phone menu or enter a number).",
  params: {
    type: "object",
    properties: {
      keys: { type: "string", description: "Keys to press in order: digits, * and #." },
    },
    required: ["keys"],
  },
});

/** The `transfer_call` tool declaration. */
export const TRANSFER_CALL_TOOL: ToolDecl = Object.freeze({
  name: TRANSFER_CALL,
  description: "Transfer the caller to a person or another number; the call with you then ends.",
  params: {
    type: "object",
    properties: {
      target: { type: "string", description: "Where to transfer: a SIP URI or phone number." },
      mode: {
        type: "string",
        enum: ["cold", "warm"],
        description: "cold (default): hand over at once; warm: brief the person first.",
      },
      briefing: {
        type: "string",
        description: "Warm transfer: what to tell the person before connecting the caller.",
      },
    },
    required: ["target"],
  },
});

/** The keys of a `send_dtmf` call, or the error to tell the model. */
export function dtmfToolKeys(
  args: Record<string, unknown>,
): { keys: KeypadEntry[] } | { error: string } {
  const raw = args?.keys;
  if (typeof raw !== "string" || raw.trim() === "") {
    return { error: "keys must be a non-empty string of digits, * and #" };
  }
  let keys: KeypadEntry[];
  try {
    keys = parseDtmfKeys(raw.replace(/[\s,-]/g, ""));
  } catch (err) {
    return { error: errorMessage(err) };
  }
  if (keys.length > MAX_DTMF_KEYS) {
    return { error: `at most ${MAX_DTMF_KEYS} keys per call` };
  }
  return { keys };
}

/**
 * The target of a `transfer_call` call, or the error to tell the model. When the tool's
 * declaration (`decl`, as the brain offers it) gives its `target` an `enum`, only those targets
 * are allowed: a caller must not talk the model into dialling anywhere else. Its `default` is
 * used when the model names none.
 */
export function transferToolTarget(
  args: Record<string, unknown>,
  decl?: ToolDecl,
): { target: string } | { error: string } {
  const spec = paramSpec(decl, "target");
  let raw = args?.target;
  if ((raw === undefined || raw === null || raw === "") && typeof spec.default === "string") {
    raw = spec.default;
  }
  if (typeof raw !== "string" || raw.trim() === "") {
    return { error: "target must be a SIP URI or phone number" };
  }
  const target = raw.trim();
  // A header-injection guard: the target goes into a SIP header or a carrier API field.
  if (/[\r\n<>"]/.test(target) || target.length > 256) {
    return { error: "target has characters a SIP URI or phone number cannot have" };
  }
  if (spec.allowed !== undefined && !spec.allowed.includes(target)) {
    return { error: `target must be one of: ${spec.allowed.join(", ")}` };
  }
  return { target };
}

/** Longest briefing a warm transfer speaks, in characters. */
export const MAX_BRIEFING_CHARS = 1000;

/**
 * The mode and briefing of a `transfer_call` call (cold unless `mode` is `warm`; a briefing
 * only with warm), or the error to tell the model. The declaration's `mode` `default` applies
 * when the model names none, and its `enum` limits the modes, as for the target.
 */
export function transferToolMode(
  args: Record<string, unknown>,
  decl?: ToolDecl,
): { mode: TransferMode; briefing?: string } | { error: string } {
  const spec = paramSpec(decl, "mode");
  let mode = args?.mode;
  if (mode === undefined || mode === null || mode === "") mode = spec.default ?? "cold";
  if (mode !== "cold" && mode !== "warm") return { error: 'mode must be "cold" or "warm"' };
  if (spec.allowed !== undefined && !spec.allowed.includes(mode)) {
    return { error: `mode must be one of: ${spec.allowed.join(", ")}` };
  }
  const raw = args?.briefing;
  if (raw === undefined || raw === null || raw === "") return { mode };
  if (typeof raw !== "string") return { error: "briefing must be text" };
  if (mode === "cold") return { error: 'a briefing needs mode "warm"' };
  if (raw.length > MAX_BRIEFING_CHARS) {
    return { error: `briefing must be at most ${MAX_BRIEFING_CHARS} characters` };
  }
  return raw.trim() === "" ? { mode } : { mode, briefing: raw.trim() };
}

/** The `enum` and `default` of parameter `name` of a transfer tool declaration. */
function paramSpec(
  decl: ToolDecl | undefined,
  name: string,
): { allowed?: string[]; default?: unknown } {
  const props = decl?.params?.properties;
  const param = typeof props === "object" && props !== null
    ? (props as Record<string, unknown>)[name]
    : undefined;
  if (typeof param !== "object" || param === null) return {};
  const t = param as { enum?: unknown; default?: unknown };
  const allowed = Array.isArray(t.enum)
    ? t.enum.filter((v): v is string => typeof v === "string")
    : undefined;
  return { ...(allowed !== undefined ? { allowed } : {}), default: t.default };
}
