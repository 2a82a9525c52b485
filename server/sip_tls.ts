/**
 * The SIP trunk's TLS files (`telephony.sip.tls`): the certificate and key the agent presents
 * when it accepts SIP over TLS, and the CA roots it trusts for a `sips:` server. Only these
 * files are read, and `--print-permissions` grants read access to exactly them.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { SipTlsOptions } from "../telephony/sip/tcp.ts";
import type { SipTlsFiles } from "./config_types.ts";

async function readPem(field: string, path: string, label: RegExp): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new FlowcatError(
      "config",
      `telephony.sip.tls.${field}: cannot read ${path}: ${errorMessage(err)}`,
    );
  }
  if (!label.test(text)) {
    throw new FlowcatError("config", `telephony.sip.tls.${field}: ${path} holds no PEM block`);
  }
  return text;
}

const CERT = /-----BEGIN CERTIFICATE-----/;

/** Read the files `tls` names into the SIP agent's TLS options (a config error names the field). */
export async function readSipTlsFiles(tls: SipTlsFiles): Promise<{ port: number } & SipTlsOptions> {
  const out: { port: number } & SipTlsOptions = { port: tls.port };
  if (tls.certFile !== undefined && tls.keyFile !== undefined) {
    out.cert = await readPem("cert_file", tls.certFile, CERT);
    out.key = await readPem("key_file", tls.keyFile, /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
  }
  if (tls.caFile !== undefined) out.caCerts = [await readPem("ca_file", tls.caFile, CERT)];
  return out;
}

/** The files of `tls`, for `--allow-read`. */
export function sipTlsReads(tls: SipTlsFiles | undefined): string[] {
  if (tls === undefined) return [];
  return [tls.certFile, tls.keyFile, tls.caFile].filter((p): p is string => p !== undefined);
}
