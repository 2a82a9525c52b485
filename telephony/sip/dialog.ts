/**
 * SIP dialog state (RFC 3261 §12): the Call-ID, both tags, the peer's target (its Contact),
 * the route set from Record-Route, and both CSeq spaces. Pure: building the dialog from the
 * INVITE (UAS) or the 2xx (UAC), building in-dialog requests (BYE, the ACK of a 2xx) and
 * deciding where they go.
 * @module
 */

import { addressOf, buildRequest, cseqOf, tagOf } from "./build.ts";
import {
  getHeader,
  getHeaders,
  type SipHeader,
  type SipRequest,
  type SipResponse,
} from "./message.ts";
import { tokenKey } from "./params.ts";
import { parseUri } from "./uri.ts";
import type { UdpAddress } from "./udp.ts";

/** The state of one dialog. */
export interface Dialog {
  /** Call-ID. */
  callId: string;
  /** Our tag. */
  localTag: string;
  /** The peer's tag. */
  remoteTag: string;
  /** Our From value in requests we send (with our tag). */
  localAddress: string;
  /** The peer's address as our To value (with its tag). */
  remoteAddress: string;
  /** The peer's Contact URI: the Request-URI of in-dialog requests. */
  remoteTarget: string;
  /** Route set, in the order our requests carry it. */
  routeSet: string[];
  /** Our last CSeq number. */
  localSeq: number;
  /** The peer's last CSeq number (-1 before any). */
  remoteSeq: number;
}

/**
 * `Call-ID|local tag|remote tag`: how requests find their dialog. Tags are tokens and compare
 * case-insensitively; the Call-ID compares exactly (RFC 3261 §7.3.1, §20.8).
 */
export function dialogKey(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}|${tokenKey(localTag)}|${tokenKey(remoteTag)}`;
}

/** The dialog key of a request we received (its To tag is ours, its From tag the peer's). */
export function dialogKeyOfRequest(req: SipRequest): string {
  return dialogKey(
    getHeader(req, "Call-ID") ?? "",
    tagOf(req, "To") ?? "",
    tagOf(req, "From") ?? "",
  );
}

/** The URI inside a Contact value (`<sip:...>;params` or a bare URI). */
function contactUri(msg: SipRequest | SipResponse): string | undefined {
  const addr = addressOf(msg, "Contact");
  if (addr === undefined) return undefined;
  const value = getHeader(msg, "Contact") ?? "";
  const lt = value.indexOf("<");
  if (lt >= 0) return value.slice(lt + 1, value.indexOf(">", lt));
  const semi = value.indexOf(";");
  return (semi < 0 ? value : value.slice(0, semi)).trim();
}

/** The dialog a UAS creates by answering `invite` with To tag `localTag`. */
export function dialogAsUas(invite: SipRequest, localTag: string): Dialog {
  const to = getHeader(invite, "To") ?? "";
  return {
    callId: getHeader(invite, "Call-ID") ?? "",
    localTag,
    remoteTag: tagOf(invite, "From") ?? "",
    localAddress: tagOf(invite, "To") === undefined ? `${to};tag=${localTag}` : to,
    remoteAddress: getHeader(invite, "From") ?? "",
    remoteTarget: contactUri(invite) ?? invite.uri,
    routeSet: getHeaders(invite, "Record-Route"),
    localSeq: 0,
    remoteSeq: cseqOf(invite)?.seq ?? 0,
  };
}

/** The dialog a UAC gets from the 2xx (`res`) to its `invite`. */
export function dialogAsUac(invite: SipRequest, res: SipResponse): Dialog {
  return {
    callId: getHeader(invite, "Call-ID") ?? "",
    localTag: tagOf(invite, "From") ?? "",
    remoteTag: tagOf(res, "To") ?? "",
    localAddress: getHeader(invite, "From") ?? "",
    remoteAddress: getHeader(res, "To") ?? "",
    remoteTarget: contactUri(res) ?? invite.uri,
    routeSet: getHeaders(res, "Record-Route").reverse(),
    localSeq: cseqOf(invite)?.seq ?? 1,
    remoteSeq: -1,
  };
}

/**
 * Where a URI's requests go: its host and port (5060 when absent). Undefined for a URI that
 * does not parse or has no host.
 */
export function uriDestination(uri: string): UdpAddress | undefined {
  const r = parseUri(uri.trim().replace(/^<|>$/g, ""));
  if (!r.ok || r.value.host === "") return undefined;
  const host = r.value.host.replace(/^\[(.*)\]$/, "$1");
  const transport = r.value.params.get("transport")?.toLowerCase();
  const tls = r.value.scheme === "sips" || transport === "tls";
  const dest: UdpAddress = { hostname: host, port: r.value.port ?? (tls ? 5061 : 5060) };
  if (tls) dest.transport = "tls";
  else if (transport === "tcp") dest.transport = "tcp";
  return dest;
}

/** The next hop of an in-dialog request: the first route (loose routing) or the target. */
export function dialogNextHop(d: Dialog): UdpAddress | undefined {
  if (d.routeSet.length > 0) {
    const first = d.routeSet[0];
    const lt = first.indexOf("<");
    const uri = lt >= 0 ? first.slice(lt + 1, first.indexOf(">", lt)) : first.split(";")[0];
    return uriDestination(uri);
  }
  return uriDestination(d.remoteTarget);
}

/** Options for {@link buildInDialogRequest}. */
export interface InDialogOptions {
  /** Our Contact value (needed on re-INVITE / UPDATE). */
  contact?: string;
  /** Extra headers. */
  headers?: SipHeader[];
  /** Body text; empty or absent sends none. */
  body?: string;
  /** Content-Type of a non-empty `body` (e.g. `application/sdp`); absent adds no header. */
  contentType?: string;
  /** CSeq number to use instead of the next one (the ACK of a 2xx reuses the INVITE's). */
  seq?: number;
}

/**
 * An in-dialog request (BYE, INFO, ACK, ...) with `via` as its single Via. Every method but
 * ACK and CANCEL takes the next local CSeq number.
 */
export function buildInDialogRequest(
  d: Dialog,
  method: string,
  via: string,
  opts: InDialogOptions = {},
): SipRequest {
  let seq = opts.seq;
  if (seq === undefined) {
    if (method === "ACK" || method === "CANCEL") seq = d.localSeq;
    else seq = ++d.localSeq;
  }
  const headers: SipHeader[] = [
    { name: "Via", value: via },
    { name: "Max-Forwards", value: "70" },
    { name: "From", value: d.localAddress },
    { name: "To", value: d.remoteAddress },
    { name: "Call-ID", value: d.callId },
    { name: "CSeq", value: `${seq} ${method}` },
  ];
  for (const r of d.routeSet) headers.push({ name: "Route", value: r });
  if (opts.contact !== undefined) headers.push({ name: "Contact", value: opts.contact });
  if (opts.headers) headers.push(...opts.headers);
  const body = opts.body ?? "";
  if (body !== "" && opts.contentType !== undefined) {
    headers.push({ name: "Content-Type", value: opts.contentType });
  }
  return buildRequest(method, d.remoteTarget, headers, body);
}
