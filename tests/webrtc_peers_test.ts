import assert from "node:assert/strict";
import {
  ipv4Network,
  playgroundPeerWarning,
  ungrantedPeerAddresses,
  webrtcPeerHosts,
} from "../server/webrtc_peers.ts";
import { serverEntry } from "../tools/entry_points.ts";
import { loadConfig } from "../server/config.ts";
import { startServerChild } from "./_server_child.ts";

const HOST = [
  { address: "127.0.0.1", cidr: "127.0.0.1/8" },
  { address: "192.0.2.2", cidr: "192.0.2.2/24" },
  { address: "10.20.30.40", cidr: "10.20.30.40/20" },
  { address: "fd00::2", cidr: "fd00::2/64" },
  { address: "198.51.100.7", cidr: "198.51.100.7/32" },
];

Deno.test("ipv4Network: the network address of a CIDR", () => {
  assert.equal(ipv4Network("192.0.2.77/24"), "192.0.2.0/24");
  assert.equal(ipv4Network("10.20.30.40/20"), "10.20.16.0/20");
  assert.equal(ipv4Network("10.1.2.3/0"), "0.0.0.0/0");
  assert.equal(ipv4Network("10.1.2.3/32"), "10.1.2.3/32");
  assert.equal(ipv4Network("fd00::2/64"), undefined);
  assert.equal(ipv4Network("10.1.2.3/33"), undefined);
  assert.equal(ipv4Network("10.1.2/8"), undefined);
});

Deno.test("webrtcPeerHosts: loopback listen grants this host's addresses only", () => {
  // A page served on loopback is opened on this machine, whose browser sends from these.
  assert.deepEqual(webrtcPeerHosts("127.0.0.1", HOST), [
    "192.0.2.2",
    "10.20.30.40",
    "198.51.100.7",
  ]);
  assert.deepEqual(webrtcPeerHosts("localhost", HOST), webrtcPeerHosts("127.0.0.1", HOST));
});

Deno.test("webrtcPeerHosts: a LAN listen adds each interface's subnet", () => {
  assert.deepEqual(webrtcPeerHosts("0.0.0.0", HOST), [
    "192.0.2.2",
    "10.20.30.40",
    "198.51.100.7",
    "192.0.2.0/24",
    "10.20.16.0/20",
  ]);
  assert.deepEqual(webrtcPeerHosts("192.0.2.2", []), []);
});

Deno.test("ungrantedPeerAddresses: this host's addresses --allow-net does not cover", () => {
  const granted = new Set(["192.0.2.2"]);
  assert.deepEqual(ungrantedPeerAddresses(HOST, (h) => granted.has(h)), [
    "10.20.30.40",
    "198.51.100.7",
  ]);
  assert.deepEqual(ungrantedPeerAddresses(HOST, () => true), []);
  assert.equal(playgroundPeerWarning([]), undefined);
  assert.match(playgroundPeerWarning(["10.20.30.40"])!, /10\.20\.30\.40.*playground\.media_hosts/);
});

Deno.test("playground: flags baked at build time warn that local browsers get no audio", async () => {
  // This host's IPv4 addresses as `ip` lists them (the test may not list interfaces itself).
  const ip = await new Deno.Command("ip", { args: ["-o", "-4", "addr", "show"] }).output();
  const addresses = webrtcPeerHosts(
    "127.0.0.1",
    [...new TextDecoder().decode(ip.stdout).matchAll(/inet (\d+\.\d+\.\d+\.\d+)\//g)]
      .map((m) => ({ address: m[1] })),
  );
  const path = "examples/agent.yaml";
  const loaded = await loadConfig(path);
  assert.ok(loaded.ok);
  // What deno task compile bakes: no interface address (they are the build machine's).
  const baked = serverEntry(loaded.config, path, (p) => p).flags;
  const compiled = await startServerChild(path, {}, { flags: baked });
  const started = await startServerChild(path, {}, { launcher: true });
  try {
    const warned = /warning: --allow-net does not cover this host's address ([^:]+):/
      .exec(compiled.stdout());
    if (addresses.length === 0) assert.equal(warned, null); // nothing to warn about here
    else assert.deepEqual(warned?.[1].split(", "), addresses, compiled.stdout());
    // deno task start grants them where it runs: no warning.
    assert.doesNotMatch(started.stdout(), /does not cover/);
  } finally {
    assert.equal(await compiled.stop(), 0, compiled.stderr());
    assert.equal(await started.stop(), 0, started.stderr());
  }
});
