/**
 * The request skeleton of text-to-speech clients that POST one utterance and read its audio
 * from a streamed answer of JSON records (Neuphonic's server-sent events, Hume's JSON lines):
 * TtsStarted, TtsAudio per record, a `tts_usage` Metrics frame, TtsStopped; retries of 429/5xx
 * and error mapping from providers/http.ts. A provider supplies the request and how to read the
 * audio out of the answer.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, ttsAudio } from "../../core/frames.ts";
import { providerFetch } from "../http.ts";
import { PcmAssembler, ttsUsageFrame } from "./_shared.ts";

/** One utterance's request and how to read its answer. */
export interface HttpUtterance {
  /** Provider name for errors and the usage frame. */
  provider: string;
  /** Text to speak (blank: no request at all). */
  text: string;
  /** Model name for the usage frame. */
  model: string;
  /** Rate of the PCM the answer carries. */
  sampleRate: number;
  /** Endpoint. */
  url: string;
  /** Request headers (the key rides here). */
  headers: Record<string, string>;
  /** JSON request body. */
  body: unknown;
  /** Deadline for the response headers, ms. */
  timeoutMs: number;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
  /** 16-bit little-endian PCM pieces of the answer, in order; throw a FlowcatError for a failure. */
  audio(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncIterable<Uint8Array>;
}

/**
 * Stream one utterance. An abort through `signal` cancels the request or the body read at once
 * and ends without TtsStopped; a body that breaks off is a `closed` error naming the provider.
 */
export async function* streamHttpTts(
  u: HttpUtterance,
  signal?: AbortSignal,
): AsyncGenerator<Frame> {
  if (signal?.aborted) return;
  const contextId = crypto.randomUUID();
  yield makeFrame("TtsStarted", { contextId });
  if (u.text.trim() === "") {
    yield makeFrame("TtsStopped", { contextId });
    return;
  }
  const headers = { "content-type": "application/json", ...u.headers };
  let res: Response;
  try {
    res = await providerFetch(u.provider, u.url, {
      method: "POST",
      headers,
      body: JSON.stringify(u.body),
    }, { timeoutMs: u.timeoutMs, signal, fetch: u.fetch });
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
  const pcm = new PcmAssembler();
  try {
    for await (const bytes of u.audio(res.body!, signal)) {
      const samples = pcm.push(bytes);
      if (samples.length && !signal?.aborted) {
        yield ttsAudio({ pcm: samples, sampleRate: u.sampleRate, numChannels: 1 }, contextId);
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    if (err instanceof FlowcatError) throw err;
    throw new FlowcatError(
      "closed",
      `${u.provider}: audio stream broke: ${err instanceof Error ? err.message : err}`,
      { cause: err },
    );
  }
  if (signal?.aborted) return;
  yield ttsUsageFrame(u.provider, u.model, u.text.length);
  yield makeFrame("TtsStopped", { contextId });
}

/** The JSON objects of a newline-delimited JSON body; blank and non-JSON lines are skipped. */
export async function* readJsonLines(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<Record<string, unknown>> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  let buf = "";
  try {
    while (true) {
      if (signal?.aborted) return;
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const record = parseObject(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (record) yield record;
      }
    }
    const last = parseObject(buf);
    if (last) yield last;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => {});
  }
}

function parseObject(line: string): Record<string, unknown> | undefined {
  if (line.trim() === "") return undefined;
  try {
    const v = JSON.parse(line);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
