/**
 * `FLOWCAT_VOICE` and `FLOWCAT_VAD_*`: the realtime turn-taking and voice knobs an operator sets
 * in the environment. Invalid values fall back to the default with one warning line; they never
 * raise an error. The cascaded path ignores them.
 *
 * Permissions: `--allow-env` of the `FLOWCAT_VOICE` / `FLOWCAT_VAD_*` names you read with
 * `Deno.env.get` and pass in (the module itself reads no variable).
 *
 * @example
 * ```ts
 * import { realtimeEnvSettings } from "@flowcat/flowcat/realtime/env";
 * const s = realtimeEnvSettings("gemini", (n) => Deno.env.get(n));
 * s.voice; // "Fenrir" unless FLOWCAT_VOICE is set
 * ```
 * @module
 */

import type { RealtimeVadSettings } from "../../core/seams.ts";

/** Which provider family the settings are for (voice defaults differ). */
export type RealtimeFamily = "gemini" | "openai";

/** Default voice per family. */
export const DEFAULT_VOICES: Readonly<Record<RealtimeFamily, string>> = Object.freeze({
  gemini: "Fenrir",
  openai: "alloy",
});

/** Allowed start-of-speech sensitivities (Gemini enum names). */
export const START_SENSITIVITIES = [
  "START_SENSITIVITY_UNSPECIFIED",
  "START_SENSITIVITY_LOW",
  "START_SENSITIVITY_HIGH",
] as const;

/** Allowed end-of-speech sensitivities (Gemini enum names). */
export const END_SENSITIVITIES = [
  "END_SENSITIVITY_UNSPECIFIED",
  "END_SENSITIVITY_LOW",
  "END_SENSITIVITY_HIGH",
] as const;

/** The defaults: a brief caller sound is not a turn; the agent answers promptly. */
export const DEFAULT_REALTIME_VAD: Readonly<Required<RealtimeVadSettings>> = Object.freeze({
  startSensitivity: "START_SENSITIVITY_LOW",
  endSensitivity: "END_SENSITIVITY_HIGH",
  prefixPaddingMs: 500,
  silenceDurationMs: 350,
});

/** Voice and VAD settings resolved from the environment. */
export interface RealtimeEnvSettings {
  /** Voice name (`FLOWCAT_VOICE`, else the family's default; none: the client's own). */
  voice: string | undefined;
  /** Server-side VAD tuning, each field from its `FLOWCAT_VAD_*` variable or the default. */
  vad: Required<RealtimeVadSettings>;
}

/** Names of the variables read, for `--allow-env` lists. */
export const REALTIME_ENV_NAMES: readonly string[] = Object.freeze([
  "FLOWCAT_VOICE",
  "FLOWCAT_VAD_START_SENSITIVITY",
  "FLOWCAT_VAD_END_SENSITIVITY",
  "FLOWCAT_VAD_PREFIX_PADDING_MS",
  "FLOWCAT_VAD_SILENCE_DURATION_MS",
]);

const U32_MAX = 0xffff_ffff;

/**
 * Read the realtime knobs through `get` (e.g. `(n) => Deno.env.get(n)`); every invalid value
 * is replaced by its default and reported once through `warn`. A provider outside the families
 * (`family` undefined) has no default voice here: its client picks its own, since a voice of
 * another vendor's catalogue would be refused.
 */
export function realtimeEnvSettings(
  family: RealtimeFamily | undefined,
  get: (name: string) => string | undefined,
  warn: (line: string) => void = () => {},
): RealtimeEnvSettings {
  const pick = <T extends string>(name: string, allowed: readonly T[], def: T): T => {
    const raw = get(name)?.trim();
    if (raw === undefined || raw === "") return def;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    warn(`${name}=${JSON.stringify(raw)} is not one of ${allowed.join(", ")}; using ${def}`);
    return def;
  };
  const ms = (name: string, def: number): number => {
    const raw = get(name)?.trim();
    if (raw === undefined || raw === "") return def;
    if (/^\d+$/.test(raw) && Number(raw) <= U32_MAX) return Number(raw);
    warn(`${name}=${JSON.stringify(raw)} is not a whole number of milliseconds; using ${def}`);
    return def;
  };
  const rawVoice = get("FLOWCAT_VOICE")?.trim();
  let voice = family === undefined ? undefined : DEFAULT_VOICES[family];
  if (rawVoice !== undefined && rawVoice !== "") {
    if (/^[A-Za-z0-9_.-]{1,64}$/.test(rawVoice)) voice = rawVoice;
    else {
      warn(
        `FLOWCAT_VOICE=${JSON.stringify(rawVoice)} is not a voice name; using ${
          voice ?? "the provider's default"
        }`,
      );
    }
  }
  const d = DEFAULT_REALTIME_VAD;
  return {
    voice,
    vad: {
      startSensitivity: pick(
        "FLOWCAT_VAD_START_SENSITIVITY",
        START_SENSITIVITIES,
        "START_SENSITIVITY_LOW",
      ),
      endSensitivity: pick(
        "FLOWCAT_VAD_END_SENSITIVITY",
        END_SENSITIVITIES,
        "END_SENSITIVITY_HIGH",
      ),
      prefixPaddingMs: ms("FLOWCAT_VAD_PREFIX_PADDING_MS", d.prefixPaddingMs),
      silenceDurationMs: ms("FLOWCAT_VAD_SILENCE_DURATION_MS", d.silenceDurationMs),
    },
  };
}
