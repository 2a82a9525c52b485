// Over 400 lines: input and output share the seam, the playout clock and their drop counts.
/**
 * Transport processors over the {@link MediaTransport} seam.
 *
 * - {@link TransportInput} (the source): reads the leg and emits ClientConnected on stream
 *   start, InputAudio resampled to the task's input rate, InputDtmf, and an upstream End when
 *   the stream stops or the leg closes (the task turns it into End downstream).
 * - {@link TransportOutput} (the sink): plays OutputAudio and TtsAudio paced at real time in
 *   20 ms chunks, broadcasts BotStartedSpeaking / BotSpeaking / BotStoppedSpeaking (the stop
 *   once the far end has been silent for a short hold-off), and on Interruption drops what is
 *   queued and clears the far end's playback. It knows which bot
 *   words have played (a {@link PlayoutLedger} fed by TtsText): SpokenText goes upstream as each
 *   piece finishes playing, and an Interruption sends BotInterrupted with where playout stopped,
 *   so the transcript and the context keep only what the caller heard. BotAudioHold pauses the
 *   bot's audio for a while (a possible barge-in, core/processors/turn.ts); playout resumes where
 *   it stopped unless an Interruption comes first. In-band keypad tones (OutputDtmf on a leg
 *   without a key command) are neither held nor dropped: the model was told the keys went out.
 * @module
 */

import { dtmfTones } from "../audio/dtmf_tone.ts";
import { Resampler, transitionFor } from "../audio/resample.ts";
import { errorMessage } from "../errors.ts";
import {
  type AudioFrame,
  type Direction,
  type Frame,
  type FrameOf,
  inputAudio,
  makeFrame,
  type StartParams,
  type StopReason,
  type TransferOutcome,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import { MEDIA_STOPPED, type MediaIn, type MediaTransport, SENT } from "../seams.ts";
import { joinPlayoutClock, leavePlayoutClock } from "../playout_clock.ts";
import { PlayoutLedger, type SpokenPiece } from "../playout_ledger.ts";

/** The End reason a media leg gives when the caller has gone (stream stop or socket closed). */
export const CALLER_HUNG_UP = "caller hung up";

/** The leg ended (stop, close): End goes upstream so the task drains the call. */
function hangUp(link: Link, reason = CALLER_HUNG_UP): void {
  link.push(makeFrame("End", { reason }), "upstream");
}

/** Reads a media leg and turns it into frames. */
export class TransportInput extends FrameProcessor {
  readonly #t: MediaTransport;
  #running = false;
  #up: Resampler | undefined;
  /** Call id from the stream start, once seen. */
  callId: string | undefined;

  /** Source for `transport`. */
  constructor(transport: MediaTransport, name = "TransportInput") {
    super(name);
    this.#t = transport;
  }

  /** Listens to the leg (push mode, when it offers it), else spawns the reader. */
  override start(setup: ProcessorSetup, params: StartParams, link: Link): void {
    this.#running = true;
    const rate = params.audioInSampleRate;
    const listen = this.#t.listen;
    if (listen !== undefined) {
      let ended = false;
      // Listen from the next macrotask: Start must reach the processors below before the first
      // audio does (events queued meanwhile are delivered then, in order).
      setTimeout(() =>
        listen.call(this.#t, (m) => {
          if (ended || !this.#running) return;
          if (m === undefined || m.type === "stop" || setup.cancel.aborted) {
            ended = true;
            hangUp(link, m?.type === "stop" ? m.reason : undefined);
            return;
          }
          try {
            this.#handle(m, rate, link);
          } catch (err) {
            link.pushError(`media leg failed: ${errorMessage(err)}`, false);
          }
        }), 0);
      return;
    }
    // From the next macrotask too: a leg that already holds its stream start (SIP) would
    // otherwise send ClientConnected down before Start, and the processors below would greet
    // the caller before they started (the output without its link: no BotStartedSpeaking).
    setTimeout(() => void this.#read(setup, rate, link), 0);
  }

  /** Stops the reader. */
  override stop(_reason: StopReason): void {
    this.#running = false;
  }

  async #read(setup: ProcessorSetup, rate: number, link: Link): Promise<void> {
    try {
      while (this.#running && !setup.cancel.aborted) {
        const m = await this.#t.recv();
        if (!this.#running) return;
        if (m === undefined || m.type === "stop") {
          if (this.#running) hangUp(link, m?.reason);
          return;
        }
        this.#handle(m, rate, link);
      }
    } catch (err) {
      link.pushError(`media leg failed: ${errorMessage(err)}`, false);
    }
    if (this.#running) hangUp(link);
  }

  /** One inbound event as frames: audio at the pipeline rate, the start, a key press. */
  #handle(m: Exclude<MediaIn, { type: "stop" }>, rate: number, link: Link): void {
    if (m.type === "audio") {
      let audio: AudioFrame = m.audio;
      if (audio.sampleRate !== rate) {
        let up = this.#up;
        if (up === undefined || up.inRate !== audio.sampleRate) {
          up = this.#up = new Resampler(audio.sampleRate, rate, {
            transition: transitionFor(audio.sampleRate, rate),
          });
        }
        audio = { pcm: up.process(audio.pcm), sampleRate: rate, numChannels: 1 };
      } else if (m.lent === true) {
        // Lent PCM is overwritten by the leg's next message; the frame must own its samples.
        audio = { pcm: audio.pcm.slice(), sampleRate: rate, numChannels: audio.numChannels };
      }
      link.pushDown(inputAudio(audio));
    } else if (m.type === "start") {
      this.callId = m.callId;
      const f = makeFrame("ClientConnected", {});
      f.extra = { callId: m.callId };
      link.pushDown(f);
    } else if (m.type === "dtmf") {
      link.pushDown(makeFrame("InputDtmf", { key: m.key }));
    }
  }
}

/**
 * Hears each chunk of the bot's audio as it leaves for the far end, with where the chunk starts
 * on the call's playout timeline (performance.now() ms): the echo canceller's reference.
 */
export type SentAudioListener = (audio: AudioFrame, playAtMs: number) => void;

/** Options of {@link TransportOutput}. */
export interface TransportOutputOptions {
  /** Chunk length in milliseconds (default 20). */
  chunkMs?: number;
  /** Broadcast BotSpeaking every this many chunks while speaking (default 10: every 200 ms). */
  speakingEvery?: number;
  /**
   * How far ahead of the far end's playout audio may be sent, in ms (default 40). Carriers and
   * browsers buffer it; a lead absorbs timer jitter without a gap, and barge-in clears it.
   */
  leadMs?: number;
  /**
   * How late audio may fall behind the call's playout timeline and still be caught up, in ms
   * (default 200). Chunks that come or go late (a busy thread, a late model or caller frame) are
   * sent at once, up to the lead beyond their timeline, so one late moment does not delay the
   * rest of the call; a longer gap is a pause, and playout after it starts afresh from now.
   */
  catchUpMs?: number;
  /**
   * How long the far end must have played everything sent before BotStoppedSpeaking, in ms
   * (default 350). Audio that comes back within it continues the same speech: a model's or a
   * TTS's gap between two bursts, or a frame that arrives a little after the one before it
   * finished playing, is not a stop and a new start. A barge-in, a hang-up or the end of the
   * call stop the speech at once.
   */
  stopHoldOffMs?: number;
}

/**
 * Plays audio to a media leg at real time, paced by the shared playout clock
 * (core/playout_clock.ts): chunks go out as soon as the far end's playout is less than
 * `leadMs` ahead of the call's timeline, so nothing waits on a per-call timer. After a stall
 * (the thread was busy, the tick came late) one pass sends what fell due, never more than the
 * lead beyond the timeline, and audio that arrives a little late keeps the timeline instead of
 * pushing every later chunk back (`catchUpMs`).
 */
export class TransportOutput extends FrameProcessor {
  readonly #t: MediaTransport;
  readonly #chunkMs: number;
  readonly #speakingEvery: number;
  readonly #leadMs: number;
  readonly #catchUpMs: number;
  readonly #stopHoldOffMs: number;
  #queue: AudioFrame[] = [];
  #link: Link | undefined;
  #playing = false;
  #speaking = false;
  #sent = 0;
  /** When the far end will have played all that was sent (performance.now() ms); none yet. */
  #nextAt = -Infinity;
  /** Milliseconds of audio sent since the ledger's timeline began (the last interruption). */
  #sentMs = 0;
  /** performance.now() until which the bot's audio is held (a possible barge-in). */
  #holdUntil = 0;
  readonly #ledger = new PlayoutLedger();
  #drained: (() => void) | undefined;
  /**
   * Until when (performance.now() ms) a playout tick has nothing to do for this call: nothing
   * queued, no hold, nothing the ledger could report, the far end still playing or in the stop
   * hold-off. Set by a full pass; cleared by whatever changes what a pass would do.
   */
  #quietUntil = 0;
  readonly #sentListeners: SentAudioListener[] = [];
  /** Queued chunks of in-band keypad tones, and how many are queued (0: no lookups needed). */
  readonly #toneChunks = new WeakSet<AudioFrame>();
  #tonesQueued = 0;
  /** When the far end will have played the last tone chunk sent (performance.now() ms). */
  #toneUntil = -Infinity;

  /** Sink for `transport`. */
  constructor(
    transport: MediaTransport,
    options: TransportOutputOptions = {},
    name = "TransportOutput",
  ) {
    super(name);
    this.#t = transport;
    this.#chunkMs = options.chunkMs ?? 20;
    this.#speakingEvery = options.speakingEvery ?? 10;
    this.#leadMs = options.leadMs ?? 40;
    this.#catchUpMs = options.catchUpMs ?? 200;
    this.#stopHoldOffMs = Math.max(0, options.stopHoldOffMs ?? 350);
  }

  /** True while audio is being played. */
  get speaking(): boolean {
    return this.#speaking;
  }

  /** Calls `listener` with every chunk as it is sent, after pacing (see {@link SentAudioListener}). */
  onSent(listener: SentAudioListener): void {
    this.#sentListeners.push(listener);
  }

  /** Remembers the link for the pacing timer. */
  override start(_s: ProcessorSetup, _p: StartParams, link: Link): void {
    this.#link = link;
  }

  /** Queues audio; notes the words that come with it; forwards everything else. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream") {
      switch (frame.kind) {
        case "BotAudioHold":
          // Stop sending now; the clock keeps serving, and resumes once the hold lapses.
          this.#holdUntil = Math.max(this.#holdUntil, performance.now() + frame.ms);
          this.#quietUntil = 0;
          return;
        case "OutputAudio":
        case "TtsAudio":
          return this.#enqueue(frame.audio);
        case "OutputDtmf":
          if (this.#t.sendDtmf === undefined || this.#t.canSendDtmf?.() === false) {
            // No key command on this leg (a carrier WebSocket, WebRTC, a SIP peer without
            // telephone-events): the keys go in-band, as tones paced like speech, after the
            // audio queued before them.
            const rate = this.#t.carrierRate();
            const pcm = dtmfTones(frame.keys, { sampleRate: rate, toneMs: 100, gapMs: 100 });
            return this.#enqueue({ pcm, sampleRate: rate, numChannels: 1 }, true);
          }
          this.#t.sendDtmf(frame.keys).catch((err) =>
            link.pushError(`send dtmf failed: ${errorMessage(err)}`)
          );
          return;
        case "TransferCall":
          return this.#transfer(frame, link);
        case "TtsText":
          if (frame.utteranceId === undefined) break;
          this.#ledger.text(frame.utteranceId, frame.text);
          this.#quietUntil = 0;
          // A new segment ends the one before, which may have played already.
          this.#reportPlayed(performance.now());
          break;
        case "TtsStopped":
          this.#ledger.close();
          this.#quietUntil = 0;
          this.#reportPlayed(performance.now());
          break;
      }
    }
    link.push(frame, dir);
  }

  /**
   * Barge-in: drop queued audio and clear the far end; tell upstream what had played of the
   * bot's words and where it stopped. Keypad tones stay queued, and while the far end still
   * holds one nothing is cleared (what it holds is at most the lead): a key cut short could be
   * missed, or heard twice.
   */
  override async onInterruption(): Promise<void> {
    const now = performance.now();
    const { spoken, cut } = this.#ledger.cut(this.#playedMs(now));
    const kept = this.#tonesQueued > 0 ? this.#queue.filter((c) => this.#toneChunks.has(c)) : [];
    // Chunks of bot audio nobody will hear: counted (frames dropped, reason barge_in).
    const droppedFrames = this.#queue.length - kept.length;
    this.#queue = kept;
    this.#holdUntil = 0;
    this.#quietUntil = 0;
    const clear = this.#toneUntil <= now;
    // The clear drops what the far end had buffered: a new timeline. Without one, what it still
    // holds opens the new timeline.
    const heldMs = clear ? 0 : Math.max(0, this.#nextAt - now);
    if (clear) this.#nextAt = -Infinity;
    this.#sentMs = heldMs;
    let keptMs = 0;
    for (const c of kept) keptMs += (c.pcm.length * 1000) / c.sampleRate;
    this.#ledger.audio(heldMs + keptMs);
    this.#stopPlaying();
    // The clear is sent before any kept tone, which it would drop otherwise.
    const cleared = clear ? this.#t.sendClear() : undefined;
    if (kept.length > 0) this.#play(now);
    const link = this.#link;
    if (link !== undefined) {
      this.#pushSpoken(spoken, link);
      link.push(
        makeFrame("BotInterrupted", cut === undefined ? { droppedFrames } : { cut, droppedFrames }),
        "upstream",
      );
    }
    await cleared;
  }

  /**
   * End plays out what is queued, unless the caller hung up (nobody is left to hear it, and the
   * call would stay open for as long as the queue lasts); Cancel drops it. Then the leg closes.
   */
  override async stop(reason: StopReason): Promise<void> {
    const hungUp = reason.kind === "end" &&
      (reason.reason === CALLER_HUNG_UP || reason.reason === MEDIA_STOPPED);
    if (reason.kind === "end" && !hungUp && this.#queue.length > 0) {
      this.#quietUntil = 0;
      await new Promise<void>((resolve) => (this.#drained = resolve));
    }
    this.#queue = [];
    this.#tonesQueued = 0;
    this.#stopPlaying();
    await this.#t.close?.();
  }

  /** Hand the call over; the outcome goes upstream as TransferResult either way. */
  #transfer(frame: FrameOf<"TransferCall">, link: Link): void {
    const target = frame.target;
    const done = (outcome: TransferOutcome) =>
      link.push(makeFrame("TransferResult", { target, outcome }), "upstream");
    const t = this.#t;
    const warm = frame.mode === "warm";
    if (warm ? t.warmTransfer === undefined : t.transfer === undefined) {
      const what = warm ? "do a warm transfer" : "transfer calls";
      return done({ ok: false, refused: true, reason: `this call's leg cannot ${what}` });
    }
    let consulting = Promise.resolve();
    const pending = warm
      ? t.warmTransfer!(target, {
        brief: frame.briefing !== undefined,
        // What is still queued was for the caller, who now holds: dropped, as on a barge-in.
        onConsulting: () =>
          void (consulting = this.onInterruption().then(() =>
            done({ ok: true, consulting: true })
          )),
      })
      : t.transfer!(target);
    pending.then(
      (outcome) => consulting.then(() => done(outcome)),
      (err) => done({ ok: false, reason: errorMessage(err) }),
    );
  }

  /** Queues `audio` in chunks; `tone`: keypad tones, which no hold or barge-in stops. */
  #enqueue(audio: AudioFrame, tone = false): void {
    const n = Math.round((audio.sampleRate * this.#chunkMs) / 1000);
    const pcm = audio.pcm;
    this.#ledger.audio((pcm.length * 1000) / audio.sampleRate);
    const first = this.#queue.length;
    // A frame of one chunk or less is its own chunk; longer ones are cut into views of their PCM
    // (no copy).
    if (pcm.length <= n) {
      this.#queue.push(audio);
    } else {
      for (let i = 0; i < pcm.length; i += n) {
        this.#queue.push({
          pcm: pcm.subarray(i, Math.min(pcm.length, i + n)),
          sampleRate: audio.sampleRate,
          numChannels: 1,
        });
      }
    }
    if (tone) {
      for (let i = first; i < this.#queue.length; i++) this.#toneChunks.add(this.#queue[i]);
      this.#tonesQueued += this.#queue.length - first;
    }
    const now = performance.now();
    this.#quietUntil = 0;
    // Within the lead a chunk goes out as it arrives, not at the clock's next tick (up to 10 ms
    // later); the clock only serves what the lead held back. Audio after a dry queue (on the
    // clock through the stop hold-off, or off it) may start a new timeline.
    if (!this.#playing || first === 0) this.#play(now);
    else this.#service(now);
  }

  /** Starts playing what is queued, on the playout clock while the lead holds some back. */
  #play(now: number): void {
    const onClock = this.#playing;
    this.#playing = true;
    // Audio that is late by less than `catchUpMs` keeps the timeline (the chunks after it go
    // out on schedule, not behind it); after a longer gap playout starts afresh from now.
    if (this.#nextAt < now - this.#catchUpMs) this.#nextAt = now;
    if (this.#service(now) && !onClock) joinPlayoutClock(this.#service);
  }

  /** True when `chunk` is a queued keypad tone (no lookup unless tones are queued). */
  #isTone(chunk: AudioFrame): boolean {
    return this.#tonesQueued > 0 && this.#toneChunks.has(chunk);
  }

  /** One handler for every chunk's send (no closure per chunk). */
  #sendFailed = (err: unknown): void => {
    this.#link?.pushError(`send audio failed: ${errorMessage(err)}`);
  };

  /** Send every chunk now due; false (off the clock) once the far end has played them all. */
  #service = (now: number): boolean => {
    // Between two chunks of a call (most ticks), or in the stop hold-off: the full pass below
    // would do nothing (one field read: every playing call is served 100 times a second).
    if (now < this.#quietUntil) return true;
    const link = this.#link;
    // Held: nothing but keypad tones goes out (a tone cut in two could be heard as two presses).
    const held = now < this.#holdUntil;
    if (held && (this.#queue.length === 0 || !this.#isTone(this.#queue[0]))) {
      // The far end's timeline waits rather than racing ahead.
      this.#nextAt = Math.max(this.#nextAt, now);
      if (this.#ledger.active) this.#reportPlayed(now);
      return true;
    }
    // A late tick (the thread was busy) sends what fell due meanwhile, so the call does not fall
    // behind its timeline for good; a lag past `catchUpMs` is given up (the timeline moves).
    // (With nothing queued the timeline stays: the stop hold-off counts from its end.)
    if (this.#queue.length > 0 && this.#nextAt < now - this.#catchUpMs) {
      this.#nextAt = now - this.#catchUpMs;
    }
    while (this.#queue.length > 0 && this.#nextAt - now < this.#leadMs) {
      if (held && !this.#isTone(this.#queue[0])) break;
      const chunk = this.#queue.shift()!;
      if (this.#isTone(chunk)) {
        this.#tonesQueued--;
        this.#toneUntil = this.#nextAt + (chunk.pcm.length * 1000) / chunk.sampleRate;
      }
      if (!this.#speaking) {
        this.#speaking = true;
        this.#sent = 0;
        link?.broadcast(makeFrame("BotStartedSpeaking", {}));
      }
      if (++this.#sent % this.#speakingEvery === 0) {
        link?.broadcast(makeFrame("BotSpeaking", {}));
      }
      const sent = this.#t.sendAudio(chunk);
      if (sent !== SENT) sent.catch(this.#sendFailed);
      for (const listener of this.#sentListeners) listener(chunk, this.#nextAt);
      const ms = (chunk.pcm.length * 1000) / chunk.sampleRate;
      this.#nextAt += ms;
      this.#sentMs += ms;
    }
    if (this.#ledger.active) this.#reportPlayed(now);
    // Once the far end has played everything, still speaking through the hold-off: more audio
    // in it continues this speech (no BotStoppedSpeaking and BotStartedSpeaking through the
    // whole pipeline for a gap between two bursts). An End waiting for the drain does not wait.
    const holdOff = this.#speaking && this.#drained === undefined ? this.#stopHoldOffMs : 0;
    if (this.#queue.length > 0 || held || now < this.#nextAt + holdOff) {
      if (this.#queue.length === 0 && !held && !this.#ledger.headClosed) {
        this.#quietUntil = this.#nextAt + holdOff;
      }
      return true;
    }
    this.#playing = false;
    this.#stopSpeaking();
    this.#drained?.();
    this.#drained = undefined;
    return false;
  };

  /** How far the far end has played, on the ledger's timeline: sent, less what it still holds. */
  #playedMs(now: number): number {
    return this.#sentMs - Math.max(0, this.#nextAt - now);
  }

  /** SpokenText upstream for every piece whose audio has now played. */
  #reportPlayed(now: number): void {
    const link = this.#link;
    if (link === undefined || !this.#ledger.active) return;
    this.#pushSpoken(this.#ledger.played(this.#playedMs(now)), link);
  }

  #pushSpoken(pieces: readonly SpokenPiece[], link: Link): void {
    for (const p of pieces) {
      link.push(
        makeFrame("SpokenText", { utteranceId: p.utteranceId, text: p.text }),
        "upstream",
      );
    }
  }

  #stopPlaying(): void {
    if (this.#playing) leavePlayoutClock(this.#service);
    this.#playing = false;
    this.#stopSpeaking();
  }

  #stopSpeaking(): void {
    if (this.#speaking) {
      this.#speaking = false;
      this.#link?.broadcast(makeFrame("BotStoppedSpeaking", {}));
    }
  }
}
