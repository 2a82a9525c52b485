/**
 * Response bookkeeping of an OpenAI Realtime session: the server runs one response at a time,
 * so a `response.create` asked for while one runs waits for its `response.done`; and the
 * assistant audio item being received is tracked for `conversation.item.truncate` on barge-in.
 * @module
 */

import type { ClientEvent } from "./realtime_wire.ts";
import { OPENAI_PCM_RATE } from "./realtime_wire.ts";

/** The assistant audio item being received. */
interface AudioItem {
  id: string;
  contentIndex: number;
  samples: number;
}

/** One per session; `send` writes a client event on the live socket. */
export class ResponseGate {
  /** A response is being generated (set when we ask for one, cleared by `response.done`). */
  #active = false;
  /** A `response.create` is owed once the active response is done. */
  #wanted = false;
  #item: AudioItem | undefined;

  /** @param send writes a client event */
  /** `rate`: the sample rate of the session's output audio (24 kHz PCM16 by default). */
  constructor(readonly send: (ev: ClientEvent) => void, readonly rate: number = OPENAI_PCM_RATE) {}

  /** True while a response runs. */
  get active(): boolean {
    return this.#active;
  }

  /** `response.create` now, or once the active response is done (the server allows one). */
  request(): void {
    if (this.#active) {
      this.#wanted = true;
      return;
    }
    this.#active = true;
    this.send({ type: "response.create" });
  }

  /** `response.created` arrived. */
  created(): void {
    this.#active = true;
  }

  /** `response.done` arrived: the owed request goes out now. */
  done(): void {
    this.#active = false;
    if (this.#wanted) {
      this.#wanted = false;
      this.request();
    }
  }

  /** Assistant audio of `itemId` arrived. */
  audio(itemId: string, contentIndex: number, samples: number): void {
    if (this.#item?.id !== itemId) this.#item = { id: itemId, contentIndex, samples: 0 };
    this.#item.samples += samples;
  }

  /**
   * The caller started talking: truncate the item to what was received (not played: the carrier
   * may still hold some of it, see docs) where the dialect has truncation, and cancel the
   * response unless the server does.
   */
  bargeIn(serverInterrupts: boolean, truncates = true): void {
    const item = this.#item;
    if (truncates && item !== undefined && item.samples > 0) {
      this.send({
        type: "conversation.item.truncate",
        item_id: item.id,
        content_index: item.contentIndex,
        audio_end_ms: Math.floor((item.samples * 1000) / this.rate),
      });
      this.#item = undefined;
    }
    if (this.#active && !serverInterrupts) this.send({ type: "response.cancel" });
  }

  /** The session is gone: nothing runs and nothing is owed on the next one. */
  reset(): void {
    this.#active = false;
    this.#wanted = false;
    this.#item = undefined;
  }
}
