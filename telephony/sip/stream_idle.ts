/**
 * What keeps a SIP stream connection open: the Call-IDs that crossed it and when it was last
 * used. A connection idle past its limit is closed unless one of its Call-IDs is still a live
 * dialog or the registration, since the peer sends that dialog's BYE or the trunk its INVITEs
 * back over it.
 * @module
 */

/** Connections remember at most this many Call-IDs (the oldest is forgotten first). */
const MAX_CALL_IDS = 64;

const HEADER_END = [13, 10, 13, 10];
const CALL_ID = /^(?:call-id|i)[ \t]*:[ \t]*(\S+)/im;
const decoder = new TextDecoder();

/** When to close a stream connection nobody uses. */
export interface StreamIdlePolicy {
  /** Close a connection after this long without traffic, ms (0: never). */
  idleMs: number;
  /** Whether a Call-ID belongs to a live dialog or the registration. */
  inUse: (callId: string) => boolean;
}

/** The Call-ID of one encoded SIP message, or undefined when it has none. */
export function callIdOf(bytes: Uint8Array): string | undefined {
  let end = bytes.length;
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (
      bytes[i] === HEADER_END[0] && bytes[i + 1] === HEADER_END[1] &&
      bytes[i + 2] === HEADER_END[2] && bytes[i + 3] === HEADER_END[3]
    ) {
      end = i;
      break;
    }
  }
  return CALL_ID.exec(decoder.decode(bytes.subarray(0, end)))?.[1];
}

/** Traffic bookkeeping of one connection. */
export class StreamUse {
  /** When the connection last carried a message, ms since the epoch. */
  lastUsed: number = Date.now();
  readonly #callIds = new Set<string>();

  /** Record a message that crossed the connection (either way). */
  saw(bytes: Uint8Array): void {
    this.lastUsed = Date.now();
    const id = callIdOf(bytes);
    if (id === undefined || this.#callIds.has(id)) return;
    if (this.#callIds.size >= MAX_CALL_IDS) {
      this.#callIds.delete(this.#callIds.values().next().value!);
    }
    this.#callIds.add(id);
  }

  /** True when the connection has been quiet past `policy.idleMs` and no Call-ID of it is live. */
  idle(policy: StreamIdlePolicy, now: number): boolean {
    if (policy.idleMs <= 0 || now - this.lastUsed < policy.idleMs) return false;
    for (const id of this.#callIds) if (policy.inUse(id)) return false;
    return true;
  }
}
