/**
 * Test helper: Debian's baresip run headless on loopback with a config directory of its own
 * (under ./.tmp): G.711 only, a WAV file as its microphone, received audio dumped to WAV by the
 * `sndfile` module, SRTP (SDES) per account parameter, auto-answer for calls to +15557654321.
 */

import { decodeWav, encodeWav } from "../core/audio/wav.ts";
import { freeEvenPortBase, freeUdpPort } from "./_sipp.ts";

/** True when baresip can be run here. */
export function hasBaresip(): boolean {
  try {
    new Deno.Command("baresip", { args: ["-h"], stdout: "null", stderr: "null" }).outputSync();
    return true;
  } catch {
    return false;
  }
}

/** How baresip encrypts media: `srtp-mand` (RTP/SAVP), `srtp` (best effort) or none. */
export type BaresipMediaEnc = "srtp-mand" | "srtp" | "none";

/** A running baresip. */
export interface Baresip {
  /** Its SIP port on 127.0.0.1 (UDP). */
  sipPort: number;
  /** Resolves when it exits, with everything it printed. */
  done: Promise<{ code: number; output: string }>;
  /** The audio it decoded from the call (8 kHz mono), once it exited. */
  received(): Int16Array;
  /** Press keys on its console (the `cons` module, over UDP): digits in a call send RFC 4733. */
  press(keys: string): Promise<void>;
  /**
   * Resolves once it listens: its TCP port on the SIP port number accepts and, with TLS, its
   * TLS port (one above) too; baresip binds them one after the other, and a call placed
   * before the TLS listener is up is refused at once.
   */
  ready(): Promise<void>;
  /** Stop it early; idempotent. */
  kill(): void;
  /** Remove its directory. */
  cleanup(): void;
}

/** Options of {@link startBaresip}. */
export interface BaresipOptions {
  /** What it sends: 8 kHz mono PCM (looped to fill the call). */
  tone: Int16Array;
  /** Media encryption of its account. */
  mediaenc: BaresipMediaEnc;
  /** A SIP URI to dial at start; none waits for a call (auto-answered). */
  dial?: string;
  /** Quit after this many seconds (hanging up a call still up). */
  quitAfterSeconds: number;
  /** Print every SIP message it sends and receives (`-s`). */
  sipTrace?: boolean;
  /** TLS: its certificate and key (one PEM file), and the CA file it trusts. */
  tls?: { certAndKeyFile: string; caFile: string };
}

/**
 * A SIP port for baresip: free for UDP and TCP, with TCP free one above (its TLS port), so a
 * port some other connection holds cannot leave baresip without a listener.
 */
function freeSipPort(): number {
  for (let attempt = 0;; attempt++) {
    const port = freeUdpPort();
    const held: Deno.Listener[] = [];
    try {
      held.push(Deno.listen({ hostname: "127.0.0.1", port }));
      held.push(Deno.listen({ hostname: "127.0.0.1", port: port + 1 }));
      return port;
    } catch (err) {
      if (attempt >= 50) throw err;
    } finally {
      for (const l of held) l.close();
    }
  }
}

/** Start baresip with its own config directory. */
export function startBaresip(opts: BaresipOptions): Baresip {
  const dir = `${Deno.cwd()}/.tmp/baresip-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  const sipPort = freeSipPort();
  const consolePort = freeUdpPort();
  const rtpBase = freeEvenPortBase(8);
  Deno.writeFileSync(`${dir}/tone.wav`, encodeWav(opts.tone, 8000));
  Deno.writeTextFileSync(
    `${dir}/config`,
    [
      "poll_method epoll",
      `sip_listen 127.0.0.1:${sipPort}`,
      "sip_trans_def udp",
      // Bind and advertise loopback, not the machine's first interface.
      "net_interface 127.0.0.1",
      `audio_source aufile,${dir}/tone.wav`,
      "audio_player aubridge,nil",
      "audio_alert aubridge,nil",
      `rtp_ports ${rtpBase}-${rtpBase + 15}`,
      "module_path /usr/lib/baresip/modules",
      "module g711.so",
      "module aufile.so",
      "module aubridge.so",
      "module srtp.so",
      "module cons.so",
      `cons_listen 127.0.0.1:${consolePort}`,
      "module sndfile.so",
      "module_app account.so",
      "module_app menu.so",
      `snd_path ${dir}`,
      ...(opts.tls === undefined
        ? []
        : [`sip_certificate ${opts.tls.certAndKeyFile}`, `sip_cafile ${opts.tls.caFile}`]),
      "",
    ].join("\n"),
  );
  const enc = opts.mediaenc === "none" ? "" : `;mediaenc=${opts.mediaenc}`;
  Deno.writeTextFileSync(
    `${dir}/accounts`,
    `<sip:+15557654321@127.0.0.1:${sipPort}>;regint=0;answermode=auto;audio_codecs=PCMU${enc}\n`,
  );
  Deno.writeTextFileSync(`${dir}/contacts`, "");
  // -v: debug lines, where baresip reports received RFC 4733 digits.
  const args = ["-v", "-f", dir, "-t", String(opts.quitAfterSeconds)];
  if (opts.sipTrace === true) args.push("-s");
  if (opts.dial !== undefined) args.push("-e", `/dial ${opts.dial}`);
  const child = new Deno.Command("baresip", {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let killed = false;
  const done = child.output().then((out) => ({
    code: out.code,
    output: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  }));
  return {
    sipPort,
    done,
    received(): Int16Array {
      const dump = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith("-dec.wav"));
      if (dump === undefined) return new Int16Array(0);
      return decodeWav(Deno.readFileSync(`${dir}/${dump.name}`)).pcm;
    },
    async press(keys: string): Promise<void> {
      const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
      try {
        for (const k of keys) {
          await sock.send(new TextEncoder().encode(k), {
            transport: "udp",
            hostname: "127.0.0.1",
            port: consolePort,
          });
          await new Promise((r) => setTimeout(r, 250));
        }
      } finally {
        sock.close();
      }
    },
    async ready(): Promise<void> {
      const end = performance.now() + 5000;
      const ports = opts.tls === undefined ? [sipPort] : [sipPort, sipPort + 1];
      for (const port of ports) {
        for (;;) {
          try {
            (await Deno.connect({ hostname: "127.0.0.1", port })).close();
            break;
          } catch (err) {
            if (performance.now() > end) throw err;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      }
    },
    kill(): void {
      if (killed) return;
      killed = true;
      try {
        child.kill("SIGTERM");
      } catch {
        // already exited
      }
    },
    cleanup(): void {
      Deno.removeSync(dir, { recursive: true });
    },
  };
}
