/**
 * The HTTPS listener's certificate and key, read from the files `server.tls` names. A browser
 * on another host grants the playground its microphone only on a secure page, so serving the
 * playground beyond this machine needs TLS (a self-signed certificate will do for a LAN; the
 * browser asks the user once).
 *
 * @example
 * ```ts
 * declare const handler: Deno.ServeHandler;
 * const tls = await readTlsFiles({ certFile: "cert.pem", keyFile: "key.pem" });
 * Deno.serve({ port: 6210, ...tls }, handler);
 * ```
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { TlsFiles } from "./config_types.ts";

/** PEM text for `Deno.serve`'s `cert` and `key` options. */
export interface TlsPem {
  /** Certificate chain, PEM. */
  cert: string;
  /** Private key, PEM. */
  key: string;
}

/**
 * Read both files; a missing, unreadable or non-PEM file is a `config` error naming the field
 * (`server.tls.cert_file` / `key_file`) and the path.
 */
export async function readTlsFiles(files: TlsFiles): Promise<TlsPem> {
  const read = async (field: string, path: string, label: RegExp): Promise<string> => {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      throw new FlowcatError(
        "config",
        `server.tls.${field}: cannot read ${path}: ${errorMessage(err)}`,
      );
    }
    if (!label.test(text)) {
      throw new FlowcatError("config", `server.tls.${field}: ${path} holds no PEM block`);
    }
    return text;
  };
  return {
    cert: await read("cert_file", files.certFile, /-----BEGIN CERTIFICATE-----/),
    key: await read("key_file", files.keyFile, /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
  };
}
