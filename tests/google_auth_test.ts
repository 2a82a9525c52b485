/** Google service-account JWT -> OAuth token flow against a local token endpoint. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  CLOUD_PLATFORM_SCOPE,
  googleAccessToken,
  parseServiceAccount,
} from "../providers/google/auth.ts";
import { makeServiceAccountKey } from "./fakes/google_oauth_fake.ts";
import { rejects, withOAuth } from "./_google_helpers.ts";

const withToken = withOAuth;

Deno.test("google auth: signed JWT is verified by the endpoint; the token is cached", async () => {
  await withToken(async (fake, json) => {
    const account = parseServiceAccount("vertex", json);
    const [a, b] = await Promise.all([googleAccessToken(account), googleAccessToken(account)]);
    assert.equal(a, b, "concurrent callers share one request");
    assert.equal(await googleAccessToken(account), a, "cached until near expiry");
    assert.equal(fake.grants.length, 1);
    const claims = fake.grants[0];
    assert.equal(claims.iss, account.clientEmail);
    assert.equal(claims.aud, fake.tokenUri);
    assert.equal(claims.scope, CLOUD_PLATFORM_SCOPE);
    assert.equal((claims.exp as number) - (claims.iat as number), 3600);
    assert.ok(fake.accepts(a));
  });
});

Deno.test("google auth: a token is replaced five minutes before it expires", async () => {
  await withToken(async (fake, json) => {
    const account = parseServiceAccount("vertex", json);
    let now = Date.now();
    const clock = () => now;
    fake.clock = clock;
    const first = await googleAccessToken(account, { now: clock });
    now += (3599 - 301) * 1000; // just before the refresh point
    assert.equal(await googleAccessToken(account, { now: clock }), first);
    now += 2000; // past it: under five minutes left
    const second = await googleAccessToken(account, { now: clock });
    assert.notEqual(second, first);
    assert.equal(fake.grants.length, 2);
  });
});

Deno.test("google auth: a key the endpoint does not trust is an auth error without the key", async () => {
  await withToken(async (fake) => {
    const stranger = await makeServiceAccountKey(fake.tokenUri);
    const account = parseServiceAccount("google", stranger.json);
    const err = await rejects(googleAccessToken(account));
    assert.equal(err.kind, "auth");
    assert.match(err.message, /^google: OAuth token request failed: HTTP 400/);
    assert.match(err.message, /invalid_grant/);
    assert.ok(!err.message.includes("PRIVATE KEY"));
    assert.deepEqual(fake.refusals, ["invalid_grant"]);
  });
});

Deno.test("google auth: a 503 from the token endpoint is retried", async () => {
  await withToken(async (fake, json) => {
    fake.failNext = [503];
    const token = await googleAccessToken(parseServiceAccount("google", json));
    assert.ok(fake.accepts(token));
  });
});

Deno.test("google auth: key files that are not service-account keys say so in one line", () => {
  const cases: [string, RegExp][] = [
    ["not json", /not JSON/],
    ['{"type":"authorized_user","client_email":"a","private_key":"x"}', /type is authorized_user/],
    ['{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----"}', /no client_email/],
    ['{"type":"service_account","client_email":"a@b"}', /no private_key/],
  ];
  for (const [text, why] of cases) {
    assert.throws(() => parseServiceAccount("google", text), (e: unknown) => {
      assert.ok(e instanceof FlowcatError && e.kind === "config");
      assert.match(
        e.message,
        /^google: the GOOGLE_APPLICATION_CREDENTIALS file is not a service-account key/,
      );
      assert.match(e.message, why);
      assert.ok(!e.message.includes("\n"));
      return true;
    });
  }
});

Deno.test("google auth: a private key that is not PKCS#8 RSA is a config error", async () => {
  const account = parseServiceAccount(
    "google",
    JSON.stringify({
      type: "service_account",
      client_email: "a@b",
      private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    }),
  );
  const err = await rejects(googleAccessToken(account));
  assert.equal(err.kind, "config");
  assert.match(err.message, /not a PKCS#8 RSA key/);
});
