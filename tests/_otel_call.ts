/**
 * What the OpenTelemetry export tests share: the cascaded config they run the real server with
 * (local whisper-style STT and OpenAI-style LLM fakes, eSpeak NG in process, Twilio), and a wait
 * for the bot's line to finish.
 */
import { sine } from "../core/audio/pcm.ts";
import { until } from "./_core_helpers.ts";
import type { TwilioCall } from "./_twilio_client.ts";

/** The public origin the configs give carriers. */
export const OTEL_PUBLIC_URL = "https://agent.example.com";

/**
 * Write `<dir>/<name>` (default `agent.yaml`): the echo graph greeting "Hi there.", a cascaded
 * pipeline of speaches at `stt`, Ollama at `llm` (model `tiny-llm`) and eSpeak, Twilio, and
 * `extra` YAML lines. Returns its path.
 */
export async function writeCascadedConfig(
  dir: string,
  stt: string,
  llm: string,
  opts: { extra?: string; name?: string } = {},
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.copyFile("examples/echo_graph.yaml", `${dir}/echo_graph.yaml`);
  const path = `${dir}/${opts.name ?? "agent.yaml"}`;
  await Deno.writeTextFile(
    path,
    `version: 1
agent: { graph: echo_graph.yaml, greeting: "Hi there." }
pipeline: cascaded
providers:
  stt: { name: speaches, url: "${stt}/v1" }
  llm: { name: ollama, url: "${llm}", model: tiny-llm }
  tts: { name: espeak }
telephony: { public_url: "${OTEL_PUBLIC_URL}", carriers: [twilio] }
playground: { enabled: false }
${opts.extra ?? ""}`,
  );
  return path;
}

/** A 440 Hz tone at 8 kHz: the caller speaking, as the VAD hears it. */
export function tone(seconds: number): Int16Array {
  return sine({
    freq: 440,
    sampleRate: 8000,
    samples: Math.round(8000 * seconds),
    amplitude: 9000,
  });
}

/** The caller says something: a second of tone, then 1.2 s of silence (the turn ends). */
export async function callerSays(call: TwilioCall): Promise<void> {
  await call.speak(tone(1));
  await call.speak(new Int16Array(8000 * 1.2));
}

/**
 * While the bot's long reply plays: talk over it (the far end is cleared), let the second turn
 * reach the model (`chats()` becomes 2), hang up, and wait for the call-end line in `stderr()`.
 */
export async function bargeInThenHangUp(
  call: TwilioCall,
  chats: () => number,
  stderr: () => string,
): Promise<void> {
  await call.speak(tone(1));
  await until(() => call.got.some((m) => m.event === "clear"), 6000, "the barge-in clears");
  await call.speak(new Int16Array(8000 * 1.2));
  await until(() => chats() === 2, 10_000, "the second turn reaches the model");
  await new Promise((r) => setTimeout(r, 500));
  await call.hangup();
  await until(() => stderr().includes("call ended"), 10_000, "the call ended");
  await call.close();
}

/** The bot spoke, then nothing came for 400 ms (its line is over). */
export async function quietAfterSpeech(call: TwilioCall): Promise<void> {
  await until(() => call.media().length > 0, 10_000, "bot audio");
  let last = -1;
  let since = performance.now();
  await until(
    () => {
      const n = call.media().length;
      if (n !== last) [last, since] = [n, performance.now()];
      return performance.now() - since >= 400;
    },
    10_000,
    "the bot to finish its line",
  );
}
