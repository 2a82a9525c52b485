/**
 * Plivo's side of a call for server tests: its V3 webhook signature, the signed answer webhook,
 * and the Audio Stream WebSocket the answer XML names (mu-law 8 kHz), opened on the server's
 * local origin instead of its public one.
 */

import { socketFromWebSocket } from "../telephony/ws_transport.ts";
import { plivoSignedBase } from "../telephony/webhooks.ts";

/** Plivo's V3 signature headers for a request to `url` with form `params`. */
export async function plivoHeaders(
  authToken: string,
  url: string,
  params: Record<string, string>,
  method = "POST",
): Promise<Record<string, string>> {
  const nonce = crypto.randomUUID().replaceAll("-", "");
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(authToken),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const base = plivoSignedBase(url, method, Object.entries(params));
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${base}.${nonce}`));
  return {
    "content-type": "application/x-www-form-urlencoded",
    "x-plivo-signature-v3": new Uint8Array(mac).toBase64(),
    "x-plivo-signature-v3-nonce": nonce,
  };
}

/** POSTs form `params` to `publicUrl` as Plivo does, signed, but sent to `base` (the local origin). */
export async function plivoPost(
  base: string,
  publicUrl: string,
  authToken: string,
  params: Record<string, string>,
): Promise<Response> {
  const url = new URL(publicUrl);
  return await fetch(`${base}${url.pathname}${url.search}`, {
    method: "POST",
    headers: await plivoHeaders(authToken, publicUrl, params),
    body: new URLSearchParams(params).toString(),
  });
}

/** The caller's side of a Plivo Audio Stream. */
export interface PlivoCall {
  /** Every JSON message the server sent. */
  got: Record<string, unknown>[];
  /** Settles once the server closed the socket. */
  ended: Promise<void>;
  dtmf(digit: string): Promise<void>;
  close(): void;
}

/**
 * Answers `callUuid` as Plivo does: the signed answer webhook at `publicUrl`, then the stream
 * the `<Stream>` names, with Plivo's start event.
 */
export async function dialPlivo(
  base: string,
  opts: { authToken: string; publicUrl: string; callUuid: string },
): Promise<{ call: PlivoCall; runId: number }> {
  const params = {
    CallUUID: opts.callUuid,
    From: "14155550123",
    To: "14155550199",
    Direction: "inbound",
    CallStatus: "in-progress",
  };
  const res = await plivoPost(
    base,
    `${opts.publicUrl}/telephony/answer/plivo`,
    opts.authToken,
    params,
  );
  const xml = await res.text();
  const m = /<Stream[^>]*>([^<]+)<\/Stream>/.exec(xml);
  if (m === null) throw new Error(`answer webhook: HTTP ${res.status}: ${xml}`);
  const url = new URL(m[1].replaceAll("&amp;", "&"));
  const ws = new WebSocket(`${base.replace("http", "ws")}${url.pathname}${url.search}`);
  const socket = socketFromWebSocket(ws);
  await socket.opened;
  const got: Record<string, unknown>[] = [];
  const ended = (async () => {
    for (;;) {
      const msg = await socket.recv();
      if (msg === undefined || msg.type === "close") break;
      if (msg.type === "text") got.push(JSON.parse(msg.data));
    }
  })().catch(() => {});
  const send = (o: unknown) => socket.sendText(JSON.stringify(o));
  await send({
    event: "start",
    sequenceNumber: 0,
    start: {
      callId: opts.callUuid,
      streamId: "st-1",
      accountId: "MA1",
      tracks: ["inbound"],
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000 },
    },
  });
  return {
    call: {
      got,
      ended,
      dtmf: (digit) => send({ event: "dtmf", streamId: "st-1", dtmf: { digit } }),
      close: () => ws.close(),
    },
    runId: Number(url.pathname.split("/").at(-1)),
  };
}
