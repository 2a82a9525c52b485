/**
 * SigV4 signing of an event stream sent as a request body, message by message (what Bedrock's
 * `InvokeModelWithBidirectionalStream` and Transcribe's HTTP/2 streaming require). The request
 * itself is signed with the literal payload hash `STREAMING-AWS4-HMAC-SHA256-EVENTS`; its
 * signature seeds a chain. Each outgoing message is then wrapped in an envelope message whose
 * payload is the encoded message and whose headers are `:date` (timestamp) and
 * `:chunk-signature` (32 bytes), the signature over
 *
 * ```
 * AWS4-HMAC-SHA256-PAYLOAD \n <amz date> \n <scope> \n <prior signature> \n
 * hex(sha256(encoded :date header)) \n hex(sha256(payload))
 * ```
 *
 * with the request's derived key. An envelope with an empty payload ends the stream. This is
 * `SignatureV4.signMessage` of `@smithy/signature-v4` and the `EventSigningStream` of
 * `@aws-sdk/eventstream-handler-node`; tests/aws_event_signing_test.ts checks it against
 * signatures that SDK made.
 * @module
 */

import { encodeHeaders, encodeMessage, type EventHeaders } from "./event_stream.ts";
import { amzDate, credentialScope, sha256Hex, signingKey, type SigningScope } from "./sigv4.ts";

/** The payload hash a request signed message by message carries (`x-amz-content-sha256`). */
export const STREAMING_EVENTS_PAYLOAD = "STREAMING-AWS4-HMAC-SHA256-EVENTS";

const EVENT_ALGORITHM = "AWS4-HMAC-SHA256-PAYLOAD";

/** The signature of one message in the chain (hex). */
export async function eventSignature(
  secret: string,
  scope: SigningScope,
  priorSignature: string,
  headers: EventHeaders,
  payload: Uint8Array,
): Promise<string> {
  const stringToSign = [
    EVENT_ALGORITHM,
    amzDate(scope.date),
    credentialScope(scope),
    priorSignature,
    await sha256Hex(encodeHeaders(headers)),
    await sha256Hex(payload),
  ].join("\n");
  const key = await crypto.subtle.importKey(
    "raw",
    await signingKey(secret, scope) as BufferSource,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(stringToSign)),
  );
  return mac.toHex();
}

/**
 * Wraps messages in signed envelopes, each signature chained to the one before. Calls must be
 * serialized (each awaits the previous signature).
 */
export class EventSigner {
  #prior: string;
  #chain: Promise<unknown> = Promise.resolve();

  /**
   * @param secret The secret access key.
   * @param scope Region and service (its `date` is replaced by each message's time).
   * @param seedSignature The hex signature of the request that opened the stream.
   * @param now Clock (tests).
   */
  constructor(
    private readonly secret: string,
    private readonly scope: Omit<SigningScope, "date">,
    seedSignature: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#prior = seedSignature;
  }

  /** The envelope of `message` (encoded event-stream bytes); empty `message` ends the stream. */
  sign(message: Uint8Array): Promise<Uint8Array> {
    const next = this.#chain.then(async () => {
      const date = this.now();
      const headers: EventHeaders = {
        ":date": { type: "timestamp", value: BigInt(date.getTime()) },
      };
      const signature = await eventSignature(
        this.secret,
        { ...this.scope, date },
        this.#prior,
        headers,
        message,
      );
      this.#prior = signature;
      return encodeMessage({
        headers: {
          ...headers,
          ":chunk-signature": { type: "binary", value: Uint8Array.fromHex(signature) },
        },
        payload: message,
      });
    });
    this.#chain = next.catch(() => {});
    return next;
  }
}
