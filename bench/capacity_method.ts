/**
 * The capacity benchmark's method, as recorded in every result file: how each figure is
 * measured, and what runs per call (bench/capacity.ts writes both into its JSON).
 * @module
 */

/** How each figure of the capacity result is measured (recorded in the result as `method`). */
export const CAPACITY_METHOD: Record<string, string> = {
  server: "one bench/capacity_server.ts child process: createAgentServer + Deno.serve as " +
    "server/main.ts, or for workers > 1 that many worker threads on one port (server/workers.ts, " +
    "as deno task start --workers N; each worker counts its timers and splits its own latency, " +
    "bench/capacity_worker_probe.ts); " +
    "echo model mode=frame tts=none rates=echo_rates (leg: 8 kHz, no resampler; 16000/24000: " +
    "8 -> 16 -> 24 -> 8 kHz; a baseline without the option runs 16/24), Twilio, no recording, " +
    "audio.echo_cancel=echo_cancel",
  calls: "each call: signed POST /telephony/answer/twilio, then the TwiML stream URL (token), " +
    "Twilio connected + start messages; audio: 20 ms mu-law media at 50/s, starts jittered " +
    "uniformly over the first second (1 ms phase slots)",
  latency: "k-th outbound media message on a call matched to the k-th frame sent (frame mode " +
    "echoes 1:1; odd_size_messages would show a split); send and receive timed in the " +
    "generator with performance.now(); each call's first 50 frames are warm-up (not sampled)",
  lost: "frames sent minus media messages received within 3 s after sending stopped",
  cpu: "process.cpuUsage() (user + system) in each server over the sending window and the " +
    "drain, of the server process (all its threads); 100% = one core",
  idle_memory: "calls open (start sent, no audio) on server processes that carried no " +
    "audio yet, forced GC (--expose-gc); marginal cost of the second half of the N calls: " +
    "heapUsed, external (typed-array stores) and RSS deltas divided by N/2",
  timers: "setTimeout/setInterval wrapped in the server child: live timers, marginal per idle " +
    "call as above",
  warmup: "2 s of audio on min(N, 100) extra calls before the measured audio (JIT)",
  server_split: "bench/capacity_trace.ts in the server, per frame after warm-up: server = " +
    "carrier message reaching our code (the serializer's onMessage, before the JSON parse) -> " +
    "send of the reply audio it caused (the k-th reply on a leg is the echo of its k-th audio " +
    "message), split into pipeline (-> output transport) and pacing wait (-> carrier send); " +
    "a match out of order or past the leg's ring is counted in unmatched, never sampled; the " +
    "wait before the message callback runs (other calls' messages handled first in the same " +
    "turn) and Deno's WebSocket receive show only end to end",
  healthy: "no call refused, no frame lost, server pipeline p99 <= 5 ms, end-to-end p99 <= " +
    "50 ms; the sweep stops after two unhealthy points in a row or a loss",
  generator: "one load-generator process (this one) on the same machine, loopback only",
  repeated: "with --repeat N: each call count N times on one worker thread, the agent and the " +
    "floor back to back in every round, rounds one after the other; per call count the median " +
    "and spread (min, max, values) of every run's figures, the agent / floor CPU per frame of " +
    "each round, and the 1-minute load average before each run",
};

/** What runs per call, counted from the code (core/builders.ts, server/media_socket.ts). */
export const TASKS_PER_CALL = {
  processor_loops: 5,
  processor_loops_are:
    "TransportInput, RealtimeProcessor, BrainProcessor (keeps the transcript), TransportOutput, " +
    "FinalizeProcessor (6 with recording on: + RecorderProcessor); each runs only while it has " +
    "frames (parked loops hold no coroutine)",
  reader_tasks: 0,
  reader_tasks_are: "none: the media leg pushes its events from the socket's message callback " +
    "(MediaTransport.listen) and the model from its own (RealtimeLlm.listen); a model without " +
    "push mode gets a reader task (RealtimeProcessor#readEvents)",
  call_coroutines: 0,
  call_coroutines_are: "none: the media-socket handler, CallManager.run and PipelineTask.run " +
    "return once the call is wired; its end arrives through the task's promise chain",
  total_async_tasks: 5,
  suspended_while_idle: 0,
  suspended_while_idle_are: "none (heap snapshot of idle calls; tests/capacity_heap_test.ts " +
    "checks it)",
  timers_idle:
    "measured per point (idle.timers_per_session): none per call; the call limit and the " +
    "task idle watch are deadlines on one isolate-wide timer (core/deadlines.ts); pacing " +
    "while audio plays is one shared 10 ms playout clock per isolate, not a timer per call",
  not_counted: "Deno's own per-WebSocket read loop in ext/websocket",
};
