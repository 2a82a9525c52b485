import assert from "node:assert/strict";
import { DEFAULT_REALTIME_VAD, realtimeEnvSettings } from "../providers/realtime/env.ts";

const from = (vars: Record<string, string>) => (n: string) => vars[n];

Deno.test("realtime env: defaults per family", () => {
  assert.deepEqual(realtimeEnvSettings("gemini", from({})), {
    voice: "Fenrir",
    vad: { ...DEFAULT_REALTIME_VAD },
  });
  assert.equal(realtimeEnvSettings("openai", from({})).voice, "alloy");
  // Outside the families (xai, ultravox, ...): no voice of another vendor's catalogue.
  assert.equal(realtimeEnvSettings(undefined, from({})).voice, undefined);
  assert.equal(realtimeEnvSettings(undefined, from({ FLOWCAT_VOICE: "ara" })).voice, "ara");
  assert.deepEqual(DEFAULT_REALTIME_VAD, {
    startSensitivity: "START_SENSITIVITY_LOW",
    endSensitivity: "END_SENSITIVITY_HIGH",
    prefixPaddingMs: 500,
    silenceDurationMs: 350,
  });
});

Deno.test("realtime env: valid values are taken", () => {
  const s = realtimeEnvSettings(
    "gemini",
    from({
      FLOWCAT_VOICE: "Kore",
      FLOWCAT_VAD_START_SENSITIVITY: "START_SENSITIVITY_HIGH",
      FLOWCAT_VAD_END_SENSITIVITY: "END_SENSITIVITY_UNSPECIFIED",
      FLOWCAT_VAD_PREFIX_PADDING_MS: "120",
      FLOWCAT_VAD_SILENCE_DURATION_MS: "0",
    }),
  );
  assert.deepEqual(s, {
    voice: "Kore",
    vad: {
      startSensitivity: "START_SENSITIVITY_HIGH",
      endSensitivity: "END_SENSITIVITY_UNSPECIFIED",
      prefixPaddingMs: 120,
      silenceDurationMs: 0,
    },
  });
});

Deno.test("realtime env: each invalid value falls back with exactly one warning, never throws", () => {
  const warnings: string[] = [];
  const s = realtimeEnvSettings(
    "openai",
    from({
      FLOWCAT_VOICE: "bad voice; rm -rf",
      FLOWCAT_VAD_START_SENSITIVITY: "LOW",
      FLOWCAT_VAD_END_SENSITIVITY: "end_sensitivity_high",
      FLOWCAT_VAD_PREFIX_PADDING_MS: "-5",
      FLOWCAT_VAD_SILENCE_DURATION_MS: "4294967296",
    }),
    (w) => warnings.push(w),
  );
  assert.deepEqual(s, { voice: "alloy", vad: { ...DEFAULT_REALTIME_VAD } });
  assert.equal(warnings.length, 5);
  for (
    const name of [
      "FLOWCAT_VOICE",
      "FLOWCAT_VAD_START_SENSITIVITY",
      "FLOWCAT_VAD_END_SENSITIVITY",
      "FLOWCAT_VAD_PREFIX_PADDING_MS",
      "FLOWCAT_VAD_SILENCE_DURATION_MS",
    ]
  ) assert.equal(warnings.filter((w) => w.startsWith(name + "=")).length, 1, name);
});

Deno.test("realtime env: blank values are unset, not invalid", () => {
  const warnings: string[] = [];
  const s = realtimeEnvSettings(
    "gemini",
    from({ FLOWCAT_VOICE: "  ", FLOWCAT_VAD_PREFIX_PADDING_MS: "" }),
    (w) => warnings.push(w),
  );
  assert.equal(s.voice, "Fenrir");
  assert.equal(s.vad.prefixPaddingMs, 500);
  assert.deepEqual(warnings, []);
});
