/**
 * Gemini on Vertex AI, streaming:
 * `POST {base}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse`
 * with `Authorization: Bearer <OAuth token>` from a service-account key (auth.ts).
 *
 * The request and the SSE stream are the Gemini API's generateContent wire
 * (cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.publishers.models/streamGenerateContent):
 * the same `contents`/`tools`/`generationConfig` body and the same GenerateContentResponse
 * chunks, so the Gemini client does the mapping and parsing and this module gives it the URL
 * and the credential.
 *
 * The location defaults to `global` (host `aiplatform.googleapis.com`); a `url` of
 * `https://<region>-aiplatform.googleapis.com` picks that region (`options.location` may name it
 * outright, but the global host serves only `global`). The project is `options.project`, else
 * the key's `project_id`.
 *
 * @example
 * ```ts
 * import { createVertexLlm } from "@flowcat/flowcat/llm/vertex";
 * const keyJson = await Deno.readTextFile("/etc/flowcat/sa.json");
 * const llm = createVertexLlm({ provider: "vertex", apiKey: keyJson });
 * for await (const f of llm.runLlm({ messages: [{ role: "user", content: "Hi" }], tools: [] })) {
 *   if (f.kind === "LlmText") console.log(f.text);
 * }
 * ```
 *
 * Permissions: `--allow-net=aiplatform.googleapis.com:443,oauth2.googleapis.com:443` (or the
 * `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { LlmService } from "../../core/seams.ts";
import { GeminiLlm } from "./gemini_llm.ts";
import type { ServiceOptions } from "../service_options.ts";
import { googleCredential } from "./auth.ts";
import { VERTEX_DEFAULT_BASE_URL, VERTEX_DEFAULT_MODEL } from "./defaults.ts";
export { VERTEX_DEFAULT_BASE_URL, VERTEX_DEFAULT_MODEL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The location of `base`: `europe-west4` for `https://europe-west4-aiplatform...`, else global. */
export function vertexLocation(base: string): string {
  const m = /^([a-z]+-[a-z]+\d+)-aiplatform\./.exec(new URL(base).hostname);
  return m ? m[1] : "global";
}

/** The streamGenerateContent URL of a project, location and model under `base`. */
export function vertexUrl(base: string, project: string, location: string, model: string): string {
  const path = `/v1/projects/${encodeURIComponent(project)}/locations/${
    encodeURIComponent(location)
  }/publishers/google/models/${encodeURIComponent(model)}:streamGenerateContent`;
  return `${base.replace(/\/+$/, "")}${path}?alt=sse`;
}

/** Make a Vertex AI Gemini client: `apiKey` is the service-account key file's JSON text. */
export function createVertexLlm(opts: ServiceOptions): LlmService {
  const p = opts.provider;
  const credential = googleCredential(opts);
  const account = credential.account;
  const o = opts.options ?? {};
  const project = typeof o.project === "string" && o.project ? o.project : account.projectId;
  if (!project) {
    throw new FlowcatError("config", `${p}: no project (set options.project; the key names none)`);
  }
  const base = opts.baseUrl || VERTEX_DEFAULT_BASE_URL;
  const location = typeof o.location === "string" && o.location ? o.location : vertexLocation(base);
  // The global host serves only the global location; a region has its own host, which the
  // permissions grant only when the config names it.
  if (location !== "global" && new URL(base).hostname === "aiplatform.googleapis.com") {
    throw new FlowcatError(
      "config",
      `${p}: location ${location} is served at https://${location}-aiplatform.googleapis.com (set url)`,
    );
  }
  const model = (opts.model || VERTEX_DEFAULT_MODEL).replace(
    /^(models|publishers\/google\/models)\//,
    "",
  );
  const url = vertexUrl(base, project, location, model);
  const { apiKey: _key, ...rest } = opts;
  return new GeminiLlm({ ...rest, model }, {
    url,
    headers: credential.headers,
    refused: credential.refused,
  });
}
