/** A carrier media socket in memory: the test plays the carrier (Twilio's Media Streams here). */

import type { MediaSocket, WsIn } from "../mod.ts";
import { ulawDecode } from "../core/audio/g711.ts";
import { concatInt16 } from "../core/audio/pcm.ts";

/** A MediaSocket in memory: the test feeds what the carrier sends and reads what was sent. */
export class MemorySocket implements MediaSocket {
  readonly out: string[] = [];
  #inbox: (WsIn | undefined)[] = [];
  #wait: ((m: WsIn | undefined) => void) | undefined;
  feed(m: WsIn | undefined): void {
    const w = this.#wait;
    this.#wait = undefined;
    if (w) w(m);
    else this.#inbox.push(m);
  }
  /** Feeds a JSON text message. */
  text(o: unknown): void {
    this.feed({ type: "text", data: JSON.stringify(o) });
  }
  recv(): Promise<WsIn | undefined> {
    if (this.#inbox.length > 0) return Promise.resolve(this.#inbox.shift());
    return new Promise((r) => (this.#wait = r));
  }
  sendText(text: string): Promise<void> {
    this.out.push(text);
    return Promise.resolve();
  }
  sendBinary(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    this.feed(undefined);
    return Promise.resolve();
  }
}

/** Twilio's connected and start messages for stream MZ1 of call CA1. */
export function twilioStart(socket: MemorySocket): void {
  socket.text({ event: "connected", protocol: "Call", version: "1.0.0" });
  socket.text({
    event: "start",
    streamSid: "MZ1",
    start: {
      streamSid: "MZ1",
      callSid: "CA1",
      accountSid: "AC1",
      tracks: ["inbound"],
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  });
}

/** The outbound media messages the agent sent, as 8 kHz PCM. */
export function twilioSentPcm(out: readonly string[]): Int16Array {
  return concatInt16(
    out.filter((m) => m.includes('"media"')).map((m) => {
      const b64 = JSON.parse(m).media.payload as string;
      return ulawDecode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    }),
  );
}
