/**
 * The carrier WebSocket leg's side of a transfer: hand the call's id to the carrier's transfer
 * function, or refuse when the leg has none or the stream has not started.
 * @module
 */

import type { TransferOutcome } from "../core/frames.ts";
import type { CarrierTransferFn } from "./carrier_transfer.ts";

/** Transfer the call `callId` with `fn`; a refused outcome when either is missing. */
export function transferLeg(
  fn: CarrierTransferFn | undefined,
  callId: string | undefined,
  target: string,
): Promise<TransferOutcome> {
  if (fn === undefined) {
    return Promise.resolve({
      ok: false,
      refused: true,
      reason: "this call's leg cannot transfer calls",
    });
  }
  if (callId === undefined) {
    return Promise.resolve({ ok: false, reason: "the call's stream has not started yet" });
  }
  return fn(callId, target);
}
