/**
 * Every realtime (speech-to-speech) provider through the conformance suite
 * (tests/_realtime_conformance.ts), each against its local fake: the echo model (local),
 * Gemini Live, OpenAI Realtime, xAI Grok voice, Ultravox, Azure OpenAI and Amazon Nova Sonic.
 * Clients are made by the registry's loaders.
 */

import { REALTIME_PROVIDERS } from "../providers/registry.ts";
import { realtimeConformance } from "./_realtime_conformance.ts";
import { echoRig, geminiRig, openAIStyleRig, ultravoxRig } from "./_realtime_rigs.ts";
import { novaSonicRig } from "./_realtime_rig_nova.ts";

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

realtimeConformance({
  provider: "azure",
  create: await REALTIME_PROVIDERS.azure.load(),
  inputRate: 24000,
  outputRate: 24000,
  exactTranscripts: true,
  usage: true,
  survivesErrors: true,
  afterDrop: "resumes",
  // The OpenAI fake at Azure's GA path, the deployment as the model, the key as `api-key`.
  async rig() {
    const rig = await openAIStyleRig("azure-conformance-key");
    const root = rig.options.url!.replace(/\/v1\/realtime$/, "");
    return { ...rig, options: { ...rig.options, url: root, model: "conformance-deployment" } };
  },
});

realtimeConformance({
  provider: "nova-sonic",
  create: await REALTIME_PROVIDERS["nova-sonic"].load(),
  inputRate: 16000,
  outputRate: 24000,
  exactTranscripts: true,
  usage: true,
  afterDrop: "resumes",
  rig: novaSonicRig,
});
