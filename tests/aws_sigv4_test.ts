/**
 * The SigV4 signer against AWS's published test suite (tests/fixtures/aws_sigv4_testsuite.json,
 * copied from awslabs/aws-c-auth tests/aws-signing-test-suite/v4): for every case, header
 * signing and query presigning give the suite's canonical request, string to sign and signature.
 */

import assert from "node:assert/strict";
import {
  amzDate,
  presignRequest,
  type SignableRequest,
  signRequest,
} from "../providers/aws/sigv4.ts";

interface SuiteCase {
  context: {
    credentials: { access_key_id: string; secret_access_key: string; token?: string };
    expiration_in_seconds: number;
    region: string;
    service: string;
    sign_body: boolean;
    timestamp: string;
  };
  request: string;
  header?: { canonicalRequest: string; stringToSign: string; signature: string };
  query?: { canonicalRequest: string; stringToSign: string; signature: string };
}

const suite = JSON.parse(
  await Deno.readTextFile(new URL("./fixtures/aws_sigv4_testsuite.json", import.meta.url)),
) as { cases: Record<string, SuiteCase> };

/** A request.txt of the suite: request line, headers (folded lines joined), blank, body. */
function parseRequest(text: string): SignableRequest {
  const [head, ...rest] = text.split("\n\n");
  const lines = head.split("\n");
  // The target may hold spaces (get-space): it runs from the first space to the last.
  const first = lines[0].indexOf(" ");
  const method = lines[0].slice(0, first);
  const target = lines[0].slice(first + 1, lines[0].lastIndexOf(" "));
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line === "") continue;
    if (/^\s/.test(line) && headers.length > 0) headers.at(-1)![1] += ` ${line.trim()}`;
    else {
      const colon = line.indexOf(":");
      headers.push([line.slice(0, colon), line.slice(colon + 1)]);
    }
  }
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? [] : target.slice(q + 1).split("&").filter((p) => p !== "").map((p) => {
    const eq = p.indexOf("=");
    const [k, v] = eq < 0 ? [p, ""] : [p.slice(0, eq), p.slice(eq + 1)];
    return [decodeURIComponent(k), decodeURIComponent(v)] as [string, string];
  });
  const body = rest.join("\n\n");
  return { method, path, query, headers, body };
}

const cases = Object.entries(suite.cases);

Deno.test("sigv4 suite: the fixture holds the published cases", () => {
  assert.ok(cases.length >= 25, `${cases.length} cases`);
  assert.ok(suite.cases["get-vanilla-with-session-token"]);
  assert.ok(suite.cases["post-x-www-form-urlencoded"]);
});

for (const [name, c] of cases) {
  const ctx = c.context;
  const creds = {
    accessKeyId: ctx.credentials.access_key_id,
    secretAccessKey: ctx.credentials.secret_access_key,
    ...(ctx.credentials.token ? { sessionToken: ctx.credentials.token } : {}),
  };
  const scope = { region: ctx.region, service: ctx.service, date: new Date(ctx.timestamp) };
  if (c.header) {
    const want = c.header;
    Deno.test(`sigv4 suite ${name}: header signature`, async () => {
      const signed = await signRequest(parseRequest(c.request), creds, scope, {
        signBody: ctx.sign_body,
      });
      assert.equal(signed.parts.canonicalRequest, want.canonicalRequest);
      assert.equal(signed.parts.stringToSign, want.stringToSign);
      assert.equal(signed.parts.signature, want.signature);
      const auth = signed.headers.find(([n]) => n === "authorization")![1];
      assert.equal(
        auth,
        `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${signed.parts.credentialScope}, ` +
          `SignedHeaders=${signed.parts.signedHeaders}, Signature=${want.signature}`,
      );
    });
  }
  if (c.query) {
    const want = c.query;
    Deno.test(`sigv4 suite ${name}: presigned query`, async () => {
      const req = parseRequest(c.request);
      const signed = await presignRequest(req, creds, scope, ctx.expiration_in_seconds);
      assert.equal(signed.parts.canonicalRequest, want.canonicalRequest);
      assert.equal(signed.parts.stringToSign, want.stringToSign);
      assert.equal(signed.parts.signature, want.signature);
      assert.deepEqual(signed.query.at(-1), ["X-Amz-Signature", want.signature]);
      assert.ok(signed.query.some(([k, v]) => k === "X-Amz-Date" && v === amzDate(scope.date)));
    });
  }
}

Deno.test("sigv4: a different secret or a later time gives another signature", async () => {
  const c = suite.cases["get-vanilla"];
  const req = parseRequest(c.request);
  const scope = { region: "us-east-1", service: "service", date: new Date(c.context.timestamp) };
  const good = await signRequest(req, {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: c.context.credentials.secret_access_key,
  }, scope);
  const other = await signRequest(req, { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "x" }, scope);
  const later = await signRequest(req, {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: c.context.credentials.secret_access_key,
  }, { ...scope, date: new Date(scope.date.getTime() + 1000) });
  assert.equal(good.parts.signature, c.header!.signature);
  assert.notEqual(other.parts.signature, good.parts.signature);
  assert.notEqual(later.parts.signature, good.parts.signature);
});

Deno.test("sigv4: a percent-encoded path segment is encoded again (all services but S3)", async () => {
  const signed = await signRequest(
    {
      method: "POST",
      path: "/model/amazon.nova-lite-v1%3A0/converse-stream",
      query: [],
      headers: [["host", "bedrock-runtime.us-east-1.amazonaws.com"]],
      body: "{}",
    },
    { accessKeyId: "AKID", secretAccessKey: "secret" },
    { region: "us-east-1", service: "bedrock", date: new Date("2024-01-01T00:00:00Z") },
  );
  assert.equal(
    signed.parts.canonicalRequest.split("\n")[1],
    "/model/amazon.nova-lite-v1%253A0/converse-stream",
  );
});
