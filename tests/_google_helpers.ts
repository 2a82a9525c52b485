/** Helpers of the Google Cloud provider tests: frame collection, error capture, the token fake. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { clearGoogleTokenCache } from "../providers/google/auth.ts";
import { GoogleOAuthFake } from "./fakes/google_oauth_fake.ts";

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
