/**
 * The agent server's metrics, in one {@link Registry} per server: what `GET /metrics` exposes.
 * Every name, type and label is listed in docs/observability.md.
 *
 * Nothing here runs per audio frame: calls, turns, provider answers and errors add to plain
 * numbers; process figures (memory, event-loop lag) are read at scrape time.
 * @module
 */

import { onHandover } from "../core/handover.ts";
import { processLagSampler, processMemory } from "./process_metrics.ts";
import { type Counter, type Gauge, type Histogram, Registry } from "./prometheus.ts";

/** Upper bounds of the turn-latency histogram, in seconds. */
export const TURN_LATENCY_BUCKETS = [0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];
/** Upper bounds of the time-to-first-byte histogram, in seconds. */
export const TTFB_BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];
/** Upper bounds of the per-call echo return loss enhancement histogram, in dB. */
export const ECHO_ERLE_BUCKETS = [5, 10, 15, 20, 25, 30, 40, 50, 60];
/** Upper bounds of the call-duration histogram, in seconds. */
export const CALL_DURATION_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600];

/**
 * The OpenTelemetry instrument each family becomes when metrics are exported over OTLP too
 * (server/tracing.ts): dotted names, the unit apart. `process_start_time_seconds` stays
 * Prometheus-only (the OTLP resource and start times already say it).
 */
export const OTLP_METRIC_NAMES: Readonly<Record<string, { name: string; unit: string }>> = {
  flowcat_active_calls: { name: "flowcat.calls.active", unit: "{call}" },
  flowcat_calls_started_total: { name: "flowcat.calls.started", unit: "{call}" },
  flowcat_calls_ended_total: { name: "flowcat.calls.ended", unit: "{call}" },
  flowcat_call_duration_seconds: { name: "flowcat.call.duration", unit: "s" },
  flowcat_turn_latency_seconds: { name: "flowcat.turn.latency", unit: "s" },
  flowcat_echo_erle_db: { name: "flowcat.echo.erle", unit: "dB" },
  flowcat_provider_ttfb_seconds: { name: "flowcat.provider.ttfb", unit: "s" },
  flowcat_provider_errors_total: { name: "flowcat.provider.errors", unit: "{error}" },
  flowcat_frames_dropped_total: { name: "flowcat.frames.dropped", unit: "{frame}" },
  flowcat_requests_refused_total: { name: "flowcat.requests.refused", unit: "{request}" },
  flowcat_connections_refused_total: {
    name: "flowcat.connections.refused",
    unit: "{connection}",
  },
  flowcat_realtime_handovers_total: { name: "flowcat.realtime.handovers", unit: "{handover}" },
  flowcat_event_loop_lag_seconds: { name: "flowcat.event_loop.lag", unit: "s" },
  flowcat_event_loop_lag_max_seconds: { name: "flowcat.event_loop.lag_max", unit: "s" },
  process_resident_memory_bytes: { name: "process.memory.usage", unit: "By" },
  flowcat_heap_used_bytes: { name: "flowcat.heap.used", unit: "By" },
  flowcat_heap_total_bytes: { name: "flowcat.heap.total", unit: "By" },
  flowcat_external_memory_bytes: { name: "flowcat.memory.external", unit: "By" },
};

/** The server's metric families. */
export interface ServerMetrics {
  /** The registry `/metrics` exposes. */
  readonly registry: Registry;
  /** `flowcat_active_calls`: calls running now. */
  readonly activeCalls: Gauge;
  /** `flowcat_calls_started_total{transport}`. */
  readonly callsStarted: Counter;
  /** `flowcat_calls_ended_total{transport,reason}`. */
  readonly callsEnded: Counter;
  /** `flowcat_call_duration_seconds`. */
  readonly callDuration: Histogram;
  /** `flowcat_turn_latency_seconds`: caller stopped speaking to the bot's first audio. */
  readonly turnLatency: Histogram;
  /** `flowcat_echo_erle_db`: echo return loss enhancement of a call's echo canceller. */
  readonly echoErle: Histogram;
  /** `flowcat_provider_ttfb_seconds{service,provider}`. */
  readonly ttfb: Histogram;
  /** `flowcat_provider_errors_total{service,provider,kind}`. */
  readonly providerErrors: Counter;
  /** `flowcat_frames_dropped_total{reason}`. */
  readonly framesDropped: Counter;
  /** `flowcat_requests_refused_total{reason}`. */
  readonly requestsRefused: Counter;
  /** `flowcat_connections_refused_total{reason}`: connections the connection guard cut. */
  readonly connectionsRefused: Counter;
  /** `flowcat_realtime_handovers_total{provider,reply}`, fed by every handover in the process. */
  readonly realtimeHandovers: Counter;
}

/** Make the server's metric families (and the process ones read at scrape time). */
export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  const m: ServerMetrics = {
    registry,
    activeCalls: registry.gauge("flowcat_active_calls", "Calls running now."),
    callsStarted: registry.counter(
      "flowcat_calls_started_total",
      "Calls started, by transport (browser, sip, or the carrier's name).",
      ["transport"],
    ),
    callsEnded: registry.counter(
      "flowcat_calls_ended_total",
      "Calls ended, by transport and end reason.",
      ["transport", "reason"],
    ),
    callDuration: registry.histogram(
      "flowcat_call_duration_seconds",
      "How long calls lasted, from start to end.",
      [],
      CALL_DURATION_BUCKETS,
    ),
    turnLatency: registry.histogram(
      "flowcat_turn_latency_seconds",
      "From the caller stopping speaking to the first audio of the bot's reply.",
      [],
      TURN_LATENCY_BUCKETS,
    ),
    echoErle: registry.histogram(
      "flowcat_echo_erle_db",
      "Echo removed by a call's echo canceller (ERLE over its recent single talk, dB), " +
        "observed when a call that heard its own echo ends.",
      [],
      ECHO_ERLE_BUCKETS,
    ),
    ttfb: registry.histogram(
      "flowcat_provider_ttfb_seconds",
      "Time to first byte of a provider's answer (transcript, text, audio), per request.",
      ["service", "provider"],
      TTFB_BUCKETS,
    ),
    providerErrors: registry.counter(
      "flowcat_provider_errors_total",
      "Provider failures seen by calls, by service, provider and kind.",
      ["service", "provider", "kind"],
    ),
    framesDropped: registry.counter(
      "flowcat_frames_dropped_total",
      "Audio a call dropped, by reason (before_start, oversized, too_fast, overflow, late, " +
        "jitter_discard, barge_in), counted when the call ends.",
      ["reason"],
    ),
    requestsRefused: registry.counter(
      "flowcat_requests_refused_total",
      "Requests refused before any call work (bad signature, token or bearer).",
      ["reason"],
    ),
    connectionsRefused: registry.counter(
      "flowcat_connections_refused_total",
      "Connections the connection guard cut or refused, by reason (header_timeout, " +
        "header_too_large, body_timeout, bad_framing, message_too_big, pending, pending_client).",
      ["reason"],
    ),
    realtimeHandovers: registry.counter(
      "flowcat_realtime_handovers_total",
      "Realtime sessions handed over to a new connection, by provider and what became of the reply.",
      ["provider", "reply"],
    ),
  };
  m.activeCalls.labels().set(0);
  // Process-wide: a server is one per process; extra registries (tests) just count too.
  onHandover((r) => m.realtimeHandovers.labels(r.provider, r.reply).inc());
  const lag = processLagSampler();
  registry.gauge(
    "flowcat_event_loop_lag_seconds",
    "How late the latest event-loop probe fired (sampled every 0.5 s).",
  ).collect(() => {
    lag.start(); // from the first scrape on (idempotent): nobody scraping, no timer
    return lag.latestSeconds;
  });
  registry.gauge(
    "flowcat_event_loop_lag_max_seconds",
    "Largest event-loop lag of the last 10 s.",
  ).collect(() => lag.maxSeconds);
  registry.gauge("process_resident_memory_bytes", "Resident memory of the process, bytes.")
    .collect(() => processMemory().rss);
  registry.gauge("flowcat_heap_used_bytes", "V8 heap in use, bytes.")
    .collect(() => processMemory().heapUsed);
  registry.gauge("flowcat_heap_total_bytes", "V8 heap reserved, bytes.")
    .collect(() => processMemory().heapTotal);
  registry.gauge("flowcat_external_memory_bytes", "Memory outside the V8 heap (buffers), bytes.")
    .collect(() => processMemory().external);
  registry.gauge("process_start_time_seconds", "Start time of the process, Unix seconds.")
    .collect(() => Math.round(performance.timeOrigin) / 1000);
  return m;
}
