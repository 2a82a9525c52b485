// Flowcat playground: one WebRTC call to the agent server, no build step.
//
// Flow: microphone -> RTCPeerConnection with an "events" data channel -> wait until ICE
// gathering completes (the server does not trickle) -> POST /webrtc/offer {sdp} -> {sdp}
// answer. The agent's audio plays in <audio>; transcript, node and state events arrive as JSON
// on the data channel. Hang-up sends {type:"hangup"} and closes.
//
// window.flowcat is a small read-only view for tests and curious users:
//   flowcat.state       "idle" | "connecting" | "connected" | "ended" | "failed"
//   flowcat.agentState  last {type:"state"} value from the server
//   flowcat.node        last {type:"node"} id
//   flowcat.transcript  [{role, text, final}] as shown; a bot line the caller talked over has
//                       interrupted: true and the text they heard (shown with a trailing "—")
//   flowcat.counters    {inboundPackets, inboundBytes, events, audioEnergy, codec} of the
//                       current call
//   flowcat.answerToConnectedMs  ICE and DTLS time of the current call, once connected
//   flowcat.error       the reason shown for a failed call ("" or null when none)
//   flowcat.channelState the events channel's readyState (null with no call)
//   flowcat.start() / flowcat.hangup()

const GATHER_TIMEOUT_MS = 3000;
// ICE with the server finishes in well under a second on a LAN; past this the media port is
// unreachable (a firewall, or a server on another network without media_hosts) and the page
// says so instead of "Connecting…" for Chromium's 30 s.
const CONNECT_TIMEOUT_MS = 8000;
const STATS_EVERY_MS = 500;
const OFFER_URL = "/webrtc/offer";

const $ = (id) => document.getElementById(id);
const ui = {
  conn: $("conn"),
  connText: $("conn-text"),
  start: $("start"),
  hangup: $("hangup"),
  agentState: $("agent-state"),
  node: $("node"),
  packets: $("packets"),
  error: $("error"),
  transcript: $("transcript"),
  empty: $("empty"),
  audio: $("remote-audio"),
};

const view = {
  state: "idle",
  agentState: "idle",
  node: null,
  transcript: [],
  counters: newCounters(),
  timings: { answeredAt: 0, answerToConnectedMs: null },
  error: null,
};

function newCounters() {
  return { inboundPackets: 0, inboundBytes: 0, events: 0, audioEnergy: 0, codec: "" };
}
/** @type {{pc: RTCPeerConnection, channel: RTCDataChannel, mic: MediaStream, timer: number} | null} */
let call = null;
/** Index into view.transcript of the open (interim) line of each role. */
const openLine = { user: -1, bot: -1 };
/** Index into view.transcript of each server line id: an event with a known id updates it. */
const lineOfId = new Map();

const LABELS = {
  idle: "Not connected",
  connecting: "Connecting…",
  connected: "Connected",
  ended: "Call ended",
  failed: "Connection failed",
};

function setState(state) {
  view.state = state;
  ui.conn.dataset.state = state;
  ui.connText.textContent = LABELS[state] ?? state;
  const busy = state === "connecting" || state === "connected";
  ui.start.disabled = busy;
  ui.hangup.disabled = !busy;
  ui.start.textContent = state === "ended" || state === "failed" ? "Call again" : "Start call";
}

function showError(message) {
  view.error = message;
  ui.error.textContent = message;
  ui.error.hidden = !message;
}

function waitForGathering(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      pc.removeEventListener("icegatheringstatechange", check);
      resolve();
    };
    const check = () => pc.iceGatheringState === "complete" && done();
    // Some networks never finish gathering; answer with the candidates found so far.
    const timer = setTimeout(done, GATHER_TIMEOUT_MS);
    pc.addEventListener("icegatheringstatechange", check);
  });
}

async function postOffer(sdp) {
  const res = await fetch(OFFER_URL, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sdp }),
  });
  let body = null;
  try {
    body = await res.json();
  } catch {
    // handled below
  }
  if (!res.ok || typeof body?.sdp !== "string") {
    const why = body?.error ?? body?.message ?? `HTTP ${res.status}`;
    throw new Error(`The server refused the call: ${why}`);
  }
  return body.sdp;
}

async function start() {
  if (call) return;
  showError("");
  clearTranscript();
  view.counters = newCounters();
  view.timings = { answeredAt: 0, answerToConnectedMs: null };
  setState("connecting");
  if (!globalThis.isSecureContext || !navigator.mediaDevices) {
    // Browsers give the microphone to https pages and to localhost only.
    setState("failed");
    showError(
      "This browser allows the microphone only on a secure page: open the playground over " +
        "https (start the server with --tls-cert and --tls-key) or on the server's own machine " +
        "at http://127.0.0.1.",
    );
    return;
  }
  let mic;
  try {
    mic = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (err) {
    setState("failed");
    showError(`Microphone unavailable: ${err?.message ?? err}`);
    return;
  }
  const pc = new RTCPeerConnection({ iceServers: [] });
  const channel = pc.createDataChannel("events");
  call = { pc, channel, mic, timer: 0 };
  // One message carries one or more JSON events, newline-separated.
  channel.addEventListener("message", (e) => String(e.data).split("\n").forEach(onEvent));
  channel.addEventListener("close", () => end("ended"));
  for (const track of mic.getAudioTracks()) pc.addTrack(track, mic);
  pc.addEventListener("track", (e) => {
    ui.audio.srcObject = e.streams[0] ?? new MediaStream([e.track]);
    ui.audio.play().catch(() => {});
  });
  pc.addEventListener("connectionstatechange", () => {
    const s = pc.connectionState;
    if (s === "connected") {
      if (view.timings.answeredAt > 0) {
        view.timings.answerToConnectedMs = Math.round(performance.now() - view.timings.answeredAt);
      }
      setState("connected");
    } else if (s === "failed") end("failed", "The media connection failed.");
    else if (s === "closed" || s === "disconnected") end("ended");
  });
  try {
    await pc.setLocalDescription(await pc.createOffer());
    // The server is an ICE-lite agent: it learns this browser's address from the checks the
    // browser sends, so the offer need not wait for every candidate (one round of host
    // gathering at most, for servers that want them).
    await waitForGathering(pc);
    const answer = await postOffer(pc.localDescription.sdp);
    if (call?.pc !== pc) return; // hung up meanwhile
    view.timings.answeredAt = performance.now();
    await pc.setRemoteDescription({ type: "answer", sdp: answer });
    call.timer = setInterval(() => readStats(pc), STATS_EVERY_MS);
    setTimeout(() => {
      if (call?.pc === pc && view.state === "connecting") {
        end(
          "failed",
          "No media connection to the server after 8 s: its UDP media ports are unreachable " +
            "from this browser (firewall or another network; see docs/server.md).",
        );
      }
    }, CONNECT_TIMEOUT_MS);
  } catch (err) {
    end("failed", err?.message ?? String(err));
  }
}

/** Copy the inbound audio counters from the connection's stats (kept after the call ends). */
async function readStats(pc) {
  try {
    const report = await pc.getStats();
    for (const s of report.values()) {
      if (s.type === "inbound-rtp" && s.kind === "audio") {
        view.counters.inboundPackets = s.packetsReceived ?? view.counters.inboundPackets;
        view.counters.inboundBytes = s.bytesReceived ?? view.counters.inboundBytes;
        view.counters.audioEnergy = s.totalAudioEnergy ?? view.counters.audioEnergy;
        const codec = s.codecId ? report.get(s.codecId) : undefined;
        if (codec?.mimeType) view.counters.codec = codec.mimeType;
      }
    }
    ui.packets.textContent = String(view.counters.inboundPackets);
  } catch {
    // the connection is already gone
  }
}

function hangup() {
  if (!call) return;
  const { channel } = call;
  if (channel.readyState === "open") channel.send(JSON.stringify({ type: "hangup" }));
  // Let the hang-up message leave before the connection goes away.
  setTimeout(() => end("ended"), 150);
}

function end(state, message) {
  if (!call) return;
  const { pc, mic, timer } = call;
  call = null;
  clearInterval(timer);
  readStats(pc).finally(() => pc.close());
  for (const t of mic.getTracks()) t.stop();
  ui.audio.srcObject = null;
  if (message) showError(message);
  setState(state);
}

function onEvent(data) {
  let msg;
  try {
    msg = JSON.parse(data);
  } catch {
    return;
  }
  view.counters.events++;
  if (msg?.type === "transcript") addTranscript(msg);
  else if (msg?.type === "node") {
    view.node = String(msg.id ?? "");
    ui.node.textContent = view.node || "none";
  } else if (msg?.type === "error") {
    // The server failed the call (model or brain unreachable, ...): say why, allow a retry.
    end("failed", String(msg.message ?? "The call failed."));
  } else if (msg?.type === "state") {
    view.agentState = String(msg.state ?? "");
    ui.agentState.textContent = view.agentState || "idle";
  }
}

/**
 * A line the server sent before (same id) is updated in place: an agent line cut short by the
 * caller comes again with the words they heard and interrupted: true. Otherwise interim text
 * for a role replaces that role's open line, and a final line closes it.
 */
function addTranscript(msg) {
  const role = msg.role === "user" ? "user" : "bot";
  const text = String(msg.text ?? "");
  const final = msg.final !== false;
  const id = typeof msg.id === "number" ? msg.id : undefined;
  const known = id === undefined ? undefined : lineOfId.get(id);
  let i = known ?? openLine[role];
  if (i < 0) {
    i = view.transcript.length;
    view.transcript.push({ role, text, final });
    ui.transcript.append(renderLine(role));
  }
  if (id !== undefined) lineOfId.set(id, i);
  const line = view.transcript[i];
  line.text = text;
  line.final = final;
  const li = ui.transcript.children[i];
  li.classList.toggle("interim", !final);
  li.querySelector(".text").textContent = text;
  if (msg.interrupted === true) {
    line.interrupted = true;
    markInterrupted(li);
  }
  // An update of an earlier line leaves the role's open interim line alone.
  if (known === undefined || openLine[role] === i) openLine[role] = final ? -1 : i;
  ui.empty.hidden = true;
  if (known === undefined) li.scrollIntoView({ block: "nearest" });
}

function renderLine(role) {
  const li = document.createElement("li");
  li.className = `line ${role}`;
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = role === "user" ? "You" : "Agent";
  // The words and, once cut short, the interruption mark flow as one run of text.
  const said = document.createElement("span");
  said.className = "said";
  const text = document.createElement("span");
  text.className = "text";
  said.append(text);
  li.append(who, said);
  return li;
}

/** A trailing dash where the caller cut in, read out as "(interrupted)". */
function markInterrupted(li) {
  if (li.classList.contains("interrupted")) return;
  li.classList.add("interrupted");
  const mark = document.createElement("span");
  mark.className = "cut";
  mark.title = "Interrupted: the caller spoke over the agent here";
  const dash = document.createElement("span");
  dash.setAttribute("aria-hidden", "true");
  dash.textContent = "—";
  const label = document.createElement("span");
  label.className = "sr-only";
  label.textContent = " (interrupted)";
  mark.append(dash, label);
  li.querySelector(".said").append(mark);
}

function clearTranscript() {
  view.transcript.length = 0;
  lineOfId.clear();
  openLine.user = openLine.bot = -1;
  ui.transcript.replaceChildren();
  ui.empty.hidden = false;
  view.node = null;
  ui.node.textContent = "none";
  view.agentState = "idle";
  ui.agentState.textContent = "idle";
}

ui.start.addEventListener("click", start);
ui.hangup.addEventListener("click", hangup);
// Closing the tab hangs up too, so the server ends the call at once instead of on a timeout.
addEventListener("pagehide", () => {
  if (call?.channel.readyState === "open") call.channel.send(JSON.stringify({ type: "hangup" }));
});

globalThis.flowcat = {
  get state() {
    return view.state;
  },
  get agentState() {
    return view.agentState;
  },
  get node() {
    return view.node;
  },
  get transcript() {
    return view.transcript.map((l) => ({ ...l }));
  },
  get counters() {
    return { ...view.counters };
  },
  /** Milliseconds from the server's answer to the media connection (ICE and DTLS). */
  get answerToConnectedMs() {
    return view.timings.answerToConnectedMs;
  },
  get error() {
    return view.error;
  },
  /** The events channel's readyState, or null with no call. */
  get channelState() {
    return call?.channel.readyState ?? null;
  },
  start,
  hangup,
};

setState("idle");
