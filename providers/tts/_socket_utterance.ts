/**
 * One utterance read off a text-to-speech WebSocket, the same for the clients that take a socket
 * in turn (tts/_serial_socket.ts) and those that share one among utterances told apart by an id
 * (tts/_mux_socket.ts): TtsStarted, TtsAudio as the server's messages bring it, a `tts_usage`
 * Metrics frame, TtsStopped; an abort ends it at once, a close mid-utterance is an error.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, ttsAudio } from "../../core/frames.ts";
import { type Mailbox, redact } from "../ws_client.ts";
import { PcmAssembler, ttsUsageFrame } from "./_shared.ts";

/** What one server message means to the utterance in progress. */
export interface SpeakStep {
  /** 16-bit little-endian PCM bytes to play. */
  audio?: Uint8Array;
  /** The utterance's audio is complete. */
  done?: boolean;
  /** A fault on this side (a chunk that does not decode): thrown, and the utterance cancelled. */
  fault?: FlowcatError;
}

/** What a socket listener hands to the utterance it concerns. */
export type SocketEvent<M> = { type: "message"; msg: M } | {
  type: "closed";
  code: number;
  reason: string;
};

/** How to read one utterance's messages. */
export interface UtteranceReader<M> {
  /** Provider name for the usage frame and errors. */
  provider: string;
  /** The utterance's id on its frames. */
  contextId: string;
  /** Model (or voice) name for the usage frame. */
  model: string;
  /** Characters spoken, for the usage frame. */
  characters: number;
  /** Rate of the PCM the server sends. */
  sampleRate: number;
  /** The key, blanked out of a close reason put in an error. */
  secret: string;
  /** Read one message; throw a FlowcatError for a server error (which ends the utterance). */
  step(msg: M): SpeakStep | undefined;
}

/** Whether the server has ended an utterance, for the caller's cleanup (cancel it or not). */
export interface UtteranceEnd {
  /** True once the last step, a server error or a close has ended it server-side. */
  ended: boolean;
}

/**
 * The frames of one utterance whose request has been sent: TtsStarted, TtsAudio, the usage
 * frame, TtsStopped. Aborting `signal` (or leaving the loop early) ends the stream at once
 * without TtsStopped; a socket closed mid-utterance is a `closed` error.
 */
export async function* utteranceFrames<M>(
  events: Mailbox<SocketEvent<M>>,
  r: UtteranceReader<M>,
  end: UtteranceEnd,
  signal?: AbortSignal,
): AsyncGenerator<Frame> {
  const contextId = r.contextId;
  const onAbort = () => events.poke();
  signal?.addEventListener("abort", onAbort);
  try {
    yield makeFrame("TtsStarted", { contextId });
    const pcm = new PcmAssembler();
    while (!end.ended) {
      // Checked before waiting too: an abort while suspended at a yield finds no waiter.
      if (signal?.aborted) return;
      const ev = await events.next();
      if (signal?.aborted) return;
      if (!ev) continue;
      if (ev.type === "closed") {
        end.ended = true;
        throw socketClosedError(r.provider, r.secret, ev.code, ev.reason);
      }
      let step: SpeakStep | undefined;
      try {
        step = r.step(ev.msg);
      } catch (err) {
        end.ended = true; // a server error ends the utterance server-side
        throw err;
      }
      if (step?.fault) throw step.fault;
      if (step?.audio?.length) {
        const samples = pcm.push(step.audio);
        if (samples.length) {
          yield ttsAudio({ pcm: samples, sampleRate: r.sampleRate, numChannels: 1 }, contextId);
        }
      }
      if (step?.done) end.ended = true;
    }
    yield ttsUsageFrame(r.provider, r.model, r.characters);
    yield makeFrame("TtsStopped", { contextId });
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** The frames of blank text: TtsStarted and TtsStopped, no request at all. */
export function* silentUtterance(contextId: string): Generator<Frame> {
  yield makeFrame("TtsStarted", { contextId });
  yield makeFrame("TtsStopped", { contextId });
}

/** The `closed` error for a socket that closed mid-utterance; the key blanked from `reason`. */
export function socketClosedError(
  provider: string,
  secret: string,
  code: number,
  reason: string,
): FlowcatError {
  const why = reason ? `: ${redact(reason, secret).slice(0, 300)}` : "";
  return new FlowcatError(
    "closed",
    `${provider}: socket closed before the audio ended (code ${code})${why}`,
  );
}
