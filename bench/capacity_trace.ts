/**
 * Server-side latency of the capacity benchmark, installed in the server child only (`--trace`):
 * it wraps four methods on their prototypes, without touching their code.
 *
 * - `CarrierBase.onMessage` (every carrier serializer): when a carrier message reaches our code
 *   (the first line of ours after Deno's WebSocket hands it over, before the JSON parse);
 * - `WsMediaTransport.listen` (push mode, what the server uses) and `.recv` (pull mode): which
 *   of those messages was audio, per leg, in order;
 * - `TransportOutput.processFrame`: when the echoed audio reaches the output transport, keyed
 *   by its PCM buffer (the output's 20 ms chunks are views of that buffer);
 * - `WsMediaTransport.sendAudio`: when that chunk is sent to the carrier.
 *
 * Frame k sent on a leg is the echo of audio message k received on it (the echo model's frame
 * mode is 1:1), so per frame: `server` = message in -> reply sent (the headline: parse, decode,
 * resample, five hops, the model, the pacing wait, resample, encode, send), split into
 * `pipeline` = message in -> output transport and `pacing` = output transport -> send. A match
 * whose times are out of order (an output arrival outside [message in, send]), or whose message
 * time was already overwritten in the leg's ring, is counted in `unmatched`, never sampled.
 * @module
 */

import { TransportOutput } from "../core/processors/transport.ts";
import type { AudioFrame, Direction, Frame } from "../core/frames.ts";
import type { Link } from "../core/processor.ts";
import type { MediaIn, SerIn, WsIn } from "../core/seams.ts";
import { CarrierBase } from "../telephony/serializers/_base.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";

/** Message times kept per leg: a backlog longer than this (10 s of frames) is not matched. */
const RING = 512;

interface Leg {
  recvTimes: Float64Array;
  recvN: number;
  sendN: number;
}

/** Growable sample buffer. */
class Samples {
  data = new Float64Array(1 << 16);
  n = 0;
  add(v: number): void {
    if (this.n === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.n++] = v;
  }
}

/** The samples taken since the last {@link takeTrace}, in ms. */
export interface TraceSamples {
  /** Carrier message in -> the reply audio it caused sent. */
  server: Float64Array;
  /** Carrier message in -> the reply at the output transport. */
  pipeline: Float64Array;
  /** Output transport -> carrier send (the playout clock's wait). */
  pacing: Float64Array;
  /** Sends that could not be matched to their message (see the module doc). */
  unmatched: number;
}

const legs = new WeakMap<object, Leg>();
const arrivals = new WeakMap<ArrayBufferLike, number>();
let server = new Samples();
let pipeline = new Samples();
let pacing = new Samples();
let unmatched = 0;
let warmupFrames = 50;
/** When the carrier message being decoded now reached our code (set synchronously before it). */
let messageAt = 0;

function legOf(t: object): Leg {
  let leg = legs.get(t);
  if (leg === undefined) {
    leg = { recvTimes: new Float64Array(RING), recvN: 0, sendN: 0 };
    legs.set(t, leg);
  }
  return leg;
}

/** Note that leg `t`'s next audio message reached our code at `at`. */
function stampArrival(t: object, m: MediaIn | undefined, at: number): void {
  if (m !== undefined && m.type === "audio") {
    const leg = legOf(t);
    leg.recvTimes[leg.recvN++ % RING] = at;
  }
}

/** Match the k-th send of leg `t` with its message; sample it unless it is a warm-up frame. */
function stampSend(t: object, audio: AudioFrame): void {
  const now = performance.now();
  const leg = legOf(t);
  const k = leg.sendN++;
  if (k < warmupFrames) return;
  if (k >= leg.recvN || leg.recvN - k > RING) {
    unmatched++;
    return;
  }
  const inAt = leg.recvTimes[k % RING];
  const outAt = arrivals.get(audio.pcm.buffer);
  if (outAt === undefined || outAt < inAt || outAt > now) {
    unmatched++;
    return;
  }
  server.add(now - inAt);
  pipeline.add(outAt - inAt);
  pacing.add(now - outAt);
}

/** Wrap the methods (not idempotent: call once per process). */
export function installTrace(warmup = 50): void {
  warmupFrames = warmup;
  const carrier = CarrierBase.prototype;
  const onMessage = carrier.onMessage;
  carrier.onMessage = function (this: CarrierBase, msg: WsIn): SerIn {
    messageAt = performance.now();
    return onMessage.call(this, msg);
  };
  const ws = WsMediaTransport.prototype;
  const recv = ws.recv;
  ws.recv = function (this: WsMediaTransport): Promise<MediaIn | undefined> {
    // Pull mode resolves after the decode, in a later job: the time it resumes is the nearest.
    return recv.call(this).then((m) => {
      stampArrival(this, m, performance.now());
      return m;
    });
  };
  const listen = ws.listen;
  ws.listen = function (this: WsMediaTransport, deliver: (m: MediaIn | undefined) => void): void {
    // Push mode delivers inside the decode of the message, so `messageAt` is this message's.
    listen.call(this, (m) => {
      stampArrival(this, m, messageAt);
      deliver(m);
    });
  };
  const send = ws.sendAudio;
  ws.sendAudio = function (this: WsMediaTransport, audio: AudioFrame): Promise<void> {
    stampSend(this, audio);
    return send.call(this, audio);
  };
  const out = TransportOutput.prototype;
  const process = out.processFrame;
  out.processFrame = function (this: TransportOutput, f: Frame, d: Direction, l: Link): void {
    if (f.kind === "TtsAudio" || f.kind === "OutputAudio") {
      arrivals.set(f.audio.pcm.buffer, performance.now());
    }
    return process.call(this, f, d, l);
  };
}

/** Samples so far (ms), and start afresh. */
export function takeTrace(): TraceSamples {
  const r = {
    server: server.data.subarray(0, server.n),
    pipeline: pipeline.data.subarray(0, pipeline.n),
    pacing: pacing.data.subarray(0, pacing.n),
    unmatched,
  };
  server = new Samples();
  pipeline = new Samples();
  pacing = new Samples();
  unmatched = 0;
  return r;
}
