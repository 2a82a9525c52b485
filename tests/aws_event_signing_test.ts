/**
 * Message-by-message SigV4 signing of an event stream (providers/aws/event_signing.ts) against
 * signatures made by aws-sdk-js-v3's `@smithy/signature-v4` 5.7.5 `signMessage` for the same
 * key, scope, time, prior signature, `:date` header and payload (a message, then the empty
 * end-of-stream message chained to it).
 */

import assert from "node:assert/strict";
import { eventSignature, EventSigner } from "../providers/aws/event_signing.ts";
import { decodeMessage } from "../providers/aws/event_stream.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const DATE = new Date(Date.UTC(2025, 4, 6, 12, 30, 45, 123));
const SEED = "e1d8e8c8815e60969f2a34765c9a15945ffc0badbaa4ea7a6a3fac3f5c5cab5d";
// Recorded from @smithy/signature-v4 (SignatureV4.signMessage, service bedrock, us-east-1).
const SDK_FIRST = "f07b271448375ea26c7a032cc1f58914e28befbcd1925d09946139980545f173";
const SDK_END = "41c86551128592838fb3b509a8dd0762fe21f529710fab4672cd4997ceb51a4f";

Deno.test("event signature equals the SDK's, chained to the end message", async () => {
  const scope = { region: "us-east-1", service: "bedrock", date: DATE };
  const dateHeader = { ":date": { type: "timestamp" as const, value: BigInt(DATE.getTime()) } };
  const payload = new TextEncoder().encode("hello nova");
  const first = await eventSignature(SECRET, scope, SEED, dateHeader, payload);
  assert.equal(first, SDK_FIRST);
  const end = await eventSignature(SECRET, scope, first, dateHeader, new Uint8Array(0));
  assert.equal(end, SDK_END);
  // A different prior signature gives a different one: the chain is in the signature.
  assert.notEqual(await eventSignature(SECRET, scope, SDK_END, dateHeader, payload), SDK_FIRST);
});

Deno.test("EventSigner wraps messages in :date / :chunk-signature envelopes", async () => {
  const signer = new EventSigner(
    SECRET,
    { region: "us-east-1", service: "bedrock" },
    SEED,
    () => DATE,
  );
  const payload = new TextEncoder().encode("hello nova");
  const [a, b] = await Promise.all([signer.sign(payload), signer.sign(new Uint8Array(0))]);
  const first = decodeMessage(a);
  assert.deepEqual(first.payload, payload);
  assert.deepEqual(first.headers[":date"], { type: "timestamp", value: BigInt(DATE.getTime()) });
  const sig = first.headers[":chunk-signature"];
  assert.equal(sig.type, "binary");
  assert.equal((sig.value as Uint8Array).toHex(), SDK_FIRST);
  const end = decodeMessage(b);
  assert.equal(end.payload.length, 0);
  assert.equal((end.headers[":chunk-signature"].value as Uint8Array).toHex(), SDK_END);
});
