/**
 * The one SIP parameter parser: LWS around `;` and `=`, quoted strings, case-insensitive names,
 * strict refusal of empty parameters, and the token comparison used for tags and branches.
 */

import assert from "node:assert/strict";
import {
  parseAuthParams,
  parseNameAddr,
  parseParams,
  parseUriParams,
  parseVia,
} from "../telephony/sip/mod.ts";
import { sameToken, scanParams, tokenKey } from "../telephony/sip/params.ts";

Deno.test("params: LWS around ; and =, quoted values, names lower-cased", () => {
  const p = parseParams(' ;   tag    = 1918181833n ; LR ;x="a;b \\"c\\""')!;
  assert.deepEqual([...p], [["tag", "1918181833n"], ["lr", null], ["x", 'a;b "c"']]);
  assert.deepEqual([...parseParams("")!], []);
  assert.deepEqual([...parseParams("branch=z9hG4bK-.!%66*_+`'~")!], [[
    "branch",
    "z9hG4bK-.!%66*_+`'~",
  ]]);
  // Host values: IPv6 references and ports.
  assert.equal(parseParams(";received=[2001:db8::1];rport=5061")!.get("received"), "[2001:db8::1]");
});

Deno.test("params: empty parameters, trailing separators and valueless = are refused", () => {
  for (const bad of [";;", "a=1;;b=2", "a=1;", "a=", "a = ;b", "=x", 'a="open', "a b", "a=<x>"]) {
    assert.equal(parseParams(bad), undefined, bad);
  }
});

Deno.test("URI params admit a comma; header params do not", () => {
  assert.equal(parseUriParams("x=a,b")!.get("x"), "a,b");
  assert.equal(parseParams("x=a,b"), undefined);
});

Deno.test("auth-params: comma lists with empty elements and quoted commas", () => {
  const p = parseAuthParams(' realm="a, b",,  nonce = "n" , algorithm=MD5 ')!;
  assert.deepEqual([...p], [["realm", "a, b"], ["nonce", "n"], ["algorithm", "MD5"]]);
  assert.equal(parseAuthParams("realm"), undefined, "auth-params always have a value");
  assert.deepEqual([...scanParams("a=1", { separator: "," })!], [["a", "1"]]);
});

Deno.test("tags and branches compare as tokens (case-insensitive); keys agree", () => {
  assert.ok(sameToken("AbC", "aBc"));
  assert.ok(!sameToken("abc", "abd"));
  assert.ok(!sameToken("abc", undefined));
  assert.ok(sameToken(undefined, undefined));
  assert.equal(tokenKey("Z9hG4bK1"), tokenKey("z9hg4bk1"));
});

Deno.test("name-addr and Via use the same parser (RFC 4475 §3.1.1.1 forms)", () => {
  const to = parseNameAddr("sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n");
  assert.ok(to.ok);
  assert.equal(to.value.params.get("tag"), "1918181833n");
  const from = parseNameAddr('"J Rosenberg \\\\\\"" <sip:jdrosen@example.com> ; tag = 98asjd8');
  assert.ok(from.ok);
  assert.equal(from.value.displayName, 'J Rosenberg \\"');
  assert.equal(from.value.params.get("tag"), "98asjd8");
  const contact = parseNameAddr(
    '"Quoted string \\"\\"" <sip:jdrosen@example.com> ; newparam = newvalue ; secondparam ; q = 0.33',
  );
  assert.ok(contact.ok);
  assert.deepEqual([...contact.value.params], [
    ["newparam", "newvalue"],
    ["secondparam", null],
    ["q", "0.33"],
  ]);
  const via = parseVia("SIP  /    2.0   / UDP  192.168.255.111   ; branch= z9hG4bK30239");
  assert.ok(via.ok);
  assert.equal(via.value.branch, "z9hG4bK30239");
  assert.equal(parseVia("SIP/2.0/UDP 192.0.2.15;;").ok, false);
  assert.equal(parseVia("SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK").ok, false, "cookie alone");
});

Deno.test("name-addr strictness: token display names, no LWS inside <>, <> for '?'", () => {
  assert.ok(parseNameAddr("caller<sip:caller@example.com>;tag=323").ok, "no LWS before <");
  assert.ok(parseNameAddr("token1~` token2'+_ <sip:m@example.com>").ok);
  assert.equal(parseNameAddr("Bell, Alexander <sip:a.g.bell@example.com>;tag=43").ok, false);
  assert.equal(parseNameAddr('"Watson, Thomas" < sip:t.watson@example.org >').ok, false);
  assert.equal(parseNameAddr('"Mr. J. User <sip:j.user@example.com>').ok, false);
  assert.equal(parseNameAddr("sip:user@example.com?Route=%3Csip:sip.example.com%3E").ok, false);
  assert.ok(parseNameAddr("<sip:user@example.com?Route=%3Csip:sip.example.com%3E>").ok);
  const isbn = parseNameAddr("isbn:2983792873");
  assert.ok(isbn.ok && isbn.value.uri.scheme === "isbn");
  assert.equal(parseNameAddr('"Joe" <sip:joe@example.org>;;;;').ok, false);
});
