/**
 * SSML for Azure synthesis, built so that nothing the model says can become markup: the text,
 * the voice and the language are XML-escaped, and the speaking rate is one of the forms SSML
 * allows (checked at start, not escaped into something the service would reject mid-call).
 * The envelope is the Speech SDK's (src/sdk/Synthesizer.ts, buildSsml and XMLEncode).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";

const XML_ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

/** `text` with the five XML special characters as entities, and control characters dropped. */
export function xmlEscape(text: string): string {
  // XML 1.0 forbids C0 controls other than tab, LF and CR, even as character references.
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "")
    .replace(/[&<>"']/g, (c) => XML_ENTITIES[c]);
}

const RATE_WORDS = new Set(["x-slow", "slow", "medium", "fast", "x-fast", "default"]);

/**
 * A `<prosody rate>` value from the config: a multiplier (0.5 to 2), a relative percentage
 * (`+10%`, `-20%`) or an SSML word (`slow`, `fast`...). Anything else is a config error.
 */
export function ssmlRate(provider: string, rate: unknown): string | undefined {
  if (rate === undefined) return undefined;
  if (typeof rate === "number" && Number.isFinite(rate) && rate >= 0.5 && rate <= 2) {
    return String(rate);
  }
  if (typeof rate === "string" && (RATE_WORDS.has(rate) || /^[+-]\d{1,3}(\.\d+)?%$/.test(rate))) {
    return rate;
  }
  throw new FlowcatError(
    "config",
    `${provider}: options.rate must be a number from 0.5 to 2, a percentage such as +10%, ` +
      `or one of ${[...RATE_WORDS].join(", ")}`,
  );
}

/** What one utterance's SSML says. */
export interface SsmlInput {
  /** Plain text to speak (escaped here). */
  text: string;
  /** Voice name, e.g. `en-US-AvaMultilingualNeural`. */
  voice: string;
  /** `xml:lang`, e.g. `en-US`. */
  language: string;
  /** A value from {@link ssmlRate}; absent: the voice's own rate. */
  rate?: string;
}

/** The `<speak>` document for one utterance. */
export function buildSsml(input: SsmlInput): string {
  let body = xmlEscape(input.text);
  if (input.rate !== undefined) body = `<prosody rate='${xmlEscape(input.rate)}'>${body}</prosody>`;
  return `<speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' ` +
    `xmlns:mstts='http://www.w3.org/2001/mstts' xml:lang='${xmlEscape(input.language)}'>` +
    `<voice name='${xmlEscape(input.voice)}'>${body}</voice></speak>`;
}

/** The locale a voice name starts with (`en-US-AvaNeural` -> `en-US`); `en-US` otherwise. */
export function voiceLanguage(voice: string): string {
  return /^([a-z]{2,3}-[A-Z]{2})-/.exec(voice)?.[1] ?? "en-US";
}
