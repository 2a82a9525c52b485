/**
 * Answering-machine detection on the calls the agent server places through its SIP trunk
 * (`POST /calls` with `via: "sip"`): sipp answers the INVITE and plays a recording the test made
 * (an espeak-ng voicemail greeting and a sox beep, or a person's "Hello?" and their silence) as
 * PCMU RTP, then hangs up. The detector runs as on carrier calls, and the call's transcript
 * records the graph's `answered_by_machine` or `answered_by_human` move.
 */

import assert from "node:assert/strict";
import { concatInt16 } from "../core/audio/pcm.ts";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { until } from "./_core_helpers.ts";
import { AMD_GRAPH } from "./_graph_fixture.ts";
import {
  echoSipTrunkConfig,
  freeEvenPortBase,
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  SIPP_SCENARIOS,
} from "./_sipp.ts";
import { mixHiss, RATE, silence, voiceMaker } from "./_voice_audio.ts";

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-sip-amd-" });
const { soxBeep, speak } = voiceMaker(dir);

/** Places a SIP call to sipp playing `pcm`; the graph's moves, from the call's transcript. */
async function placedCallHearing(pcm: Int16Array): Promise<string[]> {
  const sipPort = freeUdpPort();
  const sippPort = freeUdpPort();
  const config = echoSipTrunkConfig(AMD_GRAPH, sipPort) as {
    telephony: { sip: Record<string, unknown> } & Record<string, unknown>;
  } & Record<string, unknown>;
  config.telephony.sip.server = `sip:127.0.0.1:${sippPort}`;
  config.telephony.sip.register = false;
  config.telephony.answering_machine = { enabled: true };
  config.api = { token_env: "FLOWCAT_API_TOKEN" };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const vars: Record<string, string> = { SIP_PASSWORD: "trunk-pass", FLOWCAT_API_TOKEN: "api-1" };
  const app = await createAgentServer({
    config: r.config,
    env: (n) => vars[n],
    logger: memoryLogger(),
    sipBindHost: "127.0.0.1",
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  const cwd = await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-sipp-amd-" });
  await Deno.writeFile(`${cwd}/greeting.pcap`, pcmuPcap(pcm));
  const playMs = Math.round((pcm.length * 1000) / RATE);
  const sipp = runSipp(
    [
      "-sf",
      `${SIPP_SCENARIOS}uas_greeting.xml`,
      "-i",
      "127.0.0.1",
      "-p",
      String(sippPort),
      "-mp",
      String(freeEvenPortBase(2)),
      "-m",
      "1",
      "-d",
      String(playMs + 500),
    ],
    cwd,
    "30s",
  );
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/calls`, {
      method: "POST",
      headers: { authorization: "Bearer api-1" },
      body: JSON.stringify({ to: "+15550100", via: "sip" }),
    });
    assert.equal(res.status, 202);
    const { runId } = await res.json() as { runId: number };
    const done = await sipp.done; // sipp hung up and got our 200
    assert.equal(done.code, 0, done.stdout.slice(-1500) + done.stderr.slice(-1000));
    const run = app.sessions.get(runId)!;
    await until(() => run.finalize !== undefined, 8000, "finalized");
    const lines = JSON.parse(
      new TextDecoder().decode(app.sessions.memoryArtifact(`run-${runId}-transcript.json`)!),
    ).lines as { role: string; tool?: string }[];
    return lines.filter((l) => l.role === "tool").map((l) => l.tool!);
  } finally {
    sipp.kill();
    await sipp.done;
    await app.calls.drain(1000);
    await server.shutdown();
    await app.close();
  }
}

Deno.test({
  name: "SIP outbound call: sipp plays a voicemail greeting and beep, the graph goes to voicemail",
  ignore: !hasSipp(),
  fn: async () => {
    const greeting = await speak("Hi, you have reached Sam. Please leave a message.", "en-us");
    const pcm = mixHiss(
      concatInt16([silence(400), greeting, silence(300), await soxBeep(1000, 0.5), silence(800)]),
    );
    assert.deepEqual(await placedCallHearing(pcm), ["answered_by_machine"]);
  },
});

Deno.test({
  name: "SIP outbound call: sipp's short human 'Hello?' moves the graph to the conversation",
  ignore: !hasSipp(),
  fn: async () => {
    const hello = await speak("Hello?", "en-gb");
    const pcm = mixHiss(concatInt16([silence(300), hello, silence(2500)]));
    assert.deepEqual(await placedCallHearing(pcm), ["answered_by_human"]);
  },
});
