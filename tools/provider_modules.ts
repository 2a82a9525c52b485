/**
 * Which provider family modules (and the MCP client, for `tools.mcp`) a config needs, read from the registries' own lazy loaders (each
 * loader is a literal `import("./<family>.ts")`, so its source names the module). `deno task
 * compile` leaves the other families out of the binary; the registries stay the one place that
 * says which module serves which provider.
 * @module
 */

import { REALTIME_PROVIDERS } from "../providers/registry.ts";
import { serviceProviders } from "../providers/service_registry.ts";
import type { AgentServerConfig } from "../server/config_types.ts";
import { ESPEAK_WASM, implementationReads } from "../server/main.ts";

/** Directory the registries' relative imports resolve against (project-relative). */
const REGISTRY_DIR = "providers";

/** The module `server/app.ts` imports for `tools.mcp` (project-relative). */
export const MCP_MODULE = "server/mcp/toolbox.ts";

/** A provider's loader and where it is registered. */
interface LoaderRow {
  kind: "realtime" | "stt" | "llm" | "tts";
  name: string;
  load: () => unknown;
}

function loaderRows(): LoaderRow[] {
  const rows: LoaderRow[] = [];
  for (const [name, info] of Object.entries(REALTIME_PROVIDERS)) {
    rows.push({ kind: "realtime", name, load: info.load });
  }
  for (const kind of ["stt", "llm", "tts"] as const) {
    for (const [name, info] of Object.entries(serviceProviders(kind))) {
      rows.push({ kind, name, load: info.load });
    }
  }
  return rows;
}

/** The project-relative module a loader imports, or undefined (a "not wired" provider). */
export function loaderModule(load: () => unknown): string | undefined {
  const m = /import\(\s*["'](\.\/[^"']+)["']\s*\)/.exec(load.toString());
  return m === null ? undefined : `${REGISTRY_DIR}/${m[1].slice(2)}`;
}

/** Provider family modules a config uses and those it leaves out (sorted, project-relative). */
export interface ProviderModules {
  needed: string[];
  leftOut: string[];
}

/** Split every provider family module into those `config` loads and the rest. */
export function providerModules(config: AgentServerConfig): ProviderModules {
  const needed = new Set<string>();
  const all = new Set<string>();
  for (const row of loaderRows()) {
    const module = loaderModule(row.load);
    if (module === undefined) continue;
    all.add(module);
    if (config.providers[row.kind]?.name === row.name) needed.add(module);
  }
  // The echo agent speaks through the eSpeak module without naming it as a provider; the wasm
  // it reads is the sign (the same rule `--print-permissions` uses).
  const espeak = loaderModule(serviceProviders("tts").espeak.load);
  if (espeak !== undefined && implementationReads(config).includes(ESPEAK_WASM)) {
    needed.add(espeak);
  }
  // The MCP client (and the SDK under it) is imported only for `tools.mcp`, like a provider.
  all.add(MCP_MODULE);
  if (config.tools.mcp.length > 0) needed.add(MCP_MODULE);
  return {
    needed: [...needed].sort(),
    leftOut: [...all].filter((m) => !needed.has(m)).sort(),
  };
}
