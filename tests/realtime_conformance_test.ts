/**
 * Every realtime (speech-to-speech) provider through the conformance suite
 * (tests/_realtime_conformance.ts), each against its local fake: the echo model (local),
 * Gemini Live, OpenAI Realtime, xAI Grok voice and Ultravox. Clients are made by the registry's loaders.
 */

import { REALTIME_PROVIDERS } from "../providers/registry.ts";
import { realtimeConformance } from "./_realtime_conformance.ts";
import { echoRig, geminiRig, openAIStyleRig, ultravoxRig } from "./_realtime_rigs.ts";

realtimeConformance({
  provider: "echo",
  create: await REALTIME_PROVIDERS.echo.load(),
  inputRate: 16000,
  outputRate: 24000,
  exactTranscripts: false,
  usage: true,
  rig: echoRig,
});

realtimeConformance({
  provider: "gemini",
  create: await REALTIME_PROVIDERS.gemini.load(),
  outputRate: 24000,
  exactTranscripts: true,
  usage: true,
  survivesErrors: true,
  afterDrop: "resumes",
  rig: geminiRig,
});

realtimeConformance({
  provider: "openai",
  create: await REALTIME_PROVIDERS.openai.load(),
  inputRate: 24000,
  outputRate: 24000,
  exactTranscripts: true,
  usage: true,
  survivesErrors: true,
  afterDrop: "resumes",
  rig: () => openAIStyleRig("sk-conformance-good-key"),
});

realtimeConformance({
  provider: "xai",
  create: await REALTIME_PROVIDERS.xai.load(),
  inputRate: 24000,
  outputRate: 24000,
  exactTranscripts: true,
  usage: true,
  survivesErrors: true,
  afterDrop: "resumes",
  rig: () => openAIStyleRig("xai-conformance-good-key", "xai"),
});

realtimeConformance({
  provider: "ultravox",
  create: await REALTIME_PROVIDERS.ultravox.load(),
  inputRate: 16000,
  outputRate: 24000,
  exactTranscripts: true,
  usage: false,
  afterDrop: "resumes",
  rig: ultravoxRig,
});
