/**
 * Providers a config names that Flowcat knows but does not speak yet. Checked before any key is
 * read: asking for the key of a provider that cannot run anyway sends the operator the wrong
 * way.
 * @module
 */

import type { Problem } from "../core/agent/problems.ts";
import { FlowcatError } from "../core/errors.ts";
import { type ServiceKind, serviceProviders } from "../providers/service_registry.ts";
import type { AgentServerConfig } from "./config_types.ts";

const KINDS: readonly ServiceKind[] = ["stt", "llm", "tts"];

/** One problem per cascaded provider the config names that is declared but not wired. */
export function unwiredProblems(config: AgentServerConfig): Problem[] {
  const out: Problem[] = [];
  for (const kind of KINDS) {
    const name = config.providers[kind]?.name;
    if (name === undefined) continue;
    const table = serviceProviders(kind);
    if (table[name]?.wired !== false) continue;
    const wired = Object.values(table).filter((i) => i.wired).map((i) => i.name);
    out.push({
      path: `providers.${kind}.name`,
      message: `${name}: not yet wired (wired ${kind} providers: ${wired.join(", ")})`,
      code: "not_wired",
    });
  }
  return out;
}

/** Throw `FlowcatError("<provider>: not yet wired")` for the first unwired provider named. */
export function assertProvidersWired(config: AgentServerConfig): void {
  for (const kind of KINDS) {
    const name = config.providers[kind]?.name;
    if (name !== undefined && serviceProviders(kind)[name]?.wired === false) {
      throw FlowcatError.notWired(name);
    }
  }
}
