// Answer documents: each carrier's document is well-formed, points at the stream URL with the
// token, escapes XML properly; Exotel and Genesys have none; streamUrl maps the public origin.
import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  answerDocument,
  answerUrl,
  hasAnswerDocument,
  streamUrl,
  xmlEscape,
} from "../telephony/answer.ts";
import { CARRIER_NAMES } from "../telephony/serializers/mod.ts";

// A token with every character XML cares about, and a URL with a second query parameter so the
// `&` separator itself must be escaped.
const TOKEN = `v1.42.x&y<z>"q'`;
const URL_WITH_AMP = "wss://agent.example.com/telephony/ws/twilio/42?token=abc&x=1";

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

function unescapeXml(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => ENTITIES[e]);
}

interface XmlNode {
  name: string;
  attrs: Record<string, string>;
  children: XmlNode[];
  text: string;
}

/**
 * A strict little parser for the XML subset answer documents use: declaration, elements,
 * double-quoted attributes, text, the five predefined entities. Throws on anything malformed
 * (bad nesting, raw `&` or `<`, unquoted or duplicate attributes, trailing content).
 */
function parseXml(doc: string): XmlNode {
  let i = 0;
  const decl = /^<\?xml version="1\.0" encoding="UTF-8"\?>\n/.exec(doc);
  assert.ok(decl, "XML declaration");
  i = decl[0].length;
  const checkText = (t: string) => {
    assert.doesNotMatch(t, /<|&(?!(amp|lt|gt|quot|apos);)/, `raw markup in ${JSON.stringify(t)}`);
    return unescapeXml(t);
  };
  function element(): XmlNode {
    const open = /^<([A-Za-z][\w-]*)((?:\s+[\w-]+="[^"]*")*)\s*(\/?)>/.exec(doc.slice(i));
    assert.ok(open, `element at ${i}: ${doc.slice(i, i + 40)}`);
    i += open[0].length;
    const attrs: Record<string, string> = {};
    for (const m of open[2].matchAll(/([\w-]+)="([^"]*)"/g)) {
      assert.ok(!(m[1] in attrs), `duplicate attribute ${m[1]}`);
      attrs[m[1]] = checkText(m[2]);
    }
    const node: XmlNode = { name: open[1], attrs, children: [], text: "" };
    if (open[3] === "/") return node;
    for (;;) {
      const close = `</${node.name}>`;
      if (doc.startsWith(close, i)) {
        i += close.length;
        return node;
      }
      if (doc[i] === "<") node.children.push(element());
      else {
        const end = doc.indexOf("<", i);
        assert.ok(end > i, "unterminated element");
        node.text += checkText(doc.slice(i, end));
        i = end;
      }
    }
  }
  const root = element();
  assert.equal(i, doc.length, "trailing content after the root element");
  return root;
}

function child(node: XmlNode, name: string): XmlNode {
  const c = node.children.find((n) => n.name === name);
  assert.ok(c, `<${node.name}> has <${name}>`);
  return c;
}

function xmlOf(carrier: Parameters<typeof answerDocument>[0], url = URL_WITH_AMP): XmlNode {
  const doc = answerDocument(carrier, { streamUrl: url, token: TOKEN, runId: 42 });
  assert.ok(doc);
  assert.match(doc.contentType, /^application\/xml/);
  assert.ok(!doc.body.includes("abc&x"), "the & in the URL query is escaped");
  assert.ok(doc.body.includes("abc&amp;x=1"));
  return parseXml(doc.body);
}

Deno.test("xmlEscape: all five characters", () => {
  assert.equal(xmlEscape(`a&b<c>d"e'f`), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  assert.equal(xmlEscape("&amp;"), "&amp;amp;");
});

Deno.test("twilio and signalwire: <Connect><Stream url> with token and run parameters", () => {
  for (const carrier of ["twilio", "signalwire"] as const) {
    const root = xmlOf(carrier);
    assert.equal(root.name, "Response");
    const stream = child(child(root, "Connect"), "Stream");
    assert.equal(stream.attrs.url, URL_WITH_AMP);
    const params = Object.fromEntries(stream.children.map((p) => [p.attrs.name, p.attrs.value]));
    assert.deepEqual(params, { token: TOKEN, run_id: "42" });
    assert.ok(stream.children.every((p) => p.name === "Parameter"));
  }
});

Deno.test("telnyx: TeXML <Connect><Stream> in bidirectional rtp mode", () => {
  const stream = child(child(xmlOf("telnyx"), "Connect"), "Stream");
  assert.equal(stream.attrs.url, URL_WITH_AMP);
  assert.equal(stream.attrs.bidirectionalMode, "rtp");
  assert.equal(stream.attrs.bidirectionalCodec, "PCMU");
  assert.equal(stream.attrs.bidirectionalSamplingRate, "8000");
  assert.equal(child(stream, "Parameter").attrs.value, TOKEN);
  const wide = answerDocument("telnyx", {
    streamUrl: URL_WITH_AMP,
    token: "t",
    runId: 1,
    sampleRate: 16000,
  });
  assert.match(wide!.body, /bidirectionalSamplingRate="16000"/);
});

Deno.test("plivo: <Stream bidirectional keepCallAlive contentType>url</Stream>", () => {
  const stream = child(xmlOf("plivo"), "Stream");
  assert.deepEqual(stream.attrs, {
    bidirectional: "true",
    keepCallAlive: "true",
    contentType: "audio/x-mulaw;rate=8000",
  });
  assert.equal(stream.text, URL_WITH_AMP);
  const l16 = answerDocument("plivo", {
    streamUrl: URL_WITH_AMP,
    token: "t",
    runId: 1,
    sampleRate: 16000,
  });
  assert.equal(child(parseXml(l16!.body), "Stream").attrs.contentType, "audio/x-l16;rate=16000");
});

Deno.test("bandwidth: <StartStream bidirectional> with StreamParams, held by <StopStream wait>", () => {
  const root = xmlOf("bandwidth");
  assert.deepEqual(root.children.map((c) => c.name), ["StartStream", "StopStream"]);
  const [start, stop] = root.children;
  assert.equal(start.attrs.destination, URL_WITH_AMP);
  assert.equal(start.attrs.mode, "bidirectional");
  assert.equal(start.attrs.tracks, "inbound");
  assert.equal(stop.attrs.name, start.attrs.name);
  assert.equal(stop.attrs.wait, "true");
  const params = Object.fromEntries(start.children.map((p) => [p.attrs.name, p.attrs.value]));
  assert.deepEqual(params, { token: TOKEN, run_id: "42" });
});

Deno.test("vonage: NCCO connect/websocket with L16 content type and token headers", () => {
  const doc = answerDocument("vonage", {
    streamUrl: URL_WITH_AMP,
    token: TOKEN,
    runId: "run_7",
    callId: "63f61863-4a51-4f6b-86e1-46edebcf9356",
  });
  assert.ok(doc);
  assert.match(doc.contentType, /^application\/json/);
  assert.deepEqual(JSON.parse(doc.body), [{
    action: "connect",
    endpoint: [{
      type: "websocket",
      uri: URL_WITH_AMP,
      "content-type": "audio/l16;rate=16000",
      headers: {
        token: TOKEN,
        run_id: "run_7",
        call_uuid: "63f61863-4a51-4f6b-86e1-46edebcf9356",
      },
    }],
  }]);
  const narrow = answerDocument("vonage", {
    streamUrl: URL_WITH_AMP,
    token: "t",
    runId: 1,
    sampleRate: 8000,
  });
  const ep = JSON.parse(narrow!.body)[0].endpoint[0];
  assert.equal(ep["content-type"], "audio/l16;rate=8000");
  assert.equal("call_uuid" in ep.headers, false);
});

Deno.test("sinch: SVAML connectStream with sample rate and call headers", () => {
  const doc = answerDocument("sinch", { streamUrl: URL_WITH_AMP, token: TOKEN, runId: 42 });
  assert.ok(doc);
  assert.deepEqual(JSON.parse(doc.body), {
    action: {
      name: "connectStream",
      destination: { type: "Websocket", endpoint: URL_WITH_AMP },
      streamingOptions: { version: 1, sampleRate: 16000 },
      callHeaders: [{ key: "token", value: TOKEN }, { key: "run_id", value: "42" }],
    },
  });
});

Deno.test("exotel and genesys: no answer document", () => {
  for (const carrier of ["exotel", "genesys"] as const) {
    assert.equal(hasAnswerDocument(carrier), false);
    assert.equal(
      answerDocument(carrier, { streamUrl: URL_WITH_AMP, token: "t", runId: 1 }),
      undefined,
    );
  }
  assert.ok(CARRIER_NAMES.filter(hasAnswerDocument).length === CARRIER_NAMES.length - 2);
  const withDocs = CARRIER_NAMES.filter((c) =>
    answerDocument(c, { streamUrl: URL_WITH_AMP, token: "t", runId: 1 }) !== undefined
  );
  assert.deepEqual(withDocs.sort(), [
    "bandwidth",
    "plivo",
    "signalwire",
    "sinch",
    "telnyx",
    "twilio",
    "vonage",
  ]);
});

Deno.test("answerDocument: refuses bad input clearly", () => {
  const base = { streamUrl: URL_WITH_AMP, token: "t", runId: 1 };
  const bad: [Parameters<typeof answerDocument>[0], typeof base & { sampleRate?: number }][] = [
    ["twilio", { ...base, sampleRate: 16000 }],
    ["bandwidth", { ...base, sampleRate: 16000 }],
    ["vonage", { ...base, sampleRate: 11025 }],
    ["twilio", { ...base, streamUrl: "https://agent.example.com/x" }],
    ["twilio", { ...base, streamUrl: 'wss://h/x"><Evil/>' }],
    ["twilio", { ...base, runId: "a/b" as unknown as number }],
    ["twilio", { ...base, token: "" }],
    ["nope" as "twilio", base],
  ];
  for (const [carrier, opts] of bad) {
    assert.throws(
      () => answerDocument(carrier, opts),
      FlowcatError,
      `${carrier} ${JSON.stringify(opts)}`,
    );
  }
});

Deno.test("streamUrl: https -> wss, http -> ws, token URL-encoded, route shape", () => {
  assert.equal(
    streamUrl("https://agent.example.com", "twilio", 42, "v1.42.9.n.m"),
    "wss://agent.example.com/telephony/ws/twilio/42?token=v1.42.9.n.m",
  );
  assert.equal(
    streamUrl("http://127.0.0.1:6210/", "plivo", "run_1", "a&b=c d"),
    "ws://127.0.0.1:6210/telephony/ws/plivo/run_1?token=a%26b%3Dc%20d",
  );
  assert.equal(
    streamUrl("wss://agent.example.com:8443", "sinch", 7, "t"),
    "wss://agent.example.com:8443/telephony/ws/sinch/7?token=t",
  );
  assert.equal(
    answerUrl("https://agent.example.com", "telnyx", 42),
    "https://agent.example.com/telephony/answer/telnyx/42",
  );
  const doc = answerDocument("twilio", {
    streamUrl: streamUrl("https://agent.example.com", "twilio", 42, "a&b"),
    token: "a&b",
    runId: 42,
  });
  const url = child(child(parseXml(doc!.body), "Connect"), "Stream").attrs.url;
  assert.equal(new URL(url).searchParams.get("token"), "a&b");
});

Deno.test("streamUrl: a public URL with a path, query, fragment or credentials is refused", () => {
  const cases: [string, RegExp][] = [
    ["https://agent.example.com/telephony/ws", /path/],
    ["https://agent.example.com/?x=1", /query/],
    ["https://agent.example.com?", /query/],
    ["https://agent.example.com#top", /fragment/],
    ["https://user:pw@agent.example.com", /credentials/],
    ["ftp://agent.example.com", /scheme/],
    ["agent.example.com", /not a URL/],
  ];
  for (const [publicUrl, why] of cases) {
    assert.throws(
      () => streamUrl(publicUrl, "twilio", 1, "t"),
      (err: unknown) =>
        err instanceof FlowcatError && err.kind === "config" && why.test(err.message),
      publicUrl,
    );
  }
  assert.throws(
    () => streamUrl("https://a.example", "nope" as "twilio", 1, "t"),
    /unknown carrier/,
  );
  assert.throws(() => streamUrl("https://a.example", "twilio", "../x", "t"), /run id/);
  assert.throws(() => streamUrl("https://a.example", "twilio", 1, ""), /token/);
});
