/**
 * xAI Grok voice (the Grok Voice Agent API): OpenAI Realtime's event names over a WebSocket at
 * `wss://api.x.ai/v1/realtime`, with xAI's own session shape (the `xai` dialect of the OpenAI
 * Realtime client). Bearer auth with `XAI_API_KEY`; 24 kHz PCM16 both ways; server VAD cuts
 * the answer on barge-in itself. See docs/providers/xai.md.
 *
 * Permissions: `--allow-net=api.x.ai:443`.
 *
 * @example
 * ```ts
 * import { createXaiRealtime } from "@flowcat/flowcat/realtime/xai";
 * declare const key: string;
 * const llm = createXaiRealtime({ apiKey: key, voice: "ara" });
 * await llm.connect({ systemPrompt: "Be brief.", tools: [] });
 * ```
 * @module
 */

import type { RealtimeFactory } from "../provider_types.ts";
import type { OpenAIStyleSpec } from "../openai/realtime_config.ts";
import { openAIStyleRealtime } from "../openai/realtime_style.ts";

/** xAI's endpoint and defaults: the newest voice model and xAI's default voice. */
export const XAI_REALTIME_SPEC: Readonly<OpenAIStyleSpec> = Object.freeze({
  name: "xai",
  baseUrl: "wss://api.x.ai/v1/realtime",
  defaultModel: "grok-voice-latest",
  defaultVoice: "eve",
  protocol: "xai",
});

/** Factory for the registry: a Grok voice session. */
export const createXaiRealtime: RealtimeFactory = openAIStyleRealtime(XAI_REALTIME_SPEC);
