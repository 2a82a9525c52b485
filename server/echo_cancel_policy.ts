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
 * What an unset `audio.echo_cancel` means: `auto`, on for carrier WebSocket, SIP and outbound legs
 * (a speakerphone returns the agent's voice there and nothing else cancels it) and off for the
 * browser, which cancels its own echo. The canceller meets its figures on the generated set
 * (docs/audio.md#echo-cancellation); its CPU per call is in docs/performance.md.
 */
export const ECHO_CANCEL_DEFAULT: "auto" | "off" = "auto";

/** Whether a call from `origin` gets echo cancellation (`setting` undefined: the default). */
export function echoCancelFor(setting: EchoCancelSetting | undefined, origin: RunOrigin): boolean {
  const s = setting ?? ECHO_CANCEL_DEFAULT;
  return s === "on" || (s === "auto" && origin !== "browser");
}
