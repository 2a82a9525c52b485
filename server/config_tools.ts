/**
 * `tools`: tools offered to the model beside the brain's own. Today that is `tools.mcp`, the
 * MCP servers whose tools every call may use: a program the server starts and speaks to over
 * stdio, or a streamable-HTTP URL. Reference: docs/config.md (`tools`), docs/tools.md.
 * @module
 */

import { z } from "npm:zod@^4.6.7";
import { shown } from "./config_suggest.ts";

/** Default per-call timeout of an MCP tool, ms. */
export const DEFAULT_MCP_TIMEOUT_MS = 10_000;

/** Pattern of an MCP server's name in the config (it names the server in logs and errors). */
export const MCP_NAME_RE: RegExp = /^[A-Za-z0-9_-]{1,32}$/;

/** One `tools.mcp` entry as written (after defaults). */
export interface McpServerDocument {
  /** Short name for logs and errors, unique in the list. */
  name: string;
  /** stdio: the program to start (a PATH name or a path). */
  command?: string;
  /** stdio: its arguments. */
  args: string[];
  /** stdio: names of the server's environment variables passed on to the program. */
  env: string[];
  /** Streamable HTTP: the MCP endpoint URL. */
  url?: string;
  /** Streamable HTTP: the variable holding a bearer token sent as `Authorization`. */
  bearer_env?: string;
  /** Longest a tool call may take, ms, before the model is told it timed out. */
  timeout_ms: number;
}

/** `tools` as written (after defaults). */
export interface ToolsDocument {
  /** MCP servers whose tools are offered to the model. */
  mcp: McpServerDocument[];
}

/** An MCP server started by Flowcat, spoken to over its stdin and stdout. */
export interface McpStdioServer {
  /** Name from the config. */
  name: string;
  /** Always `stdio`. */
  transport: "stdio";
  /** Program to start. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Variables passed on from the server's environment (the program gets no others). */
  env: string[];
  /** Per-call timeout, ms. */
  timeoutMs: number;
}

/** An MCP server reached over streamable HTTP. */
export interface McpHttpServer {
  /** Name from the config. */
  name: string;
  /** Always `http`. */
  transport: "http";
  /** MCP endpoint URL. */
  url: string;
  /** Variable holding the bearer token, when the server wants one. */
  bearerEnv?: string;
  /** Per-call timeout, ms. */
  timeoutMs: number;
}

/** One MCP server of `tools.mcp`. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/** `tools` of the server config. */
export interface ToolsConfig {
  /** MCP servers whose tools are offered to the model; empty: none (the SDK is not loaded). */
  mcp: McpServerConfig[];
}

const HTTP_URL_HINT = "an http or https URL, e.g. http://127.0.0.1:8931/mcp";

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** The `tools` schema; `envName` is the config's schema of an environment variable name. */
export function toolsSchema(envName: z.ZodString) {
  const server = z.strictObject({
    name: z.string().regex(MCP_NAME_RE, "must be 1-32 letters, digits, _ or -"),
    command: z.string().min(1, "must not be empty").optional(),
    args: z.array(z.string()).default([]),
    env: z.array(envName).default([]),
    url: z.string().refine(isHttpUrl, `must be ${HTTP_URL_HINT}`).optional(),
    bearer_env: envName.optional(),
    timeout_ms: z.int().min(100).max(600_000).default(DEFAULT_MCP_TIMEOUT_MS),
  }).superRefine((s, ctx) => {
    const say = (path: string, message: string) =>
      ctx.addIssue({ code: "custom", path: [path], message });
    if (s.command === undefined && s.url === undefined) {
      say(
        "command",
        `names no server (add command: <program> for stdio, or url: ${HTTP_URL_HINT})`,
      );
    } else if (s.command !== undefined && s.url !== undefined) {
      say(
        "url",
        "has both command and url (an MCP server is either started over stdio or reached over HTTP; keep one)",
      );
    }
    if (s.url !== undefined && (s.args.length > 0 || s.env.length > 0)) {
      say(s.args.length > 0 ? "args" : "env", "applies to a stdio server (command), not to url");
    }
    if (s.command !== undefined && s.bearer_env !== undefined) {
      say(
        "bearer_env",
        "applies to an HTTP server (url); pass a stdio server its secrets with env",
      );
    }
  });
  return z.strictObject({
    mcp: z.array(server).default([]).superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((s, i) => {
        if (seen.has(s.name)) {
          ctx.addIssue({
            code: "custom",
            path: [i, "name"],
            message: `MCP server ${shown(s.name)} is listed twice`,
          });
        }
        seen.add(s.name);
      });
    }),
  });
}

/** The keys allowed in `tools` and in a `tools.mcp` entry, for "did you mean". */
export const TOOLS_KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  tools: ["mcp"],
  "tools.mcp": ["name", "command", "args", "env", "url", "bearer_env", "timeout_ms"],
});

const TOKEN_HINT = "put the token in an environment variable and name it: bearer_env: MCP_TOKEN";
/** Inline-secret keys refused in a `tools.mcp` entry, with the hint that replaces them. */
export const TOOLS_INLINE_SECRET_HINTS: Readonly<Record<string, Readonly<Record<string, string>>>> =
  Object.freeze({
    "tools.mcp": { token: TOKEN_HINT, bearer: TOKEN_HINT, headers: TOKEN_HINT },
  });

/** `tools` of the document as the server config holds it. */
export function toolsConfig(doc: ToolsDocument): ToolsConfig {
  return {
    mcp: doc.mcp.map((s): McpServerConfig =>
      s.url !== undefined
        ? {
          name: s.name,
          transport: "http",
          url: s.url,
          timeoutMs: s.timeout_ms,
          ...(s.bearer_env !== undefined ? { bearerEnv: s.bearer_env } : {}),
        }
        : {
          name: s.name,
          transport: "stdio",
          command: s.command ?? "",
          args: [...s.args],
          env: [...s.env],
          timeoutMs: s.timeout_ms,
        }
    ),
  };
}
