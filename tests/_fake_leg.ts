/** An in-memory media leg for processor and call tests: feed inbound events, read what was sent. */

import type { AudioFrame, MediaIn, MediaTransport } from "../mod.ts";

/** In-memory media leg: tests push inbound events and read what was sent. */
export class FakeLeg implements MediaTransport {
  inbox: (MediaIn | undefined)[] = [];
  #wait: ((m: MediaIn | undefined) => void) | undefined;
  sent: { at: number; audio: AudioFrame }[] = [];
  clears = 0;
  closed = false;
  feed(m: MediaIn | undefined) {
    if (this.#wait) {
      const w = this.#wait;
      this.#wait = undefined;
      w(m);
    } else this.inbox.push(m);
  }
  recv() {
    if (this.inbox.length) return Promise.resolve(this.inbox.shift());
    return new Promise<MediaIn | undefined>((r) => (this.#wait = r));
  }
  sendAudio(audio: AudioFrame) {
    this.sent.push({ at: performance.now(), audio });
    return Promise.resolve();
  }
  sendClear() {
    this.clears++;
    return Promise.resolve();
  }
  carrierRate() {
    return 8000;
  }
  close() {
    this.closed = true;
    return Promise.resolve();
  }
  /** Milliseconds of audio sent so far. */
  sentMs(): number {
    return this.sent.reduce((ms, s) => ms + (s.audio.pcm.length * 1000) / s.audio.sampleRate, 0);
  }
}
