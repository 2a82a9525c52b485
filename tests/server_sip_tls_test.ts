/** The SIP trunk's TLS files: read into the agent's TLS options, with errors that name the field. */

import assert from "node:assert/strict";
import { readSipTlsFiles, sipTlsReads } from "../server/sip_tls.ts";
import { makeTestCerts } from "./_tls_certs.ts";

Deno.test("sip tls files: certificate, key and CA read; missing or non-PEM files named", async () => {
  const c = makeTestCerts();
  try {
    const tls = await readSipTlsFiles({
      port: 5061,
      certFile: c.certFile,
      keyFile: c.keyFile,
      caFile: c.caFile,
    });
    assert.equal(tls.port, 5061);
    assert.match(tls.cert!, /BEGIN CERTIFICATE/);
    assert.match(tls.key!, /PRIVATE KEY/);
    assert.equal(tls.caCerts?.length, 1);
    const clientOnly = await readSipTlsFiles({ port: 5061, caFile: c.caFile });
    assert.equal(clientOnly.cert, undefined);
    await assert.rejects(
      readSipTlsFiles({ port: 5061, certFile: `${c.dir}/nope.pem`, keyFile: c.keyFile }),
      /telephony\.sip\.tls\.cert_file: cannot read .*nope\.pem/,
    );
    await assert.rejects(
      readSipTlsFiles({ port: 5061, certFile: c.certFile, keyFile: c.certFile }),
      /telephony\.sip\.tls\.key_file: .* holds no PEM block/,
    );
    assert.deepEqual(sipTlsReads({ port: 1, caFile: "ca.pem" }), ["ca.pem"]);
    assert.deepEqual(sipTlsReads(undefined), []);
  } finally {
    Deno.removeSync(c.dir, { recursive: true });
  }
});
