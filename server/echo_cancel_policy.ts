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
 * What an unset `audio.echo_cancel` means: `auto`, the canceller on carrier WebSocket, SIP and
 * outbound legs, the browser left alone. It meets the figures of docs/audio.md#echo-cancellation
 * on the generated set, and hears a caller who talks over the greeting on a leg with no echo.
 */
export const ECHO_CANCEL_DEFAULT: "auto" | "off" = "auto";

/** Whether a call from `origin` gets echo cancellation (`setting` undefined: the default). */
export function echoCancelFor(setting: EchoCancelSetting | undefined, origin: RunOrigin): boolean {
  const s = setting ?? ECHO_CANCEL_DEFAULT;
  return s === "on" || (s === "auto" && origin !== "browser");
}
