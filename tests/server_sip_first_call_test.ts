/**
 * The first call after a start: a fresh server process (under the permissions its config
 * derives) takes a SIP call whose greeting the echo agent speaks with espeak-ng, and the
 * largest gap in its outbound RTP stays under 40 ms. Before the warm-up at start (codecs, the
 * resampler's and espeak's WebAssembly), the engine loading inside the call stalled it ~300 ms.
 */

import assert from "node:assert/strict";
import { decodeRtp } from "../core/rtp.ts";
import { parseConfigText } from "../server/config.ts";
import { parseServerArgs, serverPermissionOptions } from "../server/main.ts";
import { permissionFlags, SERVER_ENTRY } from "../server/permissions.ts";
import { freeEvenPortBase, freeUdpPort } from "./_sipp.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A SIP message with CRLF line endings and a correct Content-Length. */
function sip(lines: string[], body = ""): Uint8Array {
  return enc.encode(
    [...lines, `Content-Length: ${enc.encode(body).length}`, "", body].join("\r\n"),
  );
}

/** Start a fresh server process, take its first call, and return that call's RTP timing. */
async function firstCall(): Promise<{ largest: number; packets: number; voice: number }> {
  const sipPort = freeUdpPort();
  const dir = `./.tmp/first-call-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  const configPath = `${dir}/agent.json`;
  const config = {
    agent: {
      graph: {
        version: 1,
        start: "a",
        nodes: [
          { id: "a", prompt: "Hi.", transitions: [{ name: "n", description: "n", target: "b" }] },
          { id: "b", prompt: "Bye.", terminal: true },
        ],
      },
      greeting: "Hello, thank you for calling. How can I help you today?",
    },
    providers: { realtime: { name: "echo" } },
    telephony: {
      sip: {
        server: "sip:127.0.0.1:9",
        register: false,
        caller_id: "+15551230000",
        public_ip: "127.0.0.1",
        sip_port: sipPort,
        rtp_port_base: freeEvenPortBase(2, [sipPort]),
        rtp_port_tries: 2,
        keepalive: { mode: "off" },
        allow_hosts: ["127.0.0.1"],
        inbound: { allow: ["127.0.0.1"] },
      },
    },
    server: { port: 0 },
    playground: { enabled: false },
  };
  Deno.writeTextFileSync(configPath, JSON.stringify(config));
  const parsed = await parseConfigText(JSON.stringify(config), "json", dir);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  // Exactly what `deno task start` grants this config (the launcher's computation).
  const flags = permissionFlags(
    parsed.config,
    serverPermissionOptions(parsed.config, parseServerArgs(["--config", configPath])),
  );
  const child = new Deno.Command("deno", {
    args: ["run", "--no-prompt", ...flags, SERVER_ENTRY, "--config", configPath],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  const signalling = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const media = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const me = (signalling.addr as Deno.NetAddr).port;
  const to = { transport: "udp" as const, hostname: "127.0.0.1", port: sipPort };
  const next = (ms: number) =>
    Promise.race([
      signalling.receive().then(([b]) => dec.decode(b)),
      new Promise<undefined>((r) => setTimeout(() => r(undefined), ms)),
    ]);
  try {
    // The server answers OPTIONS once it is up (warm-up included).
    let up = false;
    for (let i = 0; i < 150 && !up; i++) {
      await signalling.send(
        sip([
          "OPTIONS sip:agent@127.0.0.1 SIP/2.0",
          `Via: SIP/2.0/UDP 127.0.0.1:${me};branch=z9hG4bKup${i}`,
          "From: <sip:probe@127.0.0.1>;tag=p",
          "To: <sip:agent@127.0.0.1>",
          `Call-ID: up-${i}`,
          "CSeq: 1 OPTIONS",
        ]),
        to,
      );
      up = (await next(200))?.startsWith("SIP/2.0 200") === true;
    }
    assert.ok(up, "the server never answered OPTIONS");
    const sdp = [
      "v=0",
      "o=- 1 1 IN IP4 127.0.0.1",
      "s=-",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${(media.addr as Deno.NetAddr).port} RTP/AVP 0`,
      "a=rtpmap:0 PCMU/8000",
      "",
    ].join("\r\n");
    const head = (method: string, seq: number, branch: string, toTag = "") => [
      `${method} sip:+15557654321@127.0.0.1:${sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${me};branch=${branch}`,
      "From: <sip:+15550001111@127.0.0.1>;tag=caller",
      `To: <sip:+15557654321@127.0.0.1>${toTag}`,
      "Call-ID: first-call",
      `CSeq: ${seq} ${method}`,
      `Contact: <sip:caller@127.0.0.1:${me}>`,
    ];
    await signalling.send(
      sip([...head("INVITE", 1, "z9hG4bKinv"), "Content-Type: application/sdp"], sdp),
      to,
    );
    let ok: string | undefined;
    while (!(ok = await next(5000))?.startsWith("SIP/2.0 200")) assert.ok(ok, "no 200 OK");
    const tag = ";tag=" + /^To:.*;tag=([^;\s]+)/m.exec(ok)![1];
    await signalling.send(sip(head("ACK", 1, "z9hG4bKack", tag)), to);
    const arrivals: number[] = [];
    let voice = 0;
    const end = performance.now() + 3000;
    const buf = new Uint8Array(2048);
    while (performance.now() < end) {
      const got = await Promise.race([
        media.receive(buf),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 200)),
      ]);
      if (got === undefined) continue;
      arrivals.push(performance.now());
      if (!decodeRtp(got[0])!.payload.every((b) => b === 0xff)) voice++;
    }
    await signalling.send(sip(head("BYE", 2, "z9hG4bKbye", tag)), to);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]);
    return { largest: Math.max(...gaps), packets: arrivals.length, voice };
  } finally {
    signalling.close();
    media.close();
    child.kill("SIGTERM");
    const out = await output;
    if (!/\bstopped\b/.test(dec.decode(out.stdout))) console.error(dec.decode(out.stderr));
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("first call after a start: largest outbound RTP gap under 40 ms", async () => {
  // A stall in the server (what the warm-up removed was ~300 ms) shows in every fresh process;
  // other work on a shared 2-core machine can preempt one run past 40 ms, so a second fresh
  // process is allowed before failing.
  const runs: string[] = [];
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = await firstCall();
    assert.ok(r.packets > 100, `only ${r.packets} packets in 3 s`);
    assert.ok(r.voice > 25, `the greeting was not heard (${r.voice} voice packets)`);
    runs.push(`${r.largest.toFixed(1)} ms`);
    if (r.largest < 40) return;
  }
  assert.fail(`largest outbound gap of the first call: ${runs.join(", ")}`);
});
