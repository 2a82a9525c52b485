/**
 * Which source addresses may send the agent requests: a list of IPv4 / IPv6 addresses and CIDR
 * blocks (`203.0.113.0/24`, `2001:db8::/32`), the way an IP-authenticated trunk, an SBC, a PBX
 * or a proxy in front of the agent is identified. Pure; IPv4-mapped IPv6 sources
 * (`::ffff:192.0.2.1`) match their IPv4 entries.
 *
 * @example
 * ```ts
 * const f = SourceFilter.parse(["203.0.113.0/24", "198.51.100.7"]);
 * f.admits("203.0.113.42"); // true
 * f.admits("192.0.2.1"); // false
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";

/** A parsed address: its bits and width (32 or 128). */
interface Address {
  bits: bigint;
  width: 32 | 128;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function parseV4(text: string): Address | undefined {
  if (!IPV4.test(text)) return undefined;
  const bits = text.split(".").reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
  return { bits, width: 32 };
}

function parseV6(text: string): Address | undefined {
  const t = text.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  if (!/^[0-9a-fA-F:.]+$/.test(t) || !t.includes(":")) return undefined;
  let groups: string[];
  const dbl = t.indexOf("::");
  if (dbl >= 0) {
    if (t.indexOf("::", dbl + 1) >= 0) return undefined;
    const head = t.slice(0, dbl) === "" ? [] : t.slice(0, dbl).split(":");
    const tail = t.slice(dbl + 2) === "" ? [] : t.slice(dbl + 2).split(":");
    const v4Tail = tail.length > 0 && tail[tail.length - 1].includes(".") ? 1 : 0;
    const missing = 8 - head.length - tail.length - v4Tail;
    if (missing < 1) return undefined;
    groups = [...head, ...Array(missing).fill("0"), ...tail];
  } else groups = t.split(":");
  let bits = 0n;
  let count = 0;
  for (const [i, g] of groups.entries()) {
    if (g.includes(".") && i === groups.length - 1) {
      const v4 = parseV4(g);
      if (v4 === undefined) return undefined;
      bits = (bits << 32n) | v4.bits;
      count += 2;
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      bits = (bits << 16n) | BigInt(parseInt(g, 16));
      count += 1;
    }
  }
  return count === 8 ? { bits, width: 128 } : undefined;
}

/** Parse an IPv4 or IPv6 address (IPv6 optionally in brackets); undefined when it is neither. */
export function parseIp(text: string): { bits: bigint; width: 32 | 128 } | undefined {
  return parseV4(text) ?? parseV6(text);
}

/** One allowed block. */
interface Block {
  bits: bigint;
  width: 32 | 128;
  prefix: number;
}

/** Parse `addr` or `addr/prefix`; undefined when malformed. */
export function parseCidr(
  text: string,
): { bits: bigint; width: 32 | 128; prefix: number } | undefined {
  const slash = text.indexOf("/");
  const addr = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (addr === undefined) return undefined;
  let prefix: number = addr.width;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > addr.width) return undefined;
    prefix = Number(p);
  }
  return { ...addr, prefix };
}

/** True when `addr` lies inside `block`. */
function within(addr: Address, block: Block): boolean {
  let a = addr;
  if (a.width === 128 && block.width === 32 && (a.bits >> 32n) === 0xffffn) {
    a = { bits: a.bits & 0xffffffffn, width: 32 };
  }
  if (a.width !== block.width) return false;
  const shift = BigInt(block.width - block.prefix);
  return (a.bits >> shift) === (block.bits >> shift);
}

/** The allowed sources of inbound requests. */
export class SourceFilter {
  readonly #blocks: Block[];
  /** The entries as given. */
  readonly entries: readonly string[];

  private constructor(blocks: Block[], entries: string[]) {
    this.#blocks = blocks;
    this.entries = Object.freeze([...entries]);
  }

  /** Parse `entries` (addresses or CIDR blocks); throws a FlowcatError naming a bad one. */
  static parse(entries: readonly string[]): SourceFilter {
    const blocks: Block[] = [];
    for (const e of entries) {
      const b = parseCidr(e.trim());
      if (b === undefined) {
        throw new FlowcatError("config", `not an IP address or CIDR block: ${JSON.stringify(e)}`);
      }
      blocks.push(b);
    }
    return new SourceFilter(blocks, [...entries]);
  }

  /** True when a request from `ip` may be processed. */
  admits(ip: string): boolean {
    const addr = parseIp(ip);
    if (addr === undefined) return false;
    return this.#blocks.some((b) => within(addr, b));
  }
}
