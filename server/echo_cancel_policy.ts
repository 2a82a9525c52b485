/**
 * Which calls get the echo canceller (`audio.echo_cancel`): an explicit `on` or `off` applies to
 * every leg, `auto` to the telephone legs only, and an unset key means the default by transport,
 * {@link ECHO_CANCEL_DEFAULT}. Browsers cancel their own echo, so the browser leg never needs it.
 *
 * @example
 * ```ts
 * import { echoCancelFor } from "./echo_cancel_policy.ts";
 * echoCancelFor(undefined, "sip"); // the default for SIP calls
 * echoCancelFor("auto", "browser"); // false
 * ```
 * @module
 */

import type { RunOrigin } from "./session_store.ts";

/** The values `audio.echo_cancel` may take. */
export type EchoCancelSetting = "auto" | "on" | "off";

/**
 * What an unset `audio.echo_cancel` means. `off` until the canceller meets every figure of
 * docs/audio.md#echo-cancellation on the generated set (true barge-ins during the agent's speech
 * are still missed on long reverbs); then `auto`, which turns it on for carrier WebSocket, SIP and
 * outbound legs and leaves the browser alone.
 */
export const ECHO_CANCEL_DEFAULT: "auto" | "off" = "off";

/** Whether a call from `origin` gets echo cancellation (`setting` undefined: the default). */
export function echoCancelFor(setting: EchoCancelSetting | undefined, origin: RunOrigin): boolean {
  const s = setting ?? ECHO_CANCEL_DEFAULT;
  return s === "on" || (s === "auto" && origin !== "browser");
}
