/**
 * Amazon Nova Sonic (speech to speech) on Bedrock `InvokeModelWithBidirectionalStream`.
 *
 * A session is one signed HTTP/2 request (nova_sonic_stream.ts) that opens with `sessionStart`,
 * `promptStart` (24 kHz LPCM voice output, the tools), the system prompt as a SYSTEM text
 * block, the conversation so far as USER / ASSISTANT text blocks, and one USER audio block that
 * stays open: the caller's 16 kHz audio goes out as `audioInput` events. The model's events
 * become {@link RealtimeEvent}s (nova_sonic_events.ts). Tool results go back as TOOL blocks.
 *
 * A session cannot change its prompt or tools, so {@link NovaSonicRealtime.updateSystem} opens
 * a new one seeded with the transcript; so does a connection that drops or ends (Nova Sonic
 * caps a connection's length), up to `reconnect_attempts` tries. Caller audio in the gap is
 * dropped.
 *
 * Permissions: `--allow-net=bedrock-runtime.<region>.amazonaws.com:443`.
 *
 * @example
 * ```ts
 * import { createNovaSonic } from "@flowcat/flowcat/realtime/nova-sonic";
 * const model = createNovaSonic({
 *   credentials: { AWS_ACCESS_KEY_ID: "...", AWS_SECRET_ACCESS_KEY: "..." },
 *   options: { region: "us-east-1" },
 * });
 * await model.connect({ systemPrompt: "You are a helpful agent.", tools: [] });
 * ```
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import { Resampler } from "../../core/audio/resample.ts";
import type { AudioFrame, ToolDecl } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup } from "../../core/seams.ts";
import type { RealtimeProviderOptions } from "../provider_types.ts";
import { pcm16ToBase64, RealtimeEventQueue } from "../realtime/_shared.ts";
import { DEFAULT_VOICES } from "../realtime/env.ts";
import { abortableDelay } from "../realtime/retry.ts";
import { type AwsAccess, awsAccess, NOVA_SONIC_DEFAULT_MODEL } from "./defaults.ts";
import { NOVA_SONIC_DEFAULT_VOICE } from "./defaults.ts";
import { NOVA_OUTPUT_RATE, NovaOutput } from "./nova_sonic_events.ts";
import type { NovaHistoryLine } from "./nova_sonic_events.ts";
import { NovaStream } from "./nova_sonic_stream.ts";
import {
  audioContentStart,
  audioInput,
  contentEnd,
  NOVA_INPUT_RATE,
  type NovaEvent,
  type NovaSessionSetup,
  promptStart,
  sessionClose,
  sessionStart,
  textContent,
  toolResultContent,
} from "./nova_sonic_wire.ts";

/** How long an ended session waits for the service to close its output, ms. */
const END_WAIT_MS = 3000;

const PROVIDER = "nova-sonic";

/** Options of {@link NovaSonicRealtime}: the provider options and, for tests, a fetch. */
export interface NovaSonicOptions extends RealtimeProviderOptions {
  /** The fetch to use (tests: one whose client trusts a test CA). */
  fetch?: typeof fetch;
}

interface Settings {
  access: AwsAccess;
  url: URL;
  model: string;
  voice?: string;
  inference: NovaSessionSetup["inference"];
  historyLines: number;
  reconnectAttempts: number;
  reconnectBackoffMs: number;
  timeoutMs: number;
}

/** The factory the registry loads: one client per call. */
export function createNovaSonic(opts: RealtimeProviderOptions): RealtimeLlm {
  return new NovaSonicRealtime(opts);
}

/** A Nova Sonic session for one call. */
export class NovaSonicRealtime implements RealtimeLlm {
  #up: Resampler | undefined;
  #cfg: Settings;
  #log: Logger;
  #fetch: typeof fetch | undefined;
  #queue = new RealtimeEventQueue();
  #state: "idle" | "open" | "reopening" | "closed" = "idle";
  #stop = new AbortController();
  #setup: RealtimeSetup | undefined;
  #stream: NovaStream | undefined;
  #output: NovaOutput | undefined;
  #history: NovaHistoryLine[] = [];
  #promptName = "";
  #audioName = "";
  /** Tool calls not answered yet: name and the prompt (session) that made them. */
  #calls = new Map<string, { name: string; promptName: string }>();

  /** Check the options now: missing credentials or a bad region are `config` errors. */
  constructor(opts: NovaSonicOptions) {
    this.#cfg = settingsOf(opts);
    this.#log = opts.logger ?? silentLogger;
    this.#fetch = opts.fetch;
  }

  /** Open the session; with `setup.kickoff` the model is asked to speak first. */
  async connect(setup: RealtimeSetup): Promise<void> {
    if (this.#state !== "idle") {
      throw new FlowcatError("other", `${PROVIDER}: connect called twice`);
    }
    this.#setup = { ...setup, tools: [...setup.tools] };
    try {
      await this.#open(setup.kickoff);
    } catch (err) {
      this.#state = "closed";
      this.#queue.close("connect failed");
      throw err;
    }
    this.#state = "open";
    this.#log.info(`${PROVIDER}: session ready`, { model: this.#cfg.model, voice: this.#voice() });
  }

  /** Caller audio (other rates are resampled to 16 kHz); dropped while no session is open. */
  sendAudio(audio: AudioFrame): void {
    if (this.#state !== "open" || this.#stream === undefined) return;
    let pcm = audio.pcm;
    if (audio.sampleRate !== NOVA_INPUT_RATE) {
      // Telephony audio (8 kHz) is brought to the 16 kHz the audio block was opened at.
      if (this.#up?.inRate !== audio.sampleRate) {
        this.#up = new Resampler(audio.sampleRate, NOVA_INPUT_RATE);
      }
      pcm = this.#up.process(audio.pcm);
      if (pcm.length === 0) return;
    }
    this.#stream.send(audioInput(this.#promptName, this.#audioName, pcm16ToBase64(pcm)));
  }

  /** New prompt and tools: a new session, seeded with the conversation so far. */
  async updateSystem(prompt: string, tools: ToolDecl[]): Promise<void> {
    if (this.#setup === undefined || this.#state === "closed") throw this.#notOpen();
    this.#setup = { ...this.#setup, systemPrompt: prompt, tools: [...tools], kickoff: undefined };
    await this.#replace("prompt or tools changed");
  }

  /**
   * Answer tool call `id`: a TOOL block with the result as text (JSON unless a string). A call
   * made in an earlier session (a brain transition replaced it before the result) is unknown
   * to this one: its result is told as a caller line, which the model answers.
   */
  sendToolResult(id: string, result: unknown): Promise<void> {
    if (this.#state !== "open" || this.#stream === undefined) {
      return Promise.reject(this.#notOpen());
    }
    const text = typeof result === "string" ? result : JSON.stringify(result ?? null);
    const call = this.#calls.get(id);
    this.#calls.delete(id);
    const events = call !== undefined && call.promptName !== this.#promptName
      ? textContent(
        this.#promptName,
        crypto.randomUUID(),
        "USER",
        `(The ${call.name} tool returned: ${text})`,
        true,
      )
      : toolResultContent(this.#promptName, crypto.randomUUID(), id, text);
    for (const ev of events) this.#stream.send(ev);
    return Promise.resolve();
  }

  /** Next event; `undefined` once closed. */
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#queue.next();
  }

  /** Push mode (see {@link RealtimeLlm.listen}). */
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#queue.listen(deliver);
  }

  /** End the session in order (audio block, prompt, session, end of input); idempotent. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#stop.abort();
    const stream = this.#stream;
    this.#stream = undefined;
    // Tokens of a turn cut short by the hangup still count.
    for (const ev of this.#output?.pendingUsage() ?? []) this.#queue.push(ev);
    this.#queue.close("closed by client");
    if (stream !== undefined) await this.#endStream(stream);
  }

  async #endStream(stream: NovaStream): Promise<void> {
    stream.send(contentEnd(this.#promptName, this.#audioName));
    for (const ev of sessionClose(this.#promptName)) stream.send(ev);
    await stream.end();
    // The signed end of input must reach the service before the connection goes: wait for the
    // service to close its side (it does after sessionEnd), at most a few seconds.
    const stop = new AbortController();
    await Promise.race([stream.drained, abortableDelay(END_WAIT_MS, stop.signal)]);
    stop.abort();
    stream.abort();
  }

  #voice(): string {
    const asked = this.#cfg.voice ?? this.#setup?.voice;
    // The server's fallback voice is another family's default: not a Nova Sonic voice.
    const foreign = (Object.values(DEFAULT_VOICES) as string[]).includes(asked ?? "");
    return asked !== undefined && asked !== "" && !foreign ? asked : NOVA_SONIC_DEFAULT_VOICE;
  }

  /** Open a session with the current setup and the transcript so far. */
  async #open(kickoff?: string): Promise<void> {
    const setup = this.#setup!;
    const promptName = crypto.randomUUID();
    const audioName = crypto.randomUUID();
    const session: NovaSessionSetup = {
      promptName,
      voice: this.#voice(),
      outputRate: NOVA_OUTPUT_RATE,
      tools: setup.tools,
      inference: this.#cfg.inference,
    };
    const first: NovaEvent[] = [sessionStart(session), promptStart(session)];
    first.push(...textContent(promptName, crypto.randomUUID(), "SYSTEM", setup.systemPrompt));
    // Only the last lines are sent again: drop older ones (in place: the output appends here).
    this.#history.splice(0, Math.max(0, this.#history.length - this.#cfg.historyLines));
    for (const line of this.#history) {
      first.push(...textContent(promptName, crypto.randomUUID(), line.role, line.text));
    }
    first.push(audioContentStart(promptName, audioName));
    if (kickoff !== undefined && kickoff !== "") {
      first.push(...textContent(promptName, crypto.randomUUID(), "USER", kickoff, true));
    }
    const stream = await NovaStream.open({
      provider: PROVIDER,
      url: this.#cfg.url,
      access: this.#cfg.access,
      timeoutMs: this.#cfg.timeoutMs,
      ...(this.#fetch ? { fetch: this.#fetch } : {}),
    }, first);
    if (this.#state === "closed") {
      stream.abort();
      throw new FlowcatError("closed", `${PROVIDER}: closed while connecting`);
    }
    this.#promptName = promptName;
    this.#audioName = audioName;
    this.#stream = stream;
    const output = new NovaOutput(this.#history);
    this.#output = output;
    void this.#read(stream, output);
  }

  async #read(stream: NovaStream, output: NovaOutput): Promise<void> {
    let reason = "stream ended";
    let fatal = false;
    try {
      for await (const { name, body } of stream.events()) {
        // A replaced session is read to its end (its events dropped), so its input's end is
        // not cut off by a reset before the service has it.
        if (stream !== this.#stream) continue;
        for (const ev of output.handle(name, body)) {
          if (ev.type === "tool_call") {
            this.#calls.set(ev.id, { name: ev.name, promptName: this.#promptName });
          }
          this.#queue.push(ev);
        }
      }
    } catch (err) {
      reason = errorMessage(err);
      fatal = !(err instanceof FlowcatError && err.kind === "closed") &&
        !/modelTimeoutException/i.test(reason);
    }
    if (stream !== this.#stream || this.#state !== "open") return;
    for (const ev of output.flush()) this.#queue.push(ev);
    if (fatal || this.#cfg.reconnectAttempts === 0) {
      this.#log.debug(`${PROVIDER}: ${reason}`);
      this.#state = "closed";
      this.#stream = undefined;
      stream.abort();
      this.#queue.close(reason);
      return;
    }
    this.#log.warn(`${PROVIDER}: session ended; opening a new one`, { reason });
    stream.abort();
    await this.#replace(reason, true);
  }

  /** Swap the session for a new one; after the tries fail the call ends. */
  async #replace(reason: string, dropped = false): Promise<void> {
    const old = this.#stream;
    this.#stream = undefined;
    this.#state = "reopening";
    // A turn the old session left open ends here (its reader stops at the swap).
    for (const ev of this.#output?.flush() ?? []) this.#queue.push(ev);
    if (old !== undefined && !dropped) await this.#endStream(old);
    const attempts = Math.max(1, this.#cfg.reconnectAttempts);
    let last: unknown;
    for (let i = 0; i < attempts; i++) {
      if (i > 0) {
        const waited = await abortableDelay(
          this.#cfg.reconnectBackoffMs * 2 ** (i - 1),
          this.#stop.signal,
        );
        if (!waited) return;
      }
      try {
        await this.#open();
        if (this.#state !== "reopening") return;
        this.#state = "open";
        this.#log.info(`${PROVIDER}: new session`, { reason, attempt: i + 1 });
        return;
      } catch (err) {
        last = err;
        if (this.#state !== "reopening") return;
        this.#log.warn(`${PROVIDER}: opening a new session failed`, { error: errorMessage(err) });
        if (err instanceof FlowcatError && err.kind === "auth") break;
      }
    }
    this.#state = "closed";
    this.#queue.close(`${reason}; no new session: ${errorMessage(last)}`);
    if (!dropped) throw last;
  }

  #notOpen(): FlowcatError {
    return new FlowcatError("closed", `${PROVIDER}: session is not open`);
  }
}

function settingsOf(opts: RealtimeProviderOptions): Settings {
  const o = opts.options ?? {};
  const access = awsAccess({ provider: PROVIDER, options: o, credentials: opts.credentials ?? {} });
  const model = opts.model ?? NOVA_SONIC_DEFAULT_MODEL;
  const base = opts.url ?? `https://bedrock-runtime.${access.region}.amazonaws.com`;
  let url: URL;
  try {
    url = new URL(
      `model/${encodeURIComponent(model)}/invoke-with-bidirectional-stream`,
      base.endsWith("/") ? base : `${base}/`,
    );
  } catch {
    throw new FlowcatError("config", `${PROVIDER}: url is not a URL`);
  }
  return {
    access,
    url,
    model,
    ...(opts.voice ? { voice: opts.voice } : {}),
    inference: {
      maxTokens: num(o, "max_tokens", 1024, 1, 10_000),
      topP: num(o, "top_p", 0.9, 0, 1),
      temperature: num(o, "temperature", 0.7, 0, 1),
    },
    historyLines: num(o, "history_lines", 40, 0, 1000),
    reconnectAttempts: num(o, "reconnect_attempts", 3, 0, 10),
    reconnectBackoffMs: num(o, "reconnect_backoff_ms", 500, 0, 60_000),
    timeoutMs: num(o, "timeout_ms", 15_000, 100, 120_000),
  };
}

function num(o: Record<string, unknown>, name: string, def: number, min: number, max: number) {
  const v = o[name];
  if (v === undefined) return def;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
    throw new FlowcatError(
      "config",
      `${PROVIDER}: options.${name} must be a number from ${min} to ${max}`,
    );
  }
  return v;
}
