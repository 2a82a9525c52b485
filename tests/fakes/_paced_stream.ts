/**
 * A streamed response body for the HTTP fakes: the given pieces, the first at once and the
 * rest `gapMs` apart; closed after the last unless `hold` keeps it open. Tells the fake when the
 * client dropped it before the end (the cancellation tests count on that).
 */

/** Options of {@link pacedStream}. */
export interface PacedStreamOptions {
  /** Pause between pieces, ms (default 0). */
  gapMs?: number;
  /** Keep the body open after the last piece until stopped or dropped. */
  hold?: boolean;
  /** The client cancelled the body before it ended. */
  onCancel?: () => void;
  /** The body ended, by any means (end, stop, cancel); called once. */
  onDone?: () => void;
}

/** A paced body and a way to end it from the fake's side. */
export interface PacedStream {
  body: ReadableStream<Uint8Array>;
  /** Close the body now (idempotent). */
  stop(): void;
}

/** `pieces` (text as UTF-8, or bytes) as a paced response body (see the module doc). */
export function pacedStream(
  pieces: readonly (string | Uint8Array)[],
  opts: PacedStreamOptions = {},
): PacedStream {
  const enc = new TextEncoder();
  const queue = [...pieces];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done = false;
  let ctl: ReadableStreamDefaultController<Uint8Array>;
  const finish = () => {
    done = true;
    clearTimeout(timer);
    opts.onDone?.();
  };
  const stop = () => {
    if (done) return;
    finish();
    try {
      ctl.close();
    } catch { /* already closed */ }
  };
  const pump = () => {
    if (done) return;
    const piece = queue.shift();
    if (piece === undefined) {
      if (!opts.hold) stop();
      return;
    }
    ctl.enqueue(typeof piece === "string" ? enc.encode(piece) : piece);
    timer = setTimeout(pump, opts.gapMs ?? 0);
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      ctl = c;
      // Not synchronously: the caller has the handle before the body can end.
      queueMicrotask(pump);
    },
    cancel: () => {
      if (done) return;
      finish();
      opts.onCancel?.();
    },
  });
  return { body, stop };
}
