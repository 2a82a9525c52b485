/**
 * The hold audio of warm transfers (`telephony.sip.transfer.hold_audio_file`): a WAV file read
 * once at start, its first channel resampled to the 8 kHz of a SIP leg. Only this file is read,
 * and `--print-permissions` grants read access to exactly it.
 * @module
 */

import { Resampler } from "../core/audio/resample.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";

/** Longest hold audio kept, in seconds (it loops): a minute of 8 kHz PCM is under 1 MB. */
const MAX_SECONDS = 60;

/** Read `path` as 8 kHz mono PCM (a config error names the field and the file). */
export async function readHoldAudio(path: string): Promise<Int16Array> {
  const problem = (why: string) =>
    new FlowcatError("config", `telephony.sip.transfer.hold_audio_file: ${path}: ${why}`);
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (err) {
    throw problem(`cannot read it: ${errorMessage(err)}`);
  }
  let wav;
  try {
    wav = decodeWav(bytes);
  } catch (err) {
    throw problem(`not a 16-bit PCM WAV file (${errorMessage(err)})`);
  }
  const channels = wav.numChannels;
  const frames = Math.min(Math.floor(wav.pcm.length / channels), wav.sampleRate * MAX_SECONDS);
  const mono = new Int16Array(frames);
  for (let i = 0; i < frames; i++) mono[i] = wav.pcm[i * channels];
  if (frames === 0) throw problem("it holds no audio");
  return wav.sampleRate === 8000 ? mono : new Resampler(wav.sampleRate, 8000).process(mono);
}
