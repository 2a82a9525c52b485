import assert from "node:assert/strict";
import { ipv4Network, webrtcPeerHosts } from "../server/webrtc_peers.ts";

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
