import assert from "node:assert/strict";
import { formatConfigProblems, requiredEnv } from "../server/config.ts";
import { permissionFlags } from "../server/permissions.ts";
import { at, parse, problems, SIP_OK, yaml } from "./_server_config_helpers.ts";

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
  const tls = await parse(
    yaml(
      `telephony: { sip: { server: "sips:trunk.example.com", login: bob, password_env: P, caller_id: "+15551230000" } }`,
    ),
  );
  assert.ok(tls.ok, "sips: is accepted");
  const halfTls = await problems(
    yaml(`telephony: { sip: { ${SIP_OK}, tls: { cert_file: a.pem } } }`),
  );
  at(halfTls, "telephony.sip.tls", "cert_file and key_file go together");
  const sctp = await problems(
    yaml(
      `telephony: { sip: { server: "sip:trunk.example.com;transport=sctp", login: bob, password_env: P, caller_id: "+15551230000" } }`,
    ),
  );
  at(sctp, "telephony.sip.server", "transport=sctp is not supported (udp, tcp or tls)");
  const tcp = await parse(
    yaml(
      `telephony: { sip: { server: "sip:trunk.example.com;transport=tcp", login: bob, password_env: P, caller_id: "+15551230000" } }`,
    ),
  );
  assert.ok(tcp.ok, tcp.ok ? "" : formatConfigProblems(tcp.problems));
  const overlap = await problems(yaml(`telephony: { sip: { ${SIP_OK}, sip_port: 16010 } }`));
  at(overlap, "telephony.sip.sip_port", "inside the RTP range 16000-16399");
});

Deno.test("config: register: false needs no credentials and turns the source filter on", async () => {
  const r = await parse(yaml(`telephony:
  sip:
    server: sip:203.0.113.5
    register: false
    caller_id: "+15551230000"
    inbound: { allow: [198.51.100.0/24, 192.0.2.7] }`));
  assert.ok(r.ok, r.ok ? "" : formatConfigProblems(r.problems));
  const sip = r.config.telephony.sip!;
  assert.equal(sip.register, false);
  assert.equal(sip.login, "flowcat");
  assert.equal(sip.passwordEnv, undefined);
  assert.deepEqual(sip.inbound, {
    allow: ["198.51.100.0/24", "192.0.2.7"],
    filter: true,
    refused: "reject",
  });
  assert.deepEqual(requiredEnv(r.config).filter((e) => e.path?.startsWith("telephony")), []);
  // The peers are granted in --allow-net as written (Deno takes IPv4 CIDR blocks).
  const net = permissionFlags(r.config, { configPath: "cfg/agent.yaml" })[0];
  assert.match(net, /,203\.0\.113\.5:5060,198\.51\.100\.0\/24,192\.0\.2\.7(,|$)/);
});

Deno.test("config: registering still needs login and password_env", async () => {
  const ps = await problems(
    yaml(`telephony: { sip: { server: sip:trunk.example.com, caller_id: "+15551230000" } }`),
  );
  at(ps, "telephony.sip.login", "is missing (the SIP auth username of the trunk; or set register");
  at(ps, "telephony.sip.password_env", "is missing");
});

Deno.test("config: inbound auth, keep-alive, expiry and RTP source are read and checked", async () => {
  const r = await parse(yaml(`telephony:
  sip:
    ${SIP_OK.replaceAll(", ", "\n    ").replaceAll(": ", ": ")}
    register_expires: 600
    rtp_source: any
    keepalive: { mode: options, interval_seconds: 15 }
    media: { srtp: required }
    tcp: true
    transfer: { bridge_fallback: false, dial_timeout_seconds: 12, hold_audio_file: hold.wav }
    inbound:
      filter: true
      refused: ignore
      auth: { username: pbx, password_env: SIP_INBOUND_PASSWORD, challenge: 407 }`));
  assert.ok(r.ok, r.ok ? "" : formatConfigProblems(r.problems));
  const sip = r.config.telephony.sip!;
  assert.equal(sip.registerExpires, 600);
  assert.equal(sip.rtpSource, "any");
  assert.deepEqual(sip.keepalive, { mode: "options", intervalSeconds: 15 });
  assert.equal(sip.srtp, "required");
  assert.equal(sip.tcp, true);
  assert.deepEqual(sip.transfer, {
    bridgeFallback: false,
    dialTimeoutSeconds: 12,
    holdAudioFile: "cfg/hold.wav",
  });
  // The hold audio is read at start: granted to read, and nothing else is.
  const flags = permissionFlags(r.config, { configPath: "cfg/agent.yaml" });
  assert.ok(flags.some((f) => f.startsWith("--allow-read=") && f.includes("cfg/hold.wav")));
  assert.deepEqual(sip.inbound, {
    allow: [],
    filter: true,
    refused: "ignore",
    auth: {
      username: "pbx",
      passwordEnv: "SIP_INBOUND_PASSWORD",
      realm: "flowcat",
      challenge: 407,
      algorithms: ["MD5"],
    },
  });
  const env = requiredEnv(r.config).find((e) => e.name === "SIP_INBOUND_PASSWORD");
  assert.equal(env?.required, true);
  const bad = await problems(yaml(`telephony:
  sip:
    ${SIP_OK.replaceAll(", ", "\n    ")}
    register_expires: 5
    rtp_source: symmetric
    keepalive: { mode: stun, interval_seconds: 1 }
    media: { srtp: dtls }
    transfer: { bridge_fallback: maybe, dial_timeout_seconds: 1 }
    inbound:
      allow: [example.com, 10.0.0.0/33, "2001:db8::/32"]
      refused: drop
      auth: { username: pbx, password: hunter2, challenge: 403 }`));
  at(bad, "telephony.sip.register_expires", "at least 30");
  at(bad, "telephony.sip.rtp_source", "must be one of: latch, sdp, any");
  at(bad, "telephony.sip.keepalive.mode", "must be one of: crlf, options, off");
  at(bad, "telephony.sip.keepalive.interval_seconds", "at least 5");
  at(bad, "telephony.sip.media.srtp", "must be one of: required, optional, off");
  at(bad, "telephony.sip.transfer.bridge_fallback", "expected true or false");
  at(bad, "telephony.sip.transfer.dial_timeout_seconds", "at least 5");
  at(bad, "telephony.sip.inbound.allow[0]", "is not an IPv4 address or CIDR block");
  at(bad, "telephony.sip.inbound.allow[1]", "is not an IPv4 address or CIDR block");
  at(bad, "telephony.sip.inbound.allow[2]", "is not an IPv4 address or CIDR block");
  at(bad, "telephony.sip.inbound.refused", "must be one of: reject, ignore");
  at(bad, "telephony.sip.inbound.auth.password", "SIP_INBOUND_PASSWORD");
  at(bad, "telephony.sip.inbound.auth.challenge", "must be 401 or 407");
  assert.ok(!formatConfigProblems(bad).includes("hunter2"));
});

Deno.test("config: allow lists take IPv4 CIDR blocks", async () => {
  const r = await parse(yaml(`telephony: { sip: { ${SIP_OK}, allow_hosts: [203.0.113.0/24] } }`));
  assert.ok(r.ok, r.ok ? "" : formatConfigProblems(r.problems));
  const bad = await problems(yaml(`telephony: { sip: { ${SIP_OK}, allow_hosts: [1.2.3.4/40] } }`));
  at(bad, "telephony.sip.allow_hosts[0]", "CIDR block");
});
