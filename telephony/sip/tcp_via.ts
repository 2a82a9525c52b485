/**
 * The transport stamps the Via: a request we send over TCP or TLS says so in its top Via
 * (RFC 3261 §18.1.1), whatever the transaction built.
 * @module
 */

import type { SipMessage } from "./message.ts";
import type { StreamTransport } from "./udp.ts";

/**
 * `msg` with its top Via's protocol set to `kind` (TCP or TLS); a copy. Responses are returned
 * as they are.
 */
export function overStream(msg: SipMessage, kind: StreamTransport): SipMessage {
  if (msg.kind !== "request") return msg;
  const i = msg.headers.findIndex((h) => h.name.toLowerCase() === "via" || h.name === "v");
  if (i < 0) return msg;
  const headers = msg.headers.slice();
  headers[i] = {
    ...headers[i],
    value: headers[i].value.replace(
      /^\s*SIP\s*\/\s*2\.0\s*\/\s*UDP/i,
      `SIP/2.0/${kind.toUpperCase()}`,
    ),
  };
  return { ...msg, headers };
}
