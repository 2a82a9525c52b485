/**
 * SDES keying (RFC 4568): the `a=crypto` attribute that carries an SRTP master key inside SDP,
 * and the per-stream choice the offer/answer code makes with it. Only inline keys of the
 * AES_CM_128_HMAC_SHA1_80 and _32 suites without MKI or session parameters are taken; other
 * lines are skipped, as RFC 4568 §6.1 lets an answerer do.
 *
 * @example
 * ```ts
 * import { formatCrypto, newSrtpKey, parseCrypto } from "@flowcat/flowcat/sip";
 * const line = formatCrypto(1, newSrtpKey("AES_CM_128_HMAC_SHA1_80"));
 * // "1 AES_CM_128_HMAC_SHA1_80 inline:<40 base64 characters>"
 * parseCrypto(line)?.key.suite; // "AES_CM_128_HMAC_SHA1_80"
 * ```
 * @module
 */

import type { SdpAttribute, SdpMedia } from "./sdp_parse.ts";
import { SRTP_SUITES, type SrtpKeyMaterial, type SrtpSuite } from "./srtp.ts";
import { MASTER_KEY_BYTES, MASTER_SALT_BYTES } from "./srtp_cipher.ts";

/**
 * Whether media is encrypted: `required` offers RTP/SAVP and refuses (488) offers without a
 * usable `a=crypto`; `optional` offers RTP/AVP with `a=crypto` and answers SRTP when the peer
 * offers it, plain RTP otherwise; `off` speaks plain RTP only.
 */
export type SrtpPolicy = "required" | "optional" | "off";

/** One parsed `a=crypto` line. */
export interface CryptoLine {
  /** The tag the answer echoes. */
  tag: number;
  /** Suite and master key. */
  key: SrtpKeyMaterial;
}

/** The SRTP keys both sides agreed on for one stream. */
export interface NegotiatedSrtp {
  /** Our master key: protects what we send. */
  send: SrtpKeyMaterial;
  /** The peer's master key: unprotects what we receive. */
  receive: SrtpKeyMaterial;
}

/** A fresh random master key and salt for `suite`. */
export function newSrtpKey(suite: SrtpSuite): SrtpKeyMaterial {
  const bytes = crypto.getRandomValues(new Uint8Array(MASTER_KEY_BYTES + MASTER_SALT_BYTES));
  return {
    suite,
    key: bytes.subarray(0, MASTER_KEY_BYTES),
    salt: bytes.subarray(MASTER_KEY_BYTES),
  };
}

/** The value of an `a=crypto` attribute (without `crypto:`) carrying `key` inline. */
export function formatCrypto(tag: number, key: SrtpKeyMaterial): string {
  const both = new Uint8Array(MASTER_KEY_BYTES + MASTER_SALT_BYTES);
  both.set(key.key, 0);
  both.set(key.salt, MASTER_KEY_BYTES);
  return `${tag} ${key.suite} inline:${both.toBase64()}`;
}

/** Parse an `a=crypto` value; undefined for suites, key methods or parameters we do not take. */
export function parseCrypto(value: string): CryptoLine | undefined {
  const m = /^(\d{1,9})\s+(\S+)\s+inline:([A-Za-z0-9+/=]+)(\|[^\s]*)?$/.exec(value.trim());
  if (m === null) return undefined;
  const suite = SRTP_SUITES.find((s) => s === m[2]);
  if (suite === undefined) return undefined;
  // Lifetime is fine (we never reach 2^31 packets a key); an MKI changes the packet format.
  if (m[4] !== undefined && m[4].split("|").some((p) => p.includes(":"))) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(m[3]);
  } catch {
    return undefined;
  }
  if (bytes.length !== MASTER_KEY_BYTES + MASTER_SALT_BYTES) return undefined;
  return {
    tag: Number(m[1]),
    key: {
      suite,
      key: bytes.subarray(0, MASTER_KEY_BYTES),
      salt: bytes.subarray(MASTER_KEY_BYTES),
    },
  };
}

/** The usable `a=crypto` lines of `media`, in its order. */
export function cryptoLines(media: SdpMedia): CryptoLine[] {
  const out: CryptoLine[] = [];
  for (const a of media.attributes) {
    if (a.name.toLowerCase() !== "crypto" || a.value === undefined) continue;
    const line = parseCrypto(a.value);
    if (line !== undefined) out.push(line);
  }
  return out;
}

/** RTP profiles without encryption. */
export function isPlainProfile(proto: string): boolean {
  const p = proto.toUpperCase();
  return p === "RTP/AVP" || p === "RTP/AVPF";
}

/** RTP profiles that require SRTP. */
export function isSecureProfile(proto: string): boolean {
  const p = proto.toUpperCase();
  return p === "RTP/SAVP" || p === "RTP/SAVPF";
}

/** How an offered stream is answered under a policy: plain, with this crypto line, or not. */
export type StreamSecurity = { srtp: false } | { srtp: true; offered: CryptoLine } | undefined;

/**
 * Decide an offered audio stream: a secure profile needs a usable crypto line and a policy
 * other than `off`; a plain profile with crypto lines (best-effort SRTP) is encrypted unless the
 * policy is `off`; `required` refuses plain streams without crypto.
 */
export function streamSecurity(media: SdpMedia, policy: SrtpPolicy): StreamSecurity {
  const secure = isSecureProfile(media.proto);
  if (!secure && !isPlainProfile(media.proto)) return undefined;
  if (policy === "off") return secure ? undefined : { srtp: false };
  const offered = cryptoLines(media)[0];
  if (offered !== undefined) return { srtp: true, offered };
  return secure || policy === "required" ? undefined : { srtp: false };
}

/** The crypto attributes of our offer: one line per supported suite, each its own key. */
export function offerCrypto(keys?: SrtpKeyMaterial): SdpAttribute[] {
  const list = keys === undefined ? SRTP_SUITES.map(newSrtpKey) : [keys];
  return list.map((k, i) => ({ name: "crypto", value: formatCrypto(i + 1, k) }));
}

/**
 * The keys of a stream our offer proposed and the peer accepted: the answer's crypto line
 * names the tag of ours it took. Undefined when the answer has none or it does not match.
 */
export function answeredSrtp(
  ours: SdpMedia,
  answer: SdpMedia,
): NegotiatedSrtp | undefined {
  const theirs = cryptoLines(answer)[0];
  if (theirs === undefined) return undefined;
  const mine = cryptoLines(ours).find((c) => c.tag === theirs.tag);
  if (mine === undefined || mine.key.suite !== theirs.key.suite) return undefined;
  return { send: mine.key, receive: theirs.key };
}

/** True when `a` and `b` are the same suite, key and salt. */
export function sameSrtpKey(a: SrtpKeyMaterial, b: SrtpKeyMaterial): boolean {
  return a.suite === b.suite && a.key.every((v, i) => v === b.key[i]) &&
    a.salt.every((v, i) => v === b.salt[i]);
}
