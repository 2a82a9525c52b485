/**
 * The RS256 JWT the Vonage Voice API takes as its Bearer token, signed with the application's
 * private key (PKCS#8 PEM).
 * @module
 */

const b64url = (bytes: Uint8Array): string =>
  bytes.toBase64().replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

const enc = (o: unknown): string => b64url(new TextEncoder().encode(JSON.stringify(o)));

/** A JWT for `applicationId`, valid for `ttlS` seconds, signed with the PEM `privateKey`. */
export async function vonageJwt(
  applicationId: string,
  privateKey: string,
  ttlS = 300,
): Promise<string> {
  // An env var often holds the PEM with literal "\n" for its line breaks.
  const body = privateKey.replace(/\\n/g, "\n").replace(/-----[A-Z ]+-----/g, "").replace(
    /\s+/g,
    "",
  );
  let der: Uint8Array<ArrayBuffer>;
  try {
    der = Uint8Array.fromBase64(body);
  } catch {
    throw new Error("the Vonage private key is not a PEM key");
  }
  const key = await crypto.subtle.importKey(
    "pkcs8",
    der,
    { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    false,
    ["sign"],
  ).catch(() => {
    throw new Error("the Vonage private key is not a PKCS#8 RSA key");
  });
  const now = Math.floor(Date.now() / 1000);
  const head = `${enc({ alg: "RS256", typ: "JWT" })}.${
    enc({ application_id: applicationId, iat: now, exp: now + ttlS, jti: crypto.randomUUID() })
  }`;
  const sig = await crypto.subtle.sign(
    "RSASSA-PKCS1-v1_5",
    key,
    new TextEncoder().encode(head),
  );
  return `${head}.${b64url(new Uint8Array(sig))}`;
}
