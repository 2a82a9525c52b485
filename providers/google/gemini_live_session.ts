/**
 * One Gemini Live connection: dial, send `setup`, wait for `setupComplete`. Before the client
 * makes a connection live (a standby readied during a handover), the messages that follow
 * `setupComplete` are kept on it, in order, for the client to read when it switches.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { messageText } from "../realtime/_shared.ts";
import { type GeminiServerMessage, parseGeminiServerMessage } from "./gemini_live_parse.ts";
import type { SocketPool } from "./gemini_live_sockets.ts";
import { geminiSetupMessage, type GeminiSetupParams } from "./gemini_live_wire.ts";

/** A connection of one client. */
export interface GeminiConnection {
  ws: WebSocket;
  /** The resumption handle its `setup` carried (undefined: a fresh session). */
  handle: string | undefined;
  /** The client reads and writes this one. */
  live: boolean;
  /** Closed on purpose or already gone: its events and its close are ignored. */
  retired: boolean;
  /** When `setupComplete` arrived (ms since the epoch). */
  readyAt: number;
  /** When the last server message arrived. */
  lastMessageAt: number;
  /** Messages after `setupComplete` while not live yet. */
  early: GeminiServerMessage[];
}

/** What {@link openGeminiConnection} needs. */
export interface OpenConnectionOptions {
  url: string;
  sockets: SocketPool;
  setup: GeminiSetupParams;
  connectTimeoutMs: number;
  setupTimeoutMs: number;
  /** A parsed message of a live connection; unparseable ones come as `undefined`. */
  onMessage(conn: GeminiConnection, msg: GeminiServerMessage | undefined, chars?: number): void;
  /** The socket closed (whoever closed it). */
  onClose(conn: GeminiConnection, code: number, reason: string): void;
  /** True when the client shut down meanwhile. */
  stopped(): boolean;
}

/** Dial, send `setup`, resolve once `setupComplete` arrived; reject (and close) otherwise. */
export async function openGeminiConnection(o: OpenConnectionOptions): Promise<GeminiConnection> {
  const ws = await o.sockets.open(o.url, { provider: "gemini", timeoutMs: o.connectTimeoutMs });
  const conn: GeminiConnection = {
    ws,
    handle: o.setup.handle,
    live: false,
    retired: false,
    readyAt: 0,
    lastMessageAt: 0,
    early: [],
  };
  if (o.stopped()) {
    retireConnection(conn);
    throw new FlowcatError("closed", "gemini: connect after the session closed");
  }
  let waiter: { resolve(): void; reject(err: Error): void } | undefined;
  const done = new Promise<void>((resolve, reject) => (waiter = { resolve, reject }));
  ws.addEventListener("message", (e) => {
    if (conn.retired) return;
    const text = messageText(e.data);
    const msg = text === undefined ? undefined : parseGeminiServerMessage(text);
    conn.lastMessageAt = Date.now();
    if (conn.live) return o.onMessage(conn, msg, text?.length);
    if (msg?.setupComplete) {
      conn.readyAt = conn.lastMessageAt;
      waiter?.resolve();
    } else if (msg !== undefined && conn.readyAt > 0) conn.early.push(msg);
  });
  ws.addEventListener("close", (e) => {
    const why = `socket closed (code ${e.code}${e.reason ? `: ${e.reason.slice(0, 200)}` : ""})`;
    // The service takes any key at the upgrade and refuses a bad one by closing the socket.
    const kind = /API key/i.test(e.reason) ? "auth" : "closed";
    waiter?.reject(new FlowcatError(kind, `gemini: setup refused: ${why}`));
    o.onClose(conn, e.code, e.reason);
  });
  ws.send(JSON.stringify(geminiSetupMessage(o.setup)));
  const timer = setTimeout(() => {
    waiter?.reject(
      new FlowcatError("timeout", `gemini: no setupComplete within ${o.setupTimeoutMs} ms`),
    );
  }, o.setupTimeoutMs);
  try {
    await done;
  } catch (err) {
    retireConnection(conn);
    throw err;
  } finally {
    clearTimeout(timer);
    waiter = undefined;
  }
  return conn;
}

/** Close a connection on purpose; its later messages and its close are then ignored. */
export function retireConnection(conn: GeminiConnection): void {
  if (conn.retired) return;
  conn.retired = true;
  conn.live = false;
  try {
    conn.ws.close(1000);
  } catch { /* already closing */ }
}
