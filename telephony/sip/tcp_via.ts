/**
 * The transport stamps the Via: a request we send over TCP or TLS says so in its top Via, with
 * the port we take that transport on as sent-by (RFC 3261 §18.1.1), whatever the transaction
 * built.
 * @module
 */

import type { SipMessage } from "./message.ts";
import type { StreamTransport } from "./udp.ts";

/**
 * `msg` with its top Via's protocol set to `kind` (TCP or TLS) and its sent-by port to
 * `sentByPort`, where the peer could reach us over that transport; a copy. Responses are
 * returned as they are.
 */
export function overStream(
  msg: SipMessage,
  kind: StreamTransport,
  sentByPort: number,
): SipMessage {
  if (msg.kind !== "request") return msg;
  const i = msg.headers.findIndex((h) => h.name.toLowerCase() === "via" || h.name === "v");
  if (i < 0) return msg;
  const headers = msg.headers.slice();
  headers[i] = {
    ...headers[i],
    value: headers[i].value.replace(
      /^\s*SIP\s*\/\s*2\.0\s*\/\s*UDP\s+([^\s;:]+|\[[^\]]*\])(?:\s*:\s*\d+)?/i,
      (_all, host: string) => `SIP/2.0/${kind.toUpperCase()} ${host}:${sentByPort}`,
    ),
  };
  return { ...msg, headers };
}
