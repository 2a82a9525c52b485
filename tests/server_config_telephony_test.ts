import assert from "node:assert/strict";
import { formatConfigProblems } from "../server/config.ts";
import { at, problems, SIP_OK, yaml } from "./_server_config_helpers.ts";

Deno.test("config: carriers and webhook secrets are checked by name", async () => {
  const ps = await problems(yaml(`telephony:
  carriers: [telnyx, twillio, telnyx]
  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN, plivoo: X, telnyx: "not a name!" }`));
  at(ps, "telephony.carriers[1]", 'unknown carrier "twillio" (did you mean "twilio"?)');
  at(ps, "telephony.carriers[2]", 'carrier "telnyx" is listed twice');
  at(ps, "telephony.webhook_secrets_env.twilio", "not enabled (add it to telephony.carriers)");
  at(ps, "telephony.webhook_secrets_env.plivoo", 'did you mean "plivo"?');
  at(ps, "telephony.webhook_secrets_env.telnyx", "NAME of an environment variable");
});

Deno.test("config: SIP caller_id must be E.164, with a hint for YAML numbers", async () => {
  const bad = await problems(
    yaml(`telephony: { sip: { ${SIP_OK.replace('"+15551230000"', '"555-1234"')} } }`),
  );
  at(
    bad,
    "telephony.sip.caller_id",
    'must be an E.164 number like "+15551230000" (got "555-1234")',
  );
  const unquoted = await problems(
    yaml(`telephony: { sip: { ${SIP_OK.replace('"+15551230000"', "+15551230000")} } }`),
  );
  at(unquoted, "telephony.sip.caller_id", 'quote it: caller_id: "+15551230000"');
});

Deno.test("config: an inline SIP password is refused and never echoed", async () => {
  const ps = await problems(yaml(`telephony: { sip: { ${SIP_OK}, password: hunter2-secret } }`));
  const p = at(ps, "telephony.sip.password", "secrets are not accepted inline");
  assert.match(p.message, /password_env: SIP_PASSWORD/);
  const keyed = await problems(
    "agent: { graph: graph.yaml }\napi: { token: s3cr3t-token }\nproviders: { realtime: { name: echo, api_key: sk-live-123 } }",
  );
  at(keyed, "api.token", "token_env");
  at(keyed, "providers.realtime.api_key", "<PROVIDER>_API_KEY");
  const envValue = await problems(
    yaml(`telephony: { sip: { ${SIP_OK.replace("SIP_PASSWORD", "hunter2!x")} } }`),
  );
  at(envValue, "telephony.sip.password_env", "NAME of an environment variable");
  const all = formatConfigProblems([...ps, ...keyed, ...envValue]);
  for (const secret of ["hunter2", "s3cr3t", "sk-live"]) assert.ok(!all.includes(secret), all);
});

Deno.test("config: SIP ports, addresses and hosts are range-checked", async () => {
  const ps = await problems(
    yaml(
      `telephony: { sip: { server: "http://x", login: bob, password_env: P, caller_id: "+15551230000",
  public_ip: 300.1.1.1, sip_port: 70000, rtp_port_base: 16001, allow_hosts: ["bad host!"] } }`,
    ),
  );
  at(ps, "telephony.sip.server", "is not a SIP URI");
  at(ps, "telephony.sip.public_ip", "IPv4");
  at(ps, "telephony.sip.sip_port", "must be at most 65535");
  at(ps, "telephony.sip.rtp_port_base", "must be even");
  at(ps, "telephony.sip.allow_hosts[0]", "is not a host");
  const range = await problems(
    yaml(`telephony: { sip: { ${SIP_OK}, rtp_port_base: 65000, rtp_port_tries: 400 } }`),
  );
  at(range, "telephony.sip.rtp_port_tries", "run past 65535 (use at most 268 tries from 65000)");
  const tls = await problems(
    yaml(
      `telephony: { sip: { server: "sips:trunk.example.com", login: bob, password_env: P, caller_id: "+15551230000" } }`,
    ),
  );
  at(tls, "telephony.sip.server", "sips: (SIP over TLS) is not supported");
  const overlap = await problems(yaml(`telephony: { sip: { ${SIP_OK}, sip_port: 16010 } }`));
  at(overlap, "telephony.sip.sip_port", "inside the RTP range 16000-16399");
});
