/**
 * WebRTC media leg on werift: the browser playground's {@link MediaTransport}.
 *
 * The server answers a browser's SDP offer without trickle ICE (the answer carries every
 * candidate). Audio is Opus (48 kHz wideband, libopus in WebAssembly) both ways when the browser
 * offers it, as every browser does; else PCMU, else PCMA (G.711, 8 kHz): ./webrtc_codec.ts.
 * Inbound RTP goes through an adaptive jitter buffer and is decoded (lost packets concealed) to
 * PCM at the codec's rate; outbound audio at any rate is resampled to it, encoded and paced at
 * one 20 ms packet per tick. A data channel named `"events"` carries JSON both ways: the server
 * pushes transcript, node and state events with {@link WebRtcSession.sendEvent}; the page's
 * `{type:"hangup"}` ends the session.
 *
 * Permissions: `--allow-net=0.0.0.0` (UDP sockets) and the browsers' addresses,
 * `--allow-sys=networkInterfaces` for ICE mode `"interfaces"`, and `--ignore-env` (or
 * `--allow-env`): a dependency of werift lists the environment when this module loads.
 *
 * @example
 * ```ts
 * import { answerWebRtcOffer } from "@flowcat/flowcat/transports/webrtc";
 * // in POST /webrtc/offer:
 * // const { sdp } = await req.json();
 * // const { answerSdp, session } = await answerWebRtcOffer(sdp, { ice: "interfaces" });
 * // runCall(session); // session is a MediaTransport
 * // return Response.json({ sdp: answerSdp });
 * ```
 * @module
 */

import { Buffer } from "node:buffer";
import { RTCPeerConnection } from "npm:werift@0.25.2";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import { WebRtcSession, type WebRtcSessionOptions } from "./webrtc_session.ts";
import {
  checkWebRtcCodecs,
  codecListText,
  codecOfMime,
  offeredCodecs,
  openMediaCodec,
  rtpCodecParameters,
  type WebRtcCodec,
} from "./webrtc_codec.ts";
import {
  type IceMode,
  icePeerConfig,
  type IceServer,
  missingIcePermissions,
} from "./webrtc_ice.ts";

export {
  iceModeForHost,
  icePermissions,
  isLoopbackHost,
  missingIcePermissions,
} from "./webrtc_ice.ts";
export type { IceMode, IcePermissions, IceServer } from "./webrtc_ice.ts";
export {
  EVENTS_CHANNEL,
  type WebRtcInboundStats,
  WebRtcSession,
  type WebRtcSessionOptions,
} from "./webrtc_session.ts";
export { DEFAULT_WEBRTC_CODECS, type WebRtcCodec } from "./webrtc_codec.ts";

/** Options of {@link answerWebRtcOffer}. */
export interface WebRtcAnswerOptions extends WebRtcSessionOptions {
  /**
   * Where ICE gathers candidates; default `"interfaces"` (every LAN interface plus 127.0.0.1,
   * needs `--allow-sys=networkInterfaces`). `"loopback"` suits sandboxes and tests only: an
   * ordinary browser cannot pair with a 127.0.0.1-only server. See {@link iceModeForHost}.
   */
  ice?: IceMode;
  /** More addresses advertised as host candidates (e.g. the public IP of a 1:1 NAT). */
  iceAdditionalHostAddresses?: string[];
  /** STUN/TURN servers; none by default. */
  iceServers?: IceServer[];
  /** Codecs to accept, most preferred first; default `["opus", "pcmu", "pcma"]`. */
  codecs?: readonly WebRtcCodec[];
  /** Longest wait for local candidate gathering before answering; default 5000 ms. */
  gatherTimeoutMs?: number;
}

/** What {@link answerWebRtcOffer} returns. */
export interface WebRtcAnswer {
  /** The SDP answer, candidates included; send it back to the browser. */
  answerSdp: string;
  /** The call's media leg. */
  session: WebRtcSession;
}

/**
 * Answer a browser's SDP offer: negotiates audio (the first of `codecs` the offer has: Opus,
 * PCMU, PCMA by default) and the `"events"` data channel, waits for local ICE gathering to
 * complete, and returns the answer with a live session. Throws `FlowcatError("protocol")` for
 * an offer without any of those codecs or when no candidate could be gathered, and
 * `FlowcatError("config")` for an unknown codec name or an ICE mode whose Deno permissions are
 * missing; on any failure every werift resource is already released.
 */
export async function answerWebRtcOffer(
  offerSdp: string,
  opts: WebRtcAnswerOptions = {},
): Promise<WebRtcAnswer> {
  const codecs = checkWebRtcCodecs(opts.codecs);
  if (typeof offerSdp !== "string" || !offerSdp.trimStart().startsWith("v=0")) {
    throw new FlowcatError("protocol", "webrtc offer: body is not an SDP offer");
  }
  if (offeredCodecs(offerSdp, codecs).length === 0) {
    throw new FlowcatError("protocol", `webrtc offer: no audio offering ${codecListText(codecs)}`);
  }
  const ice = opts.ice ?? "interfaces";
  const missing = missingIcePermissions(ice);
  if (missing.length > 0) {
    throw new FlowcatError(
      "config",
      `webrtc: ICE mode ${JSON.stringify(ice)} needs ${missing.join(" ")}`,
    );
  }
  const pc = new RTCPeerConnection({
    ...icePeerConfig(ice, opts.iceAdditionalHostAddresses, opts.iceServers),
    // ICE-lite: the browser (a full agent) runs every check and we answer each one from
    // whatever address it comes, which is how an mDNS-hidden or NATed browser is learned
    // (peer-reflexive). A full werift agent would also ask a public STUN server for our
    // address when none is configured: a lite agent asks nobody.
    iceLite: true,
    codecs: { audio: rtpCodecParameters(codecs), video: [] },
  });
  const session = new WebRtcSession(pc, opts);
  try {
    await pc.setRemoteDescription({ type: "offer", sdp: withoutMdnsCandidates(offerSdp) });
    preferGcmSrtp(pc);
    const audio = pc.getTransceivers().find((t) => t.kind === "audio");
    if (!audio) throw new FlowcatError("protocol", "webrtc offer: no audio transceiver");
    audio.setDirection("sendrecv");
    // The negotiated codecs, in our order, with the browser's payload types.
    const chosen = audio.codecs.find((c) => codecOfMime(c.mimeType, c.clockRate) !== undefined);
    if (!chosen) {
      throw new FlowcatError("protocol", "webrtc offer: audio rejected (no common codec)");
    }
    session.bindSender(
      (bytes) => void audio.sender.sendRtp(Buffer.from(bytes)).catch(() => {}),
      await openMediaCodec(codecOfMime(chosen.mimeType, chosen.clockRate)!),
      chosen.payloadType,
    );
    await pc.setLocalDescription(await pc.createAnswer());
    await waitForGathering(pc, opts.gatherTimeoutMs ?? 5000);
    const answerSdp = sessionLevelIceLite(pc.localDescription?.sdp);
    if (!answerSdp) throw new FlowcatError("protocol", "webrtc: no local description");
    if (!/^a=candidate:/m.test(answerSdp)) {
      throw new FlowcatError("protocol", "webrtc: no local ICE candidate could be gathered");
    }
    if (!/^m=audio [1-9]/m.test(answerSdp)) {
      throw new FlowcatError("protocol", "webrtc offer: audio rejected (no common codec)");
    }
    return { answerSdp, session };
  } catch (err) {
    await session.close();
    if (err instanceof FlowcatError) throw err;
    throw new FlowcatError("protocol", `webrtc offer: ${errorMessage(err)}`, { cause: err });
  }
}

/**
 * The offer without its mDNS host candidates (`<uuid>.local`). Browsers hide their LAN address
 * behind such names; resolving them would take multicast sockets and permissions a server
 * should not need. An ICE-lite answerer never dials them anyway: the browser's checks arrive
 * from the real address, which ICE learns as a peer-reflexive candidate.
 */
export function withoutMdnsCandidates(sdp: string): string {
  return sdp.replace(/^a=candidate:\S+ \d+ \S+ \d+ \S+\.local \d+ .*\r?\n/gim, "");
}

/**
 * werift writes `a=ice-lite` in each media section, where RFC 8839 does not allow it and
 * browsers do not look: moved to the session section, before the first `m=` line.
 */
function sessionLevelIceLite(sdp: string | undefined): string | undefined {
  if (sdp === undefined || !/^a=ice-lite\r?$/m.test(sdp)) return sdp;
  const eol = sdp.includes("\r\n") ? "\r\n" : "\n";
  const lines = sdp.split(/\r?\n/).filter((l) => l !== "a=ice-lite");
  const firstMedia = lines.findIndex((l) => l.startsWith("m="));
  lines.splice(firstMedia < 0 ? lines.length : firstMedia, 0, "a=ice-lite");
  return lines.join(eol);
}

/** SRTP_AEAD_AES_128_GCM (RFC 7714), the only profile werift runs without leaking. */
const SRTP_AEAD_AES_128_GCM = 7;

/**
 * Offer only the AES-GCM SRTP profile in the DTLS handshake. werift's AES-CM path makes one
 * node:crypto cipher per packet and never finalizes it; under Deno each is a resource that
 * stays open (100 a second for a call), whereas the GCM path finalizes every cipher. Chrome,
 * Firefox and Safari all support GCM. The field is private in werift's typings, hence the cast.
 */
function preferGcmSrtp(pc: RTCPeerConnection): void {
  for (const t of pc.dtlsTransports) {
    (t as unknown as { srtpProfiles: number[] }).srtpProfiles = [SRTP_AEAD_AES_128_GCM];
  }
}

function waitForGathering(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    const sub = pc.iceGatheringStateChange.subscribe((s) => s === "complete" && done());
    function done() {
      clearTimeout(timer);
      sub.unSubscribe();
      resolve();
    }
  });
}
