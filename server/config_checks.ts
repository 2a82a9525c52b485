/**
 * Config rules that span fields: graph or remote brain, the pipeline's providers, webhook
 * secrets of enabled carriers, the SIP RTP range, the order of the turn windows. They read the raw document defensively
 * (skipping parts of the wrong shape, which the schema reports), so one pass reports everything.
 * @module
 */

import type { Problem } from "../core/agent/problems.ts";
import { DEFAULT_TURN_WINDOWS } from "../core/turn_end.ts";
import { CARRIER_NAMES } from "../telephony/serializers/mod.ts";
import { PIPELINE_KINDS } from "./config_schema.ts";
import { suggestionHint } from "./config_suggest.ts";

type Rec = Record<string, unknown>;

function rec(v: unknown): Rec | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Rec : undefined;
}

/** A problem whose message ends with its hint in parentheses. */
export function configProblem(path: string, message: string, hint?: string): Problem {
  return { path, message: hint === undefined ? message : `${message} (${hint})`, code: "config" };
}

const CASCADE_KINDS = ["stt", "llm", "tts"] as const;

function agentProblems(doc: Rec): Problem[] {
  const agent = rec(doc.agent);
  if (agent === undefined) return []; // missing or wrong type: the schema says so
  const hasGraph = agent.graph !== undefined && agent.graph !== null;
  const hasRemote = agent.remote !== undefined && agent.remote !== null;
  const out: Problem[] = [];
  if (hasGraph && hasRemote) {
    out.push(configProblem(
      "agent",
      "has both graph and remote",
      "an agent is either a local graph (agent.graph) or a remote brain (agent.remote); keep one",
    ));
  } else if (!hasGraph && !hasRemote) {
    out.push(configProblem(
      "agent",
      "names no brain",
      "add agent.graph: <graph file> or agent.remote.url: <brain URL>",
    ));
  }
  if (hasRemote && !hasGraph && rec(agent.vars) && Object.keys(agent.vars as Rec).length > 0) {
    out.push(configProblem(
      "agent.vars",
      "seed variables apply to a local graph",
      "pass a remote brain its settings in agent.remote.brain_config",
    ));
  }
  return out;
}

// Each check below reads one section and pushes its own problem; they share a shape, not rules.
function pipelineProblems(doc: Rec): Problem[] {
  const pipeline = doc.pipeline ?? "s2s";
  if (!(PIPELINE_KINDS as readonly unknown[]).includes(pipeline)) return [];
  if (doc.providers !== undefined && rec(doc.providers) === undefined) return [];
  const providers = rec(doc.providers) ?? {};
  const has = (k: string) => providers[k] !== undefined && providers[k] !== null;
  const out: Problem[] = [];
  if (pipeline === "s2s") {
    const cascade = CASCADE_KINDS.filter(has);
    if (!has("realtime")) {
      const hint = cascade.length > 0
        ? "set pipeline: cascaded to use stt/llm/tts, or add providers.realtime.name"
        : "add providers.realtime.name: echo (local), gemini, openai, xai, ultravox, nova-sonic, azure or openai-compatible";
      out.push(configProblem("providers.realtime", "pipeline s2s needs a realtime provider", hint));
    }
    for (const k of cascade) {
      out.push(configProblem(
        `providers.${k}`,
        "is not used by pipeline s2s",
        "remove it, or set pipeline: cascaded",
      ));
    }
  } else {
    for (const k of CASCADE_KINDS) {
      if (has(k)) continue;
      out.push(configProblem(
        `providers.${k}`,
        "pipeline cascaded needs stt, llm and tts providers",
        `add providers.${k}.name`,
      ));
    }
    if (has("realtime")) {
      out.push(configProblem(
        "providers.realtime",
        "is not used by pipeline cascaded",
        "remove it, or set pipeline: s2s",
      ));
    }
  }
  return out;
}

function telephonyProblems(doc: Rec): Problem[] {
  const tel = rec(doc.telephony);
  if (tel === undefined) return [];
  const out: Problem[] = [];
  const carriers = Array.isArray(tel.carriers) ? tel.carriers : [];
  const seen = new Set<unknown>();
  carriers.forEach((c, i) => {
    if (seen.has(c)) {
      out.push(configProblem(`telephony.carriers[${i}]`, `carrier "${String(c)}" is listed twice`));
    }
    seen.add(c);
  });
  for (const key of Object.keys(rec(tel.webhook_secrets_env) ?? {})) {
    const path = `telephony.webhook_secrets_env.${key}`;
    if (!(CARRIER_NAMES as readonly string[]).includes(key)) {
      const hint = suggestionHint(key, CARRIER_NAMES);
      out.push(configProblem(path, `unknown carrier "${key.slice(0, 40)}"`, hint));
    } else if (!seen.has(key)) {
      out.push(
        configProblem(path, `carrier "${key}" is not enabled`, "add it to telephony.carriers"),
      );
    }
  }
  const sip = rec(tel.sip);
  if (sip !== undefined) {
    // Registering needs credentials; a trunk by IP (register: false) may have none.
    if (sip.register !== false) {
      if (sip.login === undefined) {
        out.push(configProblem(
          "telephony.sip.login",
          "is missing",
          "the SIP auth username of the trunk; or set register: false for a trunk by IP",
        ));
      }
      if (sip.password_env === undefined) {
        out.push(configProblem(
          "telephony.sip.password_env",
          "is missing",
          "the name of the environment variable holding the trunk password, e.g. SIP_PASSWORD",
        ));
      }
    }
    const base = typeof sip.rtp_port_base === "number" ? sip.rtp_port_base : 16000;
    const tries = typeof sip.rtp_port_tries === "number" ? sip.rtp_port_tries : 200;
    const last = base + 2 * (tries - 1) + 1; // the RTCP port above the last RTP port
    if (Number.isInteger(base) && Number.isInteger(tries) && tries >= 1 && last > 65535) {
      out.push(configProblem(
        "telephony.sip.rtp_port_tries",
        `RTP ports ${base} + 2 x ${tries} run past 65535`,
        `use at most ${Math.floor((65535 - 1 - base) / 2) + 1} tries from ${base}`,
      ));
    }
    const sipPort = typeof sip.sip_port === "number" ? sip.sip_port : 5060;
    if (sipPort >= base && sipPort <= last) {
      out.push(configProblem(
        "telephony.sip.sip_port",
        `port ${sipPort} is inside the RTP range ${base}-${last}`,
        "move sip_port or rtp_port_base",
      ));
    }
  }
  return out;
}

function turnsProblems(doc: Rec): Problem[] {
  const turns = rec(doc.turns);
  if (turns === undefined) return [];
  const ms = (key: string, fallback: number) => {
    const v = turns[key];
    return typeof v === "number" ? v : fallback;
  };
  const d = DEFAULT_TURN_WINDOWS;
  const complete = ms("complete_ms", d.completeMs);
  const unsure = ms("unsure_ms", d.unsureMs);
  const incomplete = ms("incomplete_ms", d.incompleteMs);
  if (complete <= unsure && unsure <= incomplete) return [];
  return [configProblem(
    "turns",
    `windows must grow: complete_ms ${complete} <= unsure_ms ${unsure} <= incomplete_ms ${incomplete}`,
    "a turn that reads finished never waits longer than one that does not",
  )];
}

/** Every cross-field problem of a raw config document (a parsed YAML/JSON mapping). */
export function crossFieldProblems(doc: Rec): Problem[] {
  return [
    ...agentProblems(doc),
    ...pipelineProblems(doc),
    ...telephonyProblems(doc),
    ...turnsProblems(doc),
  ];
}
