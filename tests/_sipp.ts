/** Test helpers for running sipp (Debian `sip-tester`) against the SIP agent on loopback. */

import { ulawEncode } from "../core/audio/g711.ts";

/** A UDP port on 127.0.0.1 that was free a moment ago. */
export function freeUdpPort(): number {
  const c = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (c.addr as Deno.NetAddr).port;
  c.close();
  return port;
}

/**
 * An even port base with `count` free even ports (and their odd neighbours) after it, a range
 * holding none of `avoid` (the SIP port a config puts beside it, which the server refuses
 * inside its RTP range).
 */
export function freeEvenPortBase(count: number, avoid: readonly number[] = []): number {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + 2 * Math.floor(Math.random() * 18000);
    if (avoid.some((p) => p >= base && p < base + 2 * count)) continue;
    const held: Deno.DatagramConn[] = [];
    try {
      for (let p = base; p < base + 2 * count; p++) {
        held.push(Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: p }));
      }
      return base;
    } catch {
      // taken: try another base
    } finally {
      for (const c of held) c.close();
    }
  }
  throw new Error("no free even port range");
}

/** A free SIP port and an RTP range of `count` even ports beside it, as config fields. */
export function sipAndRtpPorts(count: number): { sip_port: number; rtp_port_base: number } {
  const sipPort = freeUdpPort();
  return { sip_port: sipPort, rtp_port_base: freeEvenPortBase(count, [sipPort]) };
}

/** True when sipp (Debian `sip-tester`) can be run here. */
export function hasSipp(): boolean {
  try {
    return new Deno.Command("sipp", { args: ["-v"], stdout: "null", stderr: "null" })
      .outputSync().code >= 0;
  } catch {
    return false;
  }
}

/** Outcome of a sipp run. */
export interface SippResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A running sipp. */
export interface Sipp {
  /** Resolves when sipp exits. */
  done: Promise<SippResult>;
  /** Kill it (when a test fails midway). */
  kill(): void;
}

/** Spawn sipp with `args` in `cwd` (default ./.tmp/sipp); it gives up after `timeout`. */
export function runSipp(args: string[], cwd = "./.tmp/sipp", timeout = "15s"): Sipp {
  Deno.mkdirSync(cwd, { recursive: true });
  const child = new Deno.Command("sipp", {
    args: [...args, "-nostdin", "-timeout", timeout, "-timeout_error"],
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const done = child.output().then((o) => ({
    code: o.code,
    stdout: new TextDecoder().decode(o.stdout),
    stderr: new TextDecoder().decode(o.stderr),
  }));
  return {
    done,
    kill: () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
    },
  };
}

/** `samples` of a `freq` Hz sine at 8 kHz, amplitude `amp`. */
export function sine8k(samples: number, freq: number, amp = 8000): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    pcm[i] = Math.round(amp * Math.sin((2 * Math.PI * freq * i) / 8000));
  }
  return pcm;
}

/**
 * A pcap (Ethernet, IPv4, UDP) of PCMU RTP packets, 20 ms apart, carrying `pcm` (8 kHz), for
 * sipp's `play_pcap_audio`.
 */
export function pcmuPcap(pcm: Int16Array, opts: { ssrc?: number; seq?: number } = {}): Uint8Array {
  const packets: Uint8Array[] = [];
  const ssrc = opts.ssrc ?? 0x1234abcd;
  let seq = opts.seq ?? 1000;
  let ts = 5000;
  for (let off = 0; off + 160 <= pcm.length; off += 160) {
    const rtp = new Uint8Array(12 + 160);
    const v = new DataView(rtp.buffer);
    rtp[0] = 0x80;
    rtp[1] = off === 0 ? 0x80 : 0x00;
    v.setUint16(2, seq++ & 0xffff);
    v.setUint32(4, ts);
    v.setUint32(8, ssrc);
    rtp.set(ulawEncode(pcm.subarray(off, off + 160)), 12);
    ts += 160;
    packets.push(rtp);
  }
  const records: Uint8Array[] = [];
  const global = new Uint8Array(24);
  const g = new DataView(global.buffer);
  g.setUint32(0, 0xa1b2c3d4, true);
  g.setUint16(4, 2, true);
  g.setUint16(6, 4, true);
  g.setUint32(16, 65535, true);
  g.setUint32(20, 1, true); // LINKTYPE_ETHERNET
  records.push(global);
  packets.forEach((rtp, i) => {
    const frame = new Uint8Array(14 + 20 + 8 + rtp.length);
    const f = new DataView(frame.buffer);
    f.setUint16(12, 0x0800);
    frame[14] = 0x45;
    f.setUint16(16, 20 + 8 + rtp.length);
    frame[22] = 64;
    frame[23] = 17;
    frame.set([127, 0, 0, 1], 26);
    frame.set([127, 0, 0, 1], 30);
    let sum = 0;
    for (let k = 14; k < 34; k += 2) sum += f.getUint16(k);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    f.setUint16(24, ~sum & 0xffff);
    f.setUint16(34, 40000);
    f.setUint16(36, 40002);
    f.setUint16(38, 8 + rtp.length);
    frame.set(rtp, 42);
    const hdr = new Uint8Array(16);
    const h = new DataView(hdr.buffer);
    const usec = i * 20000;
    h.setUint32(0, 1700000000 + Math.floor(usec / 1e6), true);
    h.setUint32(4, usec % 1e6, true);
    h.setUint32(8, frame.length, true);
    h.setUint32(12, frame.length, true);
    records.push(hdr, frame);
  });
  const total = records.reduce((n, r) => n + r.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const r of records) {
    out.set(r, o);
    o += r.length;
  }
  return out;
}

/** The sipp scenario files of the tests. */
export const SIPP_SCENARIOS: string = new URL("./fixtures/sipp/", import.meta.url).pathname;

/**
 * sipp arguments that run `scenario` once against `target` (a port on 127.0.0.1, or
 * `host:port`) on free local ports, from `localIp` (another loopback address such as 127.0.0.2
 * makes sipp a different source).
 */
export function sippArgs(
  scenario: string,
  target: number | string,
  extra: string[] = [],
  localIp = "127.0.0.1",
): string[] {
  return [
    "-sf",
    SIPP_SCENARIOS + scenario,
    typeof target === "number" ? `127.0.0.1:${target}` : target,
    "-i",
    localIp,
    "-p",
    String(freeUdpPort()),
    "-mp",
    String(freeEvenPortBase(2)),
    "-m",
    "1",
    ...extra,
  ];
}

/**
 * An agent-server config (JSON shape) for the local echo model behind a SIP trunk on
 * 127.0.0.1:`sipPort` that only 127.0.0.1 may call, running `graph`. Nothing answers its
 * REGISTER: the trunk keeps retrying in the background. The password is read from SIP_PASSWORD.
 */
export function echoSipTrunkConfig(graph: unknown, sipPort: number): Record<string, unknown> {
  return {
    agent: { graph },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
    telephony: {
      sip: {
        server: `sip:127.0.0.1:${freeUdpPort()}`,
        login: "flowcat",
        password_env: "SIP_PASSWORD",
        caller_id: "+15551230000",
        sip_port: sipPort,
        rtp_port_base: freeEvenPortBase(4, [sipPort]),
        rtp_port_tries: 4,
        allow_hosts: ["127.0.0.1"],
      },
    },
  };
}

/** sipp arguments for a UAS running `scenario` once on 127.0.0.1:`port`, echoing RTP. */
export function sippUasEchoArgs(scenario: string, port: number): string[] {
  return [
    "-sf",
    SIPP_SCENARIOS + scenario,
    "-i",
    "127.0.0.1",
    "-p",
    String(port),
    "-rtp_echo",
    "-mp",
    String(freeEvenPortBase(2)),
    "-m",
    "1",
  ];
}
