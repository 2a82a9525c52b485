/** Helpers of the Google Cloud provider tests: frame collection, error capture, the token fake. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { clearGoogleTokenCache } from "../providers/google/auth.ts";
import { GoogleOAuthFake, makeServiceAccountKey } from "./fakes/google_oauth_fake.ts";

/** Every frame of `it`. */
export async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

/** The FlowcatError `p` rejects with (anything else fails the test). */
export async function rejects(p: Promise<unknown>): Promise<FlowcatError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof FlowcatError, `expected FlowcatError, got ${err}`);
    return err;
  }
  assert.fail("expected a rejection");
}

/**
 * Run `fn` with a started token endpoint and the JSON of a key it trusts; the token cache is
 * empty before and after.
 */
export async function withOAuth(
  fn: (oauth: GoogleOAuthFake, keyJson: string) => Promise<void>,
): Promise<void> {
  clearGoogleTokenCache();
  const oauth = await new GoogleOAuthFake().start();
  try {
    const account = await oauth.account();
    await fn(oauth, account.json);
  } finally {
    clearGoogleTokenCache();
    await oauth.close();
  }
}

/** A started token endpoint with a key it trusts and one it does not (conformance rigs). */
export interface OAuthRig {
  oauth: GoogleOAuthFake;
  /** The trusted key file's JSON. */
  keyJson: string;
  /** A key file's JSON the endpoint does not know (a wrong credential). */
  wrongJson: string;
  /** A piece of the wrong key's private key: an error must never show it. */
  wrongSecret: string;
  close(): Promise<void>;
}

/** Start {@link OAuthRig}; its close stops the endpoint and empties the token cache. */
export async function startOAuthRig(): Promise<OAuthRig> {
  clearGoogleTokenCache();
  const oauth = await new GoogleOAuthFake().start();
  const keyJson = (await oauth.account()).json;
  const wrongJson = (await makeServiceAccountKey(oauth.tokenUri, "flowcat-other")).json;
  const wrongSecret = (JSON.parse(wrongJson).private_key as string).slice(40, 100);
  return {
    oauth,
    keyJson,
    wrongJson,
    wrongSecret,
    async close() {
      clearGoogleTokenCache();
      await oauth.close();
    },
  };
}
