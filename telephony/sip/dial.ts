/**
 * Dialling a transfer target on a second leg: where the INVITE goes for a SIP URI (its own
 * host, with no credentials) or a number (the trunk, which may challenge with our digest
 * credentials), and the offer that prefers the caller's codec so that a bridge relays the same
 * payload it receives.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { serverAddress } from "./config.ts";
import type { AgentCore } from "./core.ts";
import type { SipCall } from "./call.ts";
import type { DialOptions } from "./call_leg.ts";

export type { DialOptions } from "./call_leg.ts";
import { uriDestination } from "./dialog.ts";
import { type InviteTarget, placeInvite } from "./outbound.ts";
import { referTargetProblem } from "./refer.ts";
import type { G711Codec } from "./sdp.ts";

/**
 * Where an INVITE to `target` goes: a `sip:`/`sips:` URI to its own host and port (the trunk's
 * credentials only when that host is the trunk); a `tel:` URI, number or user name as
 * `sip:<user>@<trunk>` through the trunk.
 */
export function inviteTargetOf(core: AgentCore, target: string, codec?: G711Codec): InviteTarget {
  const problem = referTargetProblem(target);
  if (problem !== undefined) throw new FlowcatError("other", `transfer needs ${problem}`);
  const server = core.settings.server;
  const codecs: G711Codec[] | undefined = codec === undefined
    ? undefined
    : [codec, codec === "PCMU" ? "PCMA" : "PCMU"];
  if (/^sips?:/i.test(target)) {
    const dest = uriDestination(target);
    if (dest === undefined) {
      throw new FlowcatError("other", `transfer target ${target} has no host`);
    }
    const trunk = dest.hostname === server.host && dest.port === server.port;
    return {
      ruri: target,
      toUri: target,
      dest,
      trunk,
      label: target,
      ...(codecs ? { codecs } : {}),
    };
  }
  const user = encodeURIComponent(target.replace(/^tel:/i, "")).replace(/%2B/gi, "+");
  return {
    ruri: `sip:${user}@${server.hostPort}`,
    toUri: `sip:${user}@${server.host}`,
    dest: serverAddress(server),
    trunk: true,
    label: target,
    ...(codecs ? { codecs } : {}),
  };
}

/** Place a call to a transfer target (see {@link inviteTargetOf}); resolves once answered. */
export async function dialTarget(
  core: AgentCore,
  target: string,
  opts: DialOptions = {},
): Promise<SipCall> {
  return await placeInvite(core, inviteTargetOf(core, target, opts.codec), {
    ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
  });
}
