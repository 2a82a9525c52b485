/**
 * Server-side latency split for the capacity benchmark, installed in the server child only
 * (`--trace`): it wraps three methods on their prototypes, without touching their code.
 *
 * - `WsMediaTransport.listen` (push mode, what the server uses) and `.recv` (pull mode): when
 *   an audio message leaves the media leg for the pipeline;
 * - `TransportOutput.processFrame`: when the echoed audio reaches the output transport, keyed
 *   by its PCM buffer (the output's 20 ms chunks are views of that buffer);
 * - `WsMediaTransport.sendAudio`: when that chunk is sent to the carrier.
 *
 * Frame k sent on a leg is the echo of audio message k received on it (the echo model's frame
 * mode is 1:1), so per frame: `pipeline` = recv -> output transport (deserialise, resample,
 * five hops, the model, back), `pacing` = output transport -> send (the wait for the real-time
 * playout clock).
 * @module
 */

import { TransportOutput } from "../core/processors/transport.ts";
import type { AudioFrame, Direction, Frame } from "../core/frames.ts";
import type { Link } from "../core/processor.ts";
import type { MediaIn } from "../core/seams.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";

const RING = 256;

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

const legs = new WeakMap<object, Leg>();
const arrivals = new WeakMap<ArrayBufferLike, number>();
let pipeline = new Samples();
let pacing = new Samples();
let warmupFrames = 50;

function legOf(t: object): Leg {
  let leg = legs.get(t);
  if (leg === undefined) {
    leg = { recvTimes: new Float64Array(RING), recvN: 0, sendN: 0 };
    legs.set(t, leg);
  }
  return leg;
}

/** Note when an audio message of leg `t` leaves for the pipeline. */
function stampArrival(t: object, m: MediaIn | undefined): void {
  if (m !== undefined && m.type === "audio") {
    const leg = legOf(t);
    leg.recvTimes[leg.recvN++ % RING] = performance.now();
  }
}

/** Wrap the three methods (not idempotent: call once per process). */
export function installTrace(warmup = 50): void {
  warmupFrames = warmup;
  const ws = WsMediaTransport.prototype;
  const recv = ws.recv;
  ws.recv = function (this: WsMediaTransport): Promise<MediaIn | undefined> {
    return recv.call(this).then((m) => {
      stampArrival(this, m);
      return m;
    });
  };
  const listen = ws.listen;
  ws.listen = function (this: WsMediaTransport, deliver: (m: MediaIn | undefined) => void): void {
    listen.call(this, (m) => {
      stampArrival(this, m);
      deliver(m);
    });
  };
  const send = ws.sendAudio;
  ws.sendAudio = function (this: WsMediaTransport, audio: AudioFrame): Promise<void> {
    const now = performance.now();
    const leg = legOf(this);
    const k = leg.sendN++;
    const at = arrivals.get(audio.pcm.buffer);
    if (k >= warmupFrames && k < leg.recvN && at !== undefined) {
      pipeline.add(at - leg.recvTimes[k % RING]);
      pacing.add(now - at);
    }
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
export function takeTrace(): { pipeline: Float64Array; pacing: Float64Array } {
  const r = {
    pipeline: pipeline.data.subarray(0, pipeline.n),
    pacing: pacing.data.subarray(0, pacing.n),
  };
  pipeline = new Samples();
  pacing = new Samples();
  return r;
}
