/**
 * What the provider probes (server/probes.ts) know of each protocol family: the auth headers its
 * clients send, a cheap endpoint to ask, which local servers list their models, and what to start
 * when a local provider does not answer. Written here rather than imported from the provider
 * modules, so probing loads no provider client.
 * @module
 */

/** What to start for each local provider when it does not answer. */
export const START_HINTS: Readonly<Record<string, string>> = Object.freeze({
  "stt/whisper.cpp": "whisper-server -m ggml-base.en.bin --port 8080",
  "stt/speaches": "speaches (uvicorn --factory speaches.main:create_app --port 8000)",
  "llm/ollama": "ollama serve",
  "llm/llamacpp": "llama-server -m <model.gguf> --port 8080",
  "llm/vllm": "vllm serve <model> --port 8000",
  "llm/lmstudio": "LM Studio's local server (lms server start)",
  "tts/piper": "python3 -m piper.http_server -m <voice.onnx> --port 5000",
  "tts/kokoro": "Kokoro-FastAPI (docker run -p 8880:8880 ghcr.io/remsky/kokoro-fastapi-cpu)",
  "tts/speaches": "speaches (uvicorn --factory speaches.main:create_app --port 8000)",
  "brain/remote": "the remote brain (deno task brain for the reference one)",
});

/** Local servers whose `GET /models` lists what they loaded, and how to load a missing one. */
export const LISTS_MODELS: Readonly<Record<string, (model: string) => string>> = Object.freeze({
  "llm/ollama": (m: string) => `ollama pull ${m}`,
  "llm/vllm": (m: string) => `vllm serve ${m}`,
  "llm/lmstudio": (m: string) => `lms load ${m}`,
});

/** An `Authorization: Bearer` header when there is a key. */
export const bearer = (key: string | undefined): Record<string, string> =>
  key ? { authorization: `Bearer ${key}` } : {};

/** Auth headers per protocol family (the same ones the clients send). */
export const FAMILY_AUTH: Readonly<
  Record<string, (key: string | undefined) => Record<string, string>>
> = Object.freeze({
  "openai-chat": bearer,
  "openai-tts": bearer,
  "whisper-http": bearer,
  piper: bearer,
  anthropic: (key: string | undefined): Record<string, string> => ({
    "anthropic-version": "2023-06-01",
    ...(key ? { "x-api-key": key } : {}),
  }),
  gemini: (key: string | undefined): Record<string, string> => key ? { "x-goog-api-key": key } : {},
  deepgram: (key: string | undefined): Record<string, string> =>
    key ? { authorization: `Token ${key}` } : {},
  elevenlabs: (key: string | undefined): Record<string, string> => key ? { "xi-api-key": key } : {},
  gladia: (key: string | undefined): Record<string, string> => key ? { "x-gladia-key": key } : {},
  assemblyai: (key: string | undefined): Record<string, string> =>
    key ? { authorization: key } : {},
  cartesia: (key: string | undefined): Record<string, string> => ({
    "cartesia-version": "2026-03-01",
    ...(key ? { "x-api-key": key } : {}),
  }),
  "deepgram-tts": (key: string | undefined): Record<string, string> =>
    key ? { authorization: `Token ${key}` } : {},
  lmnt: (key: string | undefined): Record<string, string> => key ? { "x-api-key": key } : {},
  neuphonic: (key: string | undefined): Record<string, string> => key ? { "x-api-key": key } : {},
  hume: (key: string | undefined): Record<string, string> => key ? { "x-hume-api-key": key } : {},
});

/** Cheap endpoints of the families whose clients build their URLs themselves or whose API root
 * has no listing: a GET there with the key says whether the key works. */
export const FAMILY_ENDPOINT: Readonly<Record<string, string>> = Object.freeze({
  deepgram: "https://api.deepgram.com/v1/projects",
  elevenlabs: "https://api.elevenlabs.io/v1/models",
  cartesia: "https://api.cartesia.ai/voices",
  // A short-lived streaming token: the streaming host's one keyed HTTP endpoint.
  assemblyai: "https://streaming.assemblyai.com/v3/token?expires_in_seconds=60",
  gladia: "https://api.gladia.io/v2/live?limit=1",
  "deepgram-tts": "https://api.deepgram.com/v1/projects",
  lmnt: "https://api.lmnt.com/v1/ai/voice/list",
  fish: "https://api.fish.audio/model?page_size=1",
  neuphonic: "https://api.neuphonic.com/voices",
  hume: "https://api.hume.ai/v0/tts/voices?provider=HUME_AI",
  rime: "https://users-ws.rime.ai/",
});

/** Families with no cheap authenticated endpoint: the probe shows the host answers, no more. */
export const REACHABLE_ONLY: ReadonlySet<string> = new Set(["rime"]);

/** Families keyed and probed like another family of the same vendor. */
export const SAME_KEY_AS: Readonly<Record<string, string>> = Object.freeze({
  "cartesia-stt": "cartesia",
  "elevenlabs-stt": "elevenlabs",
});

/** WebSocket families whose streaming host has no keyed HTTP endpoint: its host is asked. */
export const HOST_REACHABILITY_ONLY: ReadonlySet<string> = new Set(["speechmatics", "soniox"]);
