/** Test helper: a throwaway CA and a server certificate for 127.0.0.1, made with openssl. */

/** Paths of the PEM files made by {@link makeTestCerts}. */
export interface TestCerts {
  /** Directory holding them (remove it when done). */
  dir: string;
  /** The CA certificate. */
  caFile: string;
  /** The server certificate (CN and SAN 127.0.0.1 and localhost), signed by the CA. */
  certFile: string;
  /** Its private key. */
  keyFile: string;
  /** Certificate and key in one file (what baresip takes). */
  bundleFile: string;
}

function openssl(args: string[], cwd: string): void {
  const out = new Deno.Command("openssl", { args, cwd, stdout: "null", stderr: "piped" })
    .outputSync();
  if (out.code !== 0) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** Make a CA and a server certificate under ./.tmp (valid for two days). */
export function makeTestCerts(): TestCerts {
  const dir = `${Deno.cwd()}/.tmp/certs-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  openssl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=Flowcat test CA",
  ], dir);
  openssl([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    "/CN=127.0.0.1",
  ], dir);
  Deno.writeTextFileSync(`${dir}/ext`, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl([
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "ext",
  ], dir);
  Deno.writeTextFileSync(
    `${dir}/bundle.pem`,
    Deno.readTextFileSync(`${dir}/server.pem`) + Deno.readTextFileSync(`${dir}/server.key`),
  );
  return {
    dir,
    caFile: `${dir}/ca.pem`,
    certFile: `${dir}/server.pem`,
    keyFile: `${dir}/server.key`,
    bundleFile: `${dir}/bundle.pem`,
  };
}
