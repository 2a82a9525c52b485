/**
 * A local WebSocket client speaking Twilio's media-stream framing, against a Deno.serve
 * server whose upgraded socket is handed to `onTransport` as a WsMediaTransport.
 */
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { twilioSignature } from "../telephony/security.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { sleep } from "./_core_helpers.ts";
import type { AgentServer } from "../server/app.ts";

/** The caller's side of a Twilio-framed call. */
export interface TwilioCall {
  /** Every JSON message the server sent. */
  got: Record<string, unknown>[];
  /** Settles once the server closed the socket (or it failed). */
  ended: Promise<void>;
  send(o: unknown): Promise<void>;
  /** Send 8 kHz PCM as 20 ms mu-law media messages, one every `pauseMs` (default 20: real time). */
  speak(pcm8k: Int16Array, pauseMs?: number): Promise<void>;
  /** Outbound media messages so far. */
  media(): Record<string, unknown>[];
  /** Decoded PCM of `msgs` (media messages). */
  decode(msgs: Record<string, unknown>[]): Int16Array;
  dtmf(digit: string): Promise<void>;
  hangup(): Promise<void>;
  close(): Promise<void>;
}

/** Open a server + Twilio client; the start message carries `token` as a custom parameter. */
export function twilioCall(
  onTransport: (t: WsMediaTransport) => void,
  token = "t",
): Promise<TwilioCall> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    onTransport(new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer()));
    return response;
  });
  const url = `ws://127.0.0.1:${server.addr.port}/telephony/ws/twilio/1`;
  return twilioClient(url, token, () => server.shutdown());
}

/**
 * Dial `url` as Twilio would: `connected`, then `start` with `token` as a custom parameter.
 * `onClose` runs after the socket is closed by {@link TwilioCall.close}.
 */
export async function twilioClient(
  url: string,
  token: string,
  onClose: () => Promise<void> = () => Promise.resolve(),
): Promise<TwilioCall> {
  const ws = new WebSocket(url);
  const client = socketFromWebSocket(ws);
  await client.opened;
  const got: Record<string, unknown>[] = [];
  const ended = (async () => {
    for (;;) {
      const m = await client.recv();
      if (m === undefined || m.type === "close") break;
      if (m.type === "text") got.push(JSON.parse(m.data));
    }
  })().catch(() => {});
  const send = (o: unknown) => client.sendText(JSON.stringify(o));
  await send({ event: "connected", protocol: "Call", version: "1.0.0" });
  await send({
    event: "start",
    streamSid: "MZ1",
    start: {
      streamSid: "MZ1",
      callSid: "CA1",
      customParameters: { token },
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  });
  const media = () => got.filter((m) => m.event === "media");
  return {
    got,
    ended,
    send,
    media,
    async speak(pcm, pauseMs = 20) {
      const mu = ulawEncode(pcm);
      for (let i = 0; i < mu.length; i += 160) {
        await send({
          event: "media",
          streamSid: "MZ1",
          media: { track: "inbound", payload: mu.subarray(i, i + 160).toBase64() },
        });
        await sleep(pauseMs);
      }
    },
    decode: (msgs) =>
      ulawDecode(
        Uint8Array.from(
          msgs.flatMap((m) => [...Uint8Array.fromBase64((m.media as { payload: string }).payload)]),
        ),
      ),
    dtmf: (digit) =>
      send({ event: "dtmf", streamSid: "MZ1", dtmf: { track: "inbound_track", digit } }),
    hangup: () => send({ event: "stop", streamSid: "MZ1", stop: { callSid: "CA1" } }),
    close: async () => {
      ws.close();
      await onClose();
    },
  };
}

let sids = 0;

/**
 * Dial an agent server in as Twilio does (or answer a call it placed, with `runId`): POST its
 * signed answer webhook (a fresh CallSid each
 * time, so the replay guard lets it in), then open the media WebSocket the TwiML names, on
 * `base` (the server's local origin) instead of the public one.
 */
export async function dialTwilio(
  base: string,
  opts: { secret: string; publicUrl: string; callSid?: string; runId?: number },
): Promise<{ call: TwilioCall; runId: number; token: string }> {
  const params = { CallSid: opts.callSid ?? `CA${++sids}` };
  // A placed call's run is named in the path (its answer URL); an inbound call gets a new one.
  const path = `/telephony/answer/twilio${opts.runId === undefined ? "" : `/${opts.runId}`}`;
  const sig = await twilioSignature(opts.secret, `${opts.publicUrl}${path}`, params);
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: new URLSearchParams(params).toString(),
  });
  const twiml = await res.text();
  const m = /url="([^"]+)"/.exec(twiml);
  if (m === null) throw new Error(`answer webhook: HTTP ${res.status}: ${twiml}`);
  const url = new URL(m[1].replaceAll("&amp;", "&"));
  const ws = `${base.replace("http", "ws")}${url.pathname}${url.search}`;
  const token = url.searchParams.get("token")!;
  const call = await twilioClient(ws, token);
  return { call, runId: Number(url.pathname.split("/").at(-1)), token };
}

/** A caller turn a VAD hears: 0.4 s of a 440 Hz tone, then 0.8 s of silence (sent quickly). */
export async function speakTurn(call: TwilioCall): Promise<void> {
  await call.speak(sine({ freq: 440, sampleRate: 8000, samples: 3200, amplitude: 9000 }));
  await call.speak(new Int16Array(6400));
}

/** A Twilio-framed call into an agent server's call manager: its run, the caller, the report. */
export interface AgentServerCall {
  run: { runId: number; token: string };
  call: TwilioCall;
  /** Settles with the call's report once the server has finished the call. */
  report: Promise<unknown>;
}

/** A carrier run on `app` and a Twilio-framed call into it, run by the app's call manager. */
export async function agentServerCall(app: AgentServer): Promise<AgentServerCall> {
  const run = await app.sessions.createRun("carrier", { carrier: "twilio" });
  let report: Promise<unknown> | undefined;
  const call = await twilioCall((t) => (report = app.calls.run(t, run)), run.token);
  // The server side is built when it accepts the socket, which the client's open waited for.
  if (report === undefined) throw new Error("the call was not accepted");
  return { run, call, report };
}
