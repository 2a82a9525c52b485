/**
 * The media messages of the Twilio-shaped carriers are read without `JSON.parse` when their
 * shape is unmistakable: the result must be what the full parse gives, and every message that
 * could read otherwise under a full parse (escapes, repeated keys, a payload elsewhere, another
 * track) must still get the full parse's answer.
 */
import assert from "node:assert/strict";
import type { SerIn, WsIn } from "../core/seams.ts";
import { type CarrierName, createSerializer } from "../telephony/serializers/mod.ts";

const PCMU = new Uint8Array([0xff, 0x00, 0x80, 0xf0, 0x70, 0x8f]);
const PCM = [0, -32124, 32124, 120, -120, 16764];
const B64 = btoa(String.fromCharCode(...PCMU)); // "/wCA8HCP": has a slash, which JSON may escape

const text = (data: string): WsIn => ({ type: "text", data });

function started(carrier: CarrierName) {
  const ser = createSerializer(carrier);
  const start = carrier === "telnyx"
    ? { event: "start", start: { call_control_id: "c1", media_format: { encoding: "PCMU" } } }
    : {
      event: "start",
      start: {
        callSid: "CA1",
        callId: "c1",
        streamSid: "MZ1",
        mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000 },
      },
    };
  ser.onMessage(text(JSON.stringify(start)));
  return ser;
}

function audio(r: SerIn): number[] {
  assert.equal(r.type, "audio", JSON.stringify(r));
  return [...(r as Extract<SerIn, { type: "audio" }>).audio.pcm];
}

Deno.test("a plain media message decodes to the same audio as the full parse", () => {
  for (const carrier of ["twilio", "signalwire", "telnyx", "plivo"] as const) {
    const ser = started(carrier);
    const plain = `{"event":"media","sequenceNumber":"3","media":{"track":"inbound",` +
      `"chunk":"2","timestamp":"40","payload":"${B64}"},"streamSid":"MZ1"}`;
    const parse = JSON.parse;
    let parsed = 0;
    JSON.parse = (...args: Parameters<typeof parse>) => (parsed++, parse(...args));
    try {
      assert.deepEqual(audio(ser.onMessage(text(plain))), PCM, carrier);
    } finally {
      JSON.parse = parse;
    }
    assert.equal(parsed, 0, `${carrier}: read without JSON.parse`);
    // The same message, parsed: a key order the plain path does not take.
    const reordered = JSON.stringify({ media: { payload: B64, track: "inbound" }, event: "media" });
    assert.deepEqual(audio(ser.onMessage(text(reordered))), PCM, `${carrier} reordered`);
  }
});

Deno.test("messages a full parse reads otherwise get the full parse's answer", () => {
  const ser = started("twilio");
  const media = (inner: string, outer = "") => `{"event":"media"${outer},"media":{${inner}}}`;
  // An escaped slash in the payload is still the same base64.
  const escaped = media(`"track":"inbound","payload":"${B64.replaceAll("/", "\\/")}"`);
  assert.deepEqual(audio(ser.onMessage(text(escaped))), PCM);
  // The caller's track only.
  assert.equal(ser.onMessage(text(media(`"track":"outbound","payload":"${B64}"`))).type, "ignore");
  // A repeated key: JSON.parse keeps the last one.
  const twoEvents = `{"event":"media","media":{"payload":"${B64}"},"event":"stop"}`;
  assert.equal(ser.onMessage(text(twoEvents)).type, "stop");
  const twoPayloads = media(`"payload":"AAAA","payload":"${B64}"`);
  assert.deepEqual(audio(ser.onMessage(text(twoPayloads))), PCM);
  // A payload outside the media object, before or inside a nested object, is not the audio.
  const before = `{"event":"media","error":{"payload":"AAAA"},"media":{"payload":"${B64}"}}`;
  assert.deepEqual(audio(ser.onMessage(text(before))), PCM);
  const nested = media(`"x":{"payload":"AAAA"},"payload":"${B64}"`);
  assert.deepEqual(audio(ser.onMessage(text(nested))), PCM);
  // A payload after the media object has closed is not the media's.
  const outside = `{"event":"media","media":{"track":"inbound"},"payload":"${B64}"}`;
  assert.equal(ser.onMessage(text(outside)).type, "ignore");
  // Repeated before the payload: the last one counts, as JSON.parse has it.
  const secondTrack = media(`"track":"inbound","track":"outbound","payload":"${B64}"`);
  assert.equal(ser.onMessage(text(secondTrack)).type, "ignore");
  const secondEvent = `{"event":"media","event":"stop","media":{"payload":"${B64}"}}`;
  assert.equal(ser.onMessage(text(secondEvent)).type, "stop");
  // A track after the payload still counts (JSON.parse sees it): not the caller's.
  const lateTrack = media(`"payload":"${B64}","track":"outbound"`);
  assert.equal(ser.onMessage(text(lateTrack)).type, "ignore");
  // Not JSON at all, though it starts like a media message.
  const broken = `{"event":"media","media":{"payload":"${B64}"`;
  assert.equal(ser.onMessage(text(broken)).type, "ignore");
});
