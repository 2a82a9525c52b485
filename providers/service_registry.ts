// Over 400 lines: three tables of one row per provider (data, read by docs/providers.md and its test).
/**
 * The cascaded providers (speech-to-text, language model, text-to-speech) by name, as the
 * agent server's config names them. Most are thin wrappers (W) over a few protocol families
 * (D): a wrapper changes only the base URL, the key variable and the default model. A
 * family's module is imported only when a config names one of its providers.
 *
 * Known providers Flowcat does not speak yet are listed too, so a config naming
 * one fails at start with `FlowcatError("<provider>: not yet wired")` instead of "unknown".
 * docs/providers.md is this table in prose.
 * @module
 */

import { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from "./anthropic/defaults.ts";
import { CARTESIA_DEFAULT_BASE_URL, CARTESIA_DEFAULT_MODEL } from "./cartesia/defaults.ts";
import { DEEPGRAM_DEFAULT_MODEL, DEEPGRAM_DEFAULT_URL } from "./deepgram/defaults.ts";
import { ELEVENLABS_DEFAULT_BASE_URL, ELEVENLABS_DEFAULT_MODEL } from "./elevenlabs/defaults.ts";
import {
  GEMINI_DEFAULT_BASE_URL,
  GEMINI_DEFAULT_MODEL,
  GOOGLE_STT_DEFAULT_MODEL,
  GOOGLE_STT_DEFAULT_URL,
  GOOGLE_TTS_DEFAULT_URL,
  GOOGLE_TTS_DEFAULT_VOICE,
  VERTEX_DEFAULT_BASE_URL,
  VERTEX_DEFAULT_MODEL,
} from "./google/defaults.ts";
import { RIVA_DEFAULT_URL } from "./nvidia/defaults.ts";
import {
  OPENAI_CHAT_DEFAULT_BASE_URL,
  OPENAI_CHAT_DEFAULT_MODEL,
  OPENAI_TTS_BASE_URL,
  OPENAI_TTS_DEFAULT_MODEL,
  OPENAI_TTS_DEFAULT_VOICE,
} from "./openai/defaults.ts";
import { PIPER_BASE_URL } from "./piper/defaults.ts";
import { FlowcatError } from "../core/errors.ts";
import type { LlmService, SttService, TtsService } from "../core/seams.ts";
import type { EnvReader, ProviderEnvVar, ProviderInfo } from "./provider_types.ts";
import {
  AZURE_OPENAI_KEY_ENV,
  AZURE_SPEECH_KEY_ENV,
  AZURE_TTS_DEFAULT_VOICE,
  openAIHosts,
  speechHosts,
} from "./azure/defaults.ts";
import type { ServiceOptions } from "./service_options.ts";
import {
  AWS_DEFAULT_REGION,
  AWS_ENV,
  awsHostsFor,
  type AwsService,
  BEDROCK,
  BEDROCK_DEFAULT_MODEL,
  POLLY,
  POLLY_DEFAULT_ENGINE,
  POLLY_DEFAULT_VOICE,
  TRANSCRIBE,
} from "./aws/defaults.ts";
import { DEEPGRAM_TTS_DEFAULT_BASE_URL, DEEPGRAM_TTS_DEFAULT_MODEL } from "./deepgram/defaults.ts";
import { FISH_DEFAULT_BASE_URL, FISH_DEFAULT_MODEL } from "./fish/defaults.ts";
import { HUME_DEFAULT_BASE_URL, HUME_DEFAULT_VOICE } from "./hume/defaults.ts";
import { LMNT_DEFAULT_BASE_URL, LMNT_DEFAULT_MODEL, LMNT_DEFAULT_VOICE } from "./lmnt/defaults.ts";
import { NEUPHONIC_DEFAULT_BASE_URL } from "./neuphonic/defaults.ts";
import { RIME_DEFAULT_BASE_URL, RIME_DEFAULT_MODEL, RIME_DEFAULT_VOICE } from "./rime/defaults.ts";
import { ASSEMBLYAI_DEFAULT_MODEL, ASSEMBLYAI_HOST } from "./assemblyai/defaults.ts";
import { SPEECHMATICS_DEFAULT_MODEL, SPEECHMATICS_HOST } from "./speechmatics/defaults.ts";
import { GLADIA_DEFAULT_MODEL, GLADIA_HOST } from "./gladia/defaults.ts";
import { SONIOX_DEFAULT_MODEL, SONIOX_HOST } from "./soniox/defaults.ts";
import { CARTESIA_STT_DEFAULT_MODEL, CARTESIA_STT_HOST } from "./cartesia/defaults.ts";
import { ELEVENLABS_STT_DEFAULT_MODEL, ELEVENLABS_STT_HOST } from "./elevenlabs/defaults.ts";

/** A cascaded provider kind. */
export type ServiceKind = "stt" | "llm" | "tts";

/** The service each kind makes. */
export interface ServiceOf {
  /** A speech-to-text service. */
  stt: SttService;
  /** A language-model service. */
  llm: LlmService;
  /** A text-to-speech service. */
  tts: TtsService;
}

/** Makes one service per call. */
export type ServiceFactory<K extends ServiceKind> = (opts: ServiceOptions) => ServiceOf[K];

/** A registered cascaded provider. */
export interface ServiceProviderInfo<K extends ServiceKind = ServiceKind> extends ProviderInfo {
  /** What the provider does in a pipeline. */
  kind: K;
  /** The protocol family (D) it speaks; its own name when it is one. */
  family: string;
  /** False for providers declared but not implemented. */
  wired: boolean;
  /** API root; the family's default when absent. */
  baseUrl?: string;
  /** Model used when the config names none; the family's default when absent. */
  defaultModel?: string;
  /** Voice used when the config names none; the family's default when absent. */
  defaultVoice?: string;
  /** Options the wrapper always passes (e.g. the whisper.cpp dialect). */
  options?: Record<string, unknown>;
  /** Import the family's module and return its factory (loaded only when used). */
  load(): Promise<ServiceFactory<K>>;
}

type Loader<K extends ServiceKind> = () => Promise<ServiceFactory<K>>;

// ---------------------------------------------------------------- families (D)

const openaiChat: Loader<"llm"> = () =>
  import("./openai/chat.ts").then((m) => m.createOpenAIChatLlm);
const anthropic: Loader<"llm"> = () =>
  import("./anthropic/llm.ts").then((m) => m.createAnthropicLlm);
const geminiLlm: Loader<"llm"> = () =>
  import("./google/gemini_llm.ts").then((m) => m.createGeminiLlm);
const whisperHttp: Loader<"stt"> = () =>
  import("./openai/whisper_http.ts").then((m) => m.createWhisperHttpStt);
const deepgram: Loader<"stt"> = () => import("./deepgram/stt.ts").then((m) => m.createDeepgramStt);
const openaiTts: Loader<"tts"> = () => import("./openai/tts.ts").then((m) => m.createOpenAITts);
const piper: Loader<"tts"> = () => import("./piper/tts.ts").then((m) => m.createPiperTts);
const elevenlabs: Loader<"tts"> = () =>
  import("./elevenlabs/tts.ts").then((m) => m.createElevenLabsTts);
const cartesia: Loader<"tts"> = () => import("./cartesia/tts.ts").then((m) => m.createCartesiaTts);
const googleStt: Loader<"stt"> = () => import("./google/speech.ts").then((m) => m.createGoogleStt);
const googleTts: Loader<"tts"> = () => import("./google/tts.ts").then((m) => m.createGoogleTts);
const vertex: Loader<"llm"> = () => import("./google/vertex.ts").then((m) => m.createVertexLlm);
const riva: Loader<"stt"> = () => import("./nvidia/riva.ts").then((m) => m.createRivaStt);
const transcribe: Loader<"stt"> = () =>
  import("./aws/transcribe.ts").then((m) => m.createTranscribeStt);
const assemblyai: Loader<"stt"> = () =>
  import("./assemblyai/stt.ts").then((m) => m.createAssemblyAiStt);
const speechmatics: Loader<"stt"> = () =>
  import("./speechmatics/stt.ts").then((m) => m.createSpeechmaticsStt);
const gladia: Loader<"stt"> = () => import("./gladia/stt.ts").then((m) => m.createGladiaStt);
const soniox: Loader<"stt"> = () => import("./soniox/stt.ts").then((m) => m.createSonioxStt);
const cartesiaStt: Loader<"stt"> = () =>
  import("./cartesia/stt.ts").then((m) => m.createCartesiaStt);
const elevenlabsStt: Loader<"stt"> = () =>
  import("./elevenlabs/stt.ts").then((m) => m.createElevenLabsStt);
const bedrock: Loader<"llm"> = () => import("./aws/bedrock.ts").then((m) => m.createBedrockLlm);
const polly: Loader<"tts"> = () => import("./aws/polly.ts").then((m) => m.createPollyTts);
const deepgramTts: Loader<"tts"> = () =>
  import("./deepgram/tts.ts").then((m) => m.createDeepgramTts);
const rime: Loader<"tts"> = () => import("./rime/tts.ts").then((m) => m.createRimeTts);
const lmnt: Loader<"tts"> = () => import("./lmnt/tts.ts").then((m) => m.createLmntTts);
const fish: Loader<"tts"> = () => import("./fish/tts.ts").then((m) => m.createFishTts);
const hume: Loader<"tts"> = () => import("./hume/tts.ts").then((m) => m.createHumeTts);
const neuphonic: Loader<"tts"> = () =>
  import("./neuphonic/tts.ts").then((m) => m.createNeuphonicTts);
const azureStt: Loader<"stt"> = () => import("./azure/stt.ts").then((m) => m.createAzureStt);
const azureTts: Loader<"tts"> = () => import("./azure/tts.ts").then((m) => m.createAzureTts);
const azureLlm: Loader<"llm"> = () =>
  import("./azure/openai_llm.ts").then((m) => m.createAzureOpenAILlm);
const espeak: Loader<"tts"> = () =>
  import("./espeak/tts.ts").then((m) => (o: ServiceOptions) => {
    const rate = o.options?.sample_rate;
    return m.createEspeakTts({
      ...(o.voice ? { voice: o.voice } : {}),
      ...(typeof rate === "number" ? { sampleRate: rate } : {}),
      ...(typeof o.options?.rate === "number" ? { rate: o.options.rate } : {}),
    });
  });

/** The `host` of a default API root (`wss://` roots, which the table cannot read a host from). */
const hostOf = (root: string): string => new URL(root).host;

/** The loader of a provider that is declared but not implemented. */
function notWired<K extends ServiceKind>(name: string): Loader<K> {
  return () => Promise.reject(FlowcatError.notWired(name));
}

/** Everything but the kind, loader and name, which {@link table} fills in. */
type Row<K extends ServiceKind> = [
  family: string,
  load: Loader<K> | "not wired",
  info: {
    host?: string;
    baseUrl?: string;
    model?: string;
    voice?: string;
    local?: boolean;
    options?: Record<string, unknown>;
    /** Credential variable, token hosts and file-ness, for providers not keyed by an API key. */
    credential?: Pick<ServiceProviderInfo, "keyEnv" | "keyIsFile" | "authHosts">;
    description: string;
    /** Variables read instead of `<NAME>_API_KEY`. */
    env?: readonly ProviderEnvVar[];
    /** Hosts that depend on the options and environment (a region). */
    hostsFor?: (options: Readonly<Record<string, unknown>>, env: EnvReader) => string[];
  },
];

// Google Cloud authenticates with a service-account key file, exchanged for OAuth tokens at
// oauth2.googleapis.com (providers/google/auth.ts).
const googleCloud = {
  keyEnv: "GOOGLE_APPLICATION_CREDENTIALS",
  keyIsFile: true,
  authHosts: ["oauth2.googleapis.com:443"],
};

function table<K extends ServiceKind>(
  kind: K,
  rows: Record<string, Row<K>>,
): Readonly<Record<string, ServiceProviderInfo<K>>> {
  const out: Record<string, ServiceProviderInfo<K>> = {};
  for (const [name, [family, load, i]] of Object.entries(rows)) {
    const host = i.host ??
      (i.baseUrl?.startsWith("https://") ? new URL(i.baseUrl).host : undefined);
    out[name] = {
      name,
      kind,
      family,
      wired: load !== "not wired",
      hosts: [
        ...(host ? [host.includes(":") ? host : `${host}:443`] : []),
        ...(i.credential?.authHosts ?? []),
      ],
      needsKey: i.local !== true,
      description: i.description,
      ...(i.baseUrl ? { baseUrl: i.baseUrl } : {}),
      ...(i.model ? { defaultModel: i.model } : {}),
      ...(i.voice ? { defaultVoice: i.voice } : {}),
      ...(i.options ? { options: i.options } : {}),
      ...i.credential,
      ...(i.env ? { env: i.env } : {}),
      ...(i.hostsFor ? { hostsFor: i.hostsFor } : {}),
      load: load === "not wired" ? notWired<K>(name) : load,
    };
  }
  return Object.freeze(out);
}

/** The row facts of an AWS service: its default region's host, the AWS variables, hosts per region. */
function aws(service: AwsService) {
  return { host: service.host(AWS_DEFAULT_REGION), env: AWS_ENV, hostsFor: awsHostsFor(service) };
}

// Rows of the three tables look alike on purpose: each is data (a provider's family, loader and
// defaults), and a row per provider is what docs/providers.md and its test read against.

// ---------------------------------------------------------------- speech to text

/** Speech-to-text providers by name. */
export const STT_PROVIDERS = table("stt", {
  openai: ["whisper-http", whisperHttp, {
    baseUrl: "https://api.openai.com/v1",
    model: "whisper-1",
    description: "OpenAI transcription (Whisper)",
  }],
  groq: ["whisper-http", whisperHttp, {
    baseUrl: "https://api.groq.com/openai/v1",
    model: "whisper-large-v3-turbo",
    description: "Groq Whisper",
  }],
  together: ["whisper-http", whisperHttp, {
    baseUrl: "https://api.together.ai/v1",
    model: "openai/whisper-large-v3",
    description: "Together AI Whisper",
  }],
  fireworks: ["whisper-http", whisperHttp, {
    baseUrl: "https://audio-prod.us-virginia-1.direct.fireworks.ai/v1",
    model: "whisper-v3",
    description: "Fireworks Whisper",
  }],
  speaches: ["whisper-http", whisperHttp, {
    baseUrl: "http://127.0.0.1:8000/v1",
    model: "Systran/faster-whisper-small",
    local: true,
    description: "local: speaches / faster-whisper-server",
  }],
  "whisper.cpp": ["whisper-http", whisperHttp, {
    baseUrl: "http://127.0.0.1:8080",
    local: true,
    options: { dialect: "whisper.cpp" },
    description: "local: whisper.cpp server (/inference)",
  }],
  deepgram: ["deepgram", deepgram, {
    host: new URL(DEEPGRAM_DEFAULT_URL).host,
    model: DEEPGRAM_DEFAULT_MODEL,
    description: "Deepgram streaming (WebSocket)",
  }],
  assemblyai: ["assemblyai", assemblyai, {
    host: ASSEMBLYAI_HOST,
    model: ASSEMBLYAI_DEFAULT_MODEL,
    description: "AssemblyAI Universal Streaming v3 (WebSocket)",
  }],
  azure: ["azure", azureStt, {
    credential: { keyEnv: AZURE_SPEECH_KEY_ENV },
    hostsFor: (options) => speechHosts("stt")({ options }),
    description: "Azure Speech streaming (WebSocket; options.region)",
  }],
  aws: ["aws", transcribe, {
    ...aws(TRANSCRIBE),
    description: "Amazon Transcribe streaming (WebSocket, SigV4)",
  }],
  google: ["google-stt", googleStt, {
    baseUrl: GOOGLE_STT_DEFAULT_URL,
    model: GOOGLE_STT_DEFAULT_MODEL,
    credential: googleCloud,
    description: "Google Cloud Speech-to-Text v1 StreamingRecognize (gRPC)",
  }],
  speechmatics: ["speechmatics", speechmatics, {
    host: SPEECHMATICS_HOST,
    model: SPEECHMATICS_DEFAULT_MODEL,
    description: "Speechmatics realtime (WebSocket)",
  }],
  gladia: ["gladia", gladia, {
    host: GLADIA_HOST,
    model: GLADIA_DEFAULT_MODEL,
    description: "Gladia live v2 (HTTP session, WebSocket)",
  }],
  soniox: ["soniox", soniox, {
    host: SONIOX_HOST,
    model: SONIOX_DEFAULT_MODEL,
    description: "Soniox realtime (WebSocket)",
  }],
  riva: ["riva", riva, {
    baseUrl: RIVA_DEFAULT_URL,
    local: true,
    description: "local: NVIDIA Riva ASR StreamingRecognize (gRPC)",
  }],
  cartesia: ["cartesia-stt", cartesiaStt, {
    host: CARTESIA_STT_HOST,
    model: CARTESIA_STT_DEFAULT_MODEL,
    description: "Cartesia ink speech-to-text (WebSocket)",
  }],
  elevenlabs: ["elevenlabs-stt", elevenlabsStt, {
    host: ELEVENLABS_STT_HOST,
    model: ELEVENLABS_STT_DEFAULT_MODEL,
    description: "ElevenLabs Scribe realtime (WebSocket)",
  }],
});

// ---------------------------------------------------------------- language models

const chat = (
  baseUrl: string,
  model: string | undefined,
  description: string,
  extra: { local?: boolean; options?: Record<string, unknown> } = {},
): Row<"llm"> => ["openai-chat", openaiChat, { baseUrl, model, description, ...extra }];
const local = { local: true };

/** Language-model providers by name. */
export const LLM_PROVIDERS = table("llm", {
  openai: chat(OPENAI_CHAT_DEFAULT_BASE_URL, OPENAI_CHAT_DEFAULT_MODEL, "OpenAI chat completions"),
  groq: chat("https://api.groq.com/openai/v1", "llama-3.3-70b-versatile", "Groq"),
  together: chat(
    "https://api.together.xyz/v1",
    "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "Together AI",
  ),
  fireworks: chat(
    "https://api.fireworks.ai/inference/v1",
    "accounts/fireworks/models/llama-v3p3-70b-instruct",
    "Fireworks AI",
  ),
  deepseek: chat("https://api.deepseek.com/v1", "deepseek-chat", "DeepSeek"),
  // Mistral refuses `stream_options` (HTTP 422).
  mistral: chat("https://api.mistral.ai/v1", "mistral-small-latest", "Mistral", {
    options: { stream_usage: false },
  }),
  openrouter: chat("https://openrouter.ai/api/v1", "openai/gpt-4o-mini", "OpenRouter"),
  perplexity: chat("https://api.perplexity.ai", "sonar", "Perplexity"),
  xai: chat("https://api.x.ai/v1", "grok-3-mini", "xAI Grok"),
  cerebras: chat("https://api.cerebras.ai/v1", "gpt-oss-120b", "Cerebras"),
  nvidia: chat(
    "https://integrate.api.nvidia.com/v1",
    "meta/llama-3.3-70b-instruct",
    "NVIDIA NIM",
  ),
  sambanova: chat(
    "https://api.sambanova.ai/v1",
    "Meta-Llama-3.3-70B-Instruct",
    "SambaNova",
  ),
  qwen: chat(
    "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    "qwen-plus",
    "Alibaba Qwen (DashScope)",
  ),
  ollama: chat("http://127.0.0.1:11434/v1", "llama3.2", "local: Ollama", local),
  // llama-server serves one model and ignores the name.
  llamacpp: chat("http://127.0.0.1:8080/v1", "local", "local: llama.cpp server", local),
  // These serve what the operator loaded: the config must name it (providers.llm.model).
  vllm: chat("http://127.0.0.1:8000/v1", undefined, "local: vLLM (model required)", local),
  lmstudio: chat("http://127.0.0.1:1234/v1", undefined, "local: LM Studio (model required)", local),
  anthropic: ["anthropic", anthropic, {
    baseUrl: ANTHROPIC_DEFAULT_BASE_URL,
    model: ANTHROPIC_DEFAULT_MODEL,
    description: "Anthropic Messages",
  }],
  gemini: ["gemini", geminiLlm, {
    baseUrl: GEMINI_DEFAULT_BASE_URL,
    model: GEMINI_DEFAULT_MODEL,
    description: "Google Gemini generateContent",
  }],
  // The model is the deployment's name, which only the operator knows.
  azure: ["azure-openai", azureLlm, {
    credential: { keyEnv: AZURE_OPENAI_KEY_ENV },
    hostsFor: (options) => openAIHosts({ options }),
    description: "Azure OpenAI chat completions (options.resource; model: the deployment)",
  }],
  bedrock: ["bedrock", bedrock, {
    ...aws(BEDROCK),
    model: BEDROCK_DEFAULT_MODEL,
    description: "Amazon Bedrock ConverseStream (SigV4)",
  }],
  vertex: ["vertex", vertex, {
    baseUrl: VERTEX_DEFAULT_BASE_URL,
    model: VERTEX_DEFAULT_MODEL,
    credential: googleCloud,
    description: "Google Vertex AI Gemini (service account)",
  }],
});

// ---------------------------------------------------------------- text to speech

/** Text-to-speech providers by name. */
export const TTS_PROVIDERS = table("tts", {
  espeak: ["espeak", espeak, {
    local: true,
    description: "local: eSpeak NG (wasm, in process)",
  }],
  piper: ["piper", piper, {
    baseUrl: PIPER_BASE_URL,
    local: true,
    description: "local: Piper HTTP server",
  }],
  kokoro: ["openai-tts", openaiTts, {
    baseUrl: "http://127.0.0.1:8880/v1",
    model: "kokoro",
    voice: "af_bella",
    local: true,
    description: "local: Kokoro-FastAPI (OpenAI-compatible speech)",
  }],
  openai: ["openai-tts", openaiTts, {
    baseUrl: OPENAI_TTS_BASE_URL,
    model: OPENAI_TTS_DEFAULT_MODEL,
    voice: OPENAI_TTS_DEFAULT_VOICE,
    description: "OpenAI speech",
  }],
  speaches: ["openai-tts", openaiTts, {
    baseUrl: "http://127.0.0.1:8000/v1",
    model: "speaches-ai/Kokoro-82M-v1.0-ONNX",
    voice: "af_heart",
    local: true,
    description: "local: speaches (OpenAI-compatible speech)",
  }],
  groq: ["openai-tts", openaiTts, {
    baseUrl: "https://api.groq.com/openai/v1",
    model: "canopylabs/orpheus-v1-english",
    voice: "autumn",
    options: { response_format: "wav", sample_rate: 48000 },
    description: "Groq speech (Orpheus; WAV)",
  }],
  deepinfra: ["openai-tts", openaiTts, {
    baseUrl: "https://api.deepinfra.com/v1/openai",
    model: "hexgrad/Kokoro-82M",
    voice: "af_bella",
    options: { response_format: "wav", sample_rate: 24000 },
    description: "DeepInfra speech (Kokoro; WAV)",
  }],
  elevenlabs: ["elevenlabs", elevenlabs, {
    host: new URL(ELEVENLABS_DEFAULT_BASE_URL).host,
    model: ELEVENLABS_DEFAULT_MODEL,
    description: "ElevenLabs stream-input (WebSocket)",
  }],
  cartesia: ["cartesia", cartesia, {
    host: new URL(CARTESIA_DEFAULT_BASE_URL).host,
    model: CARTESIA_DEFAULT_MODEL,
    description: "Cartesia (WebSocket)",
  }],
  deepgram: ["deepgram-tts", deepgramTts, {
    host: hostOf(DEEPGRAM_TTS_DEFAULT_BASE_URL),
    model: DEEPGRAM_TTS_DEFAULT_MODEL,
    description: "Deepgram Aura (WebSocket)",
  }],
  azure: ["azure", azureTts, {
    voice: AZURE_TTS_DEFAULT_VOICE,
    credential: { keyEnv: AZURE_SPEECH_KEY_ENV },
    hostsFor: (options) => speechHosts("tts")({ options }),
    description: "Azure Speech synthesis (WebSocket; options.region)",
  }],
  aws: ["aws", polly, {
    ...aws(POLLY),
    model: POLLY_DEFAULT_ENGINE,
    voice: POLLY_DEFAULT_VOICE,
    description: "Amazon Polly (PCM, SigV4)",
  }],
  google: ["google-tts", googleTts, {
    baseUrl: GOOGLE_TTS_DEFAULT_URL,
    voice: GOOGLE_TTS_DEFAULT_VOICE,
    credential: googleCloud,
    description: "Google Cloud Text-to-Speech (LINEAR16)",
  }],
  // PlayHT closed its API on 2025-12-31; the row stays so a config naming it gets a clear error.
  playht: ["playht", "not wired", { description: "PlayHT (API closed 2025-12-31)" }],
  rime: ["rime", rime, {
    host: hostOf(RIME_DEFAULT_BASE_URL),
    model: RIME_DEFAULT_MODEL,
    voice: RIME_DEFAULT_VOICE,
    description: "Rime (WebSocket)",
  }],
  lmnt: ["lmnt", lmnt, {
    host: hostOf(LMNT_DEFAULT_BASE_URL),
    model: LMNT_DEFAULT_MODEL,
    voice: LMNT_DEFAULT_VOICE,
    description: "LMNT speech session (WebSocket)",
  }],
  neuphonic: ["neuphonic", neuphonic, {
    baseUrl: NEUPHONIC_DEFAULT_BASE_URL,
    description: "Neuphonic (HTTP server-sent events)",
  }],
  fish: ["fish", fish, {
    host: hostOf(FISH_DEFAULT_BASE_URL),
    model: FISH_DEFAULT_MODEL,
    description: "Fish Audio live (WebSocket, MessagePack)",
  }],
  hume: ["hume", hume, {
    baseUrl: HUME_DEFAULT_BASE_URL,
    voice: HUME_DEFAULT_VOICE,
    description: "Hume Octave (HTTP JSON streaming)",
  }],
});

/** The providers of one cascaded kind, by name. */
export function serviceProviders<K extends ServiceKind>(
  kind: K,
): Readonly<Record<string, ServiceProviderInfo<K>>> {
  const t = kind === "stt" ? STT_PROVIDERS : kind === "llm" ? LLM_PROVIDERS : TTS_PROVIDERS;
  return t as unknown as Readonly<Record<string, ServiceProviderInfo<K>>>;
}
