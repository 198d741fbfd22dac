import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { REPLY_LANGUAGES, ReplyLanguage, VOICE_IDS } from '../src/agents/voices';
import { loadConfig } from '../src/config/config';
import { SpeechProviderFailure } from '../src/voice/provider-failure';
import { BuiltinTextToSpeech, BuiltinTextToSpeechOptions, spawnEspeakWorker } from '../src/voice/tts/builtin-tts';
import { EspeakReply, EspeakWorkerData } from '../src/voice/tts/espeak-worker-source';
import { ESPEAK_LANGUAGES, espeakVoice, VOICE_GENDERS } from '../src/voice/tts/espeak-voices';
import { SpeechRequest } from '../src/voice/tts/text-to-speech';
import { threadsAtNiceness } from './support/threads';

const ESPEAK_PATH = require.resolve('@echogarden/espeak-ng-emscripten');
const RATE = 22_050;

/** A question in each reply language, in its own script. */
const SENTENCES: Record<ReplyLanguage, string> = {
  'hi-IN': 'नमस्ते, मैं आपकी कैसे मदद कर सकती हूँ?',
  'en-IN': 'Namaste, your order will reach Bengaluru by Friday.',
  'bn-IN': 'নমস্কার, আমি আপনাকে কীভাবে সাহায্য করতে পারি?',
  'gu-IN': 'નમસ્તે, હું તમારી કેવી રીતે મદદ કરી શકું?',
  'kn-IN': 'ನಮಸ್ಕಾರ, ನಾನು ನಿಮಗೆ ಹೇಗೆ ಸಹಾಯ ಮಾಡಬಹುದು?',
  'ml-IN': 'നമസ്കാരം, ഞാൻ നിങ്ങളെ എങ്ങനെ സഹായിക്കണം?',
  'mr-IN': 'नमस्कार, मी तुम्हाला कशी मदत करू शकते?',
  'od-IN': 'ନମସ୍କାର, ମୁଁ ଆପଣଙ୍କୁ କିପରି ସାହାଯ୍ୟ କରିପାରିବି?',
  'pa-IN': 'ਸਤ ਸ੍ਰੀ ਅਕਾਲ, ਮੈਂ ਤੁਹਾਡੀ ਕਿਵੇਂ ਮਦਦ ਕਰ ਸਕਦੀ ਹਾਂ?',
  'ta-IN': 'வணக்கம், நான் உங்களுக்கு எப்படி உதவ முடியும்?',
  'te-IN': 'నమస్కారం, నేను మీకు ఎలా సహాయం చేయగలను?',
  'en-US': 'Hello, how can I help you today?',
};
/** About a minute of speech: espeak takes most of a second of CPU over it, hundreds of chunks. */
const LONG_TEXT = 'Your refund has been approved and will reach your account within five working days. '.repeat(12);

/** The worker threads an instance starts, watched: every reply they post, in order of arrival. */
class WatchedThreads {
  readonly workers: Worker[] = [];
  readonly replies: { id: number; kind: 'chunk' | 'end' }[] = [];
  /** The next threads to start instead of espeak's (a thread that hangs); espeak's once these run out. */
  readonly substitutes: ((workerData: EspeakWorkerData) => Worker)[] = [];

  readonly spawn = (workerData: EspeakWorkerData): Worker => {
    const worker = (this.substitutes.shift() ?? spawnEspeakWorker)(workerData);
    // Only what each reply is: keeping their audio would leave the main thread collecting garbage.
    worker.on('message', (reply: EspeakReply) => this.replies.push({ id: reply.id, kind: 'samples' in reply ? 'chunk' : 'end' }));
    this.workers.push(worker);
    return worker;
  };

  /** Resolves when a thread reports the end of request `id`. */
  async ended(id: number): Promise<void> {
    while (!this.replies.some((reply) => reply.id === id && reply.kind === 'end')) {
      await Promise.race(this.workers.map((worker) => once(worker, 'message')));
    }
  }

  chunksOf(id: number): number {
    return this.replies.filter((reply) => reply.id === id && reply.kind === 'chunk').length;
  }

  idsSeen(): Set<number> {
    return new Set(this.replies.map((reply) => reply.id));
  }
}

function builtin(options: Partial<BuiltinTextToSpeechOptions> = {}): BuiltinTextToSpeech {
  return new BuiltinTextToSpeech({ espeakPath: ESPEAK_PATH, workers: 1, timeoutMs: 10_000, ...options });
}

function request(text: string, language: ReplyLanguage = 'en-US', voice = 'anushka', signal = new AbortController().signal): SpeechRequest {
  return { text, language, voice, signal };
}

async function speak(tts: BuiltinTextToSpeech, speech: SpeechRequest): Promise<{ chunks: Int16Array[]; samples: Int16Array }> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(speech)) chunks.push(chunk);
  const samples = new Int16Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  chunks.reduce((offset, chunk) => (samples.set(chunk, offset), offset + chunk.length), 0);
  return { chunks, samples };
}

const seconds = (samples: Int16Array) => samples.length / RATE;

const rms = (samples: Int16Array, from = 0, to = samples.length) => {
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / Math.max(1, to - from));
};

/** The share of 20 ms frames that carry sound rather than silence. */
function voicedShare(samples: Int16Array): number {
  const frame = RATE / 50;
  let voiced = 0;
  let frames = 0;
  for (let start = 0; start + frame <= samples.length; start += frame, frames++) if (rms(samples, start, start + frame) > 300) voiced++;
  return voiced / frames;
}

/** The median pitch (Hz) of the loud frames, by autocorrelation between 60 and 400 Hz. */
function medianPitch(samples: Int16Array): number {
  const frame = 1024;
  const [minLag, maxLag] = [Math.floor(RATE / 400), Math.ceil(RATE / 60)];
  const pitches: number[] = [];
  for (let start = 0; start + frame + maxLag < samples.length; start += frame) {
    if (rms(samples, start, start + frame) < 1000) continue;
    let best = { correlation: 0.5, lag: 0 };
    for (let lag = minLag; lag <= maxLag; lag++) {
      let [product, energy, laggedEnergy] = [0, 0, 0];
      for (let i = start; i < start + frame; i++) {
        product += samples[i] * samples[i + lag];
        energy += samples[i] * samples[i];
        laggedEnergy += samples[i + lag] * samples[i + lag];
      }
      const correlation = product / Math.sqrt(energy * laggedEnergy);
      if (correlation > best.correlation) best = { correlation, lag };
    }
    if (best.lag) pitches.push(RATE / best.lag);
  }
  pitches.sort((a, b) => a - b);
  return pitches[pitches.length >> 1];
}

const cpuMs = ({ user, system }: NodeJS.CpuUsage) => (user + system) / 1000;

/** The main thread's own CPU time in milliseconds: process.threadCpuUsage where Node has it, else Linux's /proc. */
function mainThreadCpuMs(): number {
  const own = process as { threadCpuUsage?: () => NodeJS.CpuUsage };
  if (own.threadCpuUsage) return cpuMs(own.threadCpuUsage());
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

describe('espeak voices', () => {
  it('gives every catalog voice, in every reply language, that language’s voice with the speaker’s gender', () => {
    expect([...VOICE_GENDERS.keys()].sort()).toEqual([...VOICE_IDS].sort());
    expect(Object.keys(ESPEAK_LANGUAGES).sort()).toEqual([...REPLY_LANGUAGES].sort());
    for (const voiceId of VOICE_IDS) {
      for (const language of REPLY_LANGUAGES) {
        const variant = VOICE_GENDERS.get(voiceId) === 'female' ? 'f3' : 'm3';
        expect(espeakVoice(voiceId, language)).toBe(`${ESPEAK_LANGUAGES[language]}+${variant}`);
      }
    }
    expect(['anushka', 'manisha', 'vidya', 'arya', 'ritu-preview', 'anushka-ng'].map((id) => VOICE_GENDERS.get(id))).toEqual(
      Array(6).fill('female'),
    );
    expect(['shubh', 'abhilash', 'karun', 'hitesh', 'aditya-preview', 'shubh-ng'].map((id) => VOICE_GENDERS.get(id))).toEqual(
      Array(6).fill('male'),
    );
    // espeak has no Indian English and calls Odia `or`.
    expect([espeakVoice('shubh', 'en-IN'), espeakVoice('shubh', 'en-US'), espeakVoice('anushka', 'od-IN')]).toEqual([
      'en+m3',
      'en-us+m3',
      'or+f3',
    ]);
  });
});

describe('BuiltinTextToSpeech', () => {
  it('loads when its optional package is installed, and is absent otherwise', async () => {
    const config = loadConfig({ ...process.env, TTS_WORKERS: '3', TTS_TIMEOUT_MS: '5000' });
    const tts = BuiltinTextToSpeech.load(config);
    expect(tts).toBeInstanceOf(BuiltinTextToSpeech);
    expect([tts?.name, tts?.sampleRate]).toEqual(['builtin', 22_050]);
    await tts?.close();
    expect(BuiltinTextToSpeech.load(config, '@echogarden/no-such-synthesizer')).toBeNull();
  });

  it('synthesises at niceness 5: after the event loop that paces the calls, before the recordings', async () => {
    const before = threadsAtNiceness(5);
    const own = builtin({ workers: 1 });
    try {
      await speak(own, request('Hello.'));
      expect(threadsAtNiceness(5).filter((tid) => !before.includes(tid))).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  describe('speaking', () => {
    const threads = new WatchedThreads();
    const tts = builtin({ workers: 2, spawn: threads.spawn });
    afterAll(() => tts.close());

    it('speaks every reply language in a female and a male voice', async () => {
      for (const language of REPLY_LANGUAGES) {
        const [female, male] = await Promise.all([
          speak(tts, request(SENTENCES[language], language, 'anushka')),
          speak(tts, request(SENTENCES[language], language, 'shubh')),
        ]);
        for (const { samples } of [female, male]) {
          expect({ language, plausible: seconds(samples) > 1 && seconds(samples) < 6 }).toEqual({ language, plausible: true });
          expect({ language, mostlySound: voicedShare(samples) > 0.5 }).toEqual({ language, mostlySound: true });
        }
        // espeak's female variant speaks about an octave above its male one (around 200 Hz and 100 Hz).
        expect({ language, female: medianPitch(female.samples) > 160, male: medianPitch(male.samples) < 135 }).toEqual({
          language,
          female: true,
          male: true,
        });
      }
    }, 90_000);

    it('streams: the first chunks arrive while espeak is still synthesising', async () => {
      const before = threads.replies.length;
      const chunks: Int16Array[] = [];
      let endedBeforeFirstChunk: boolean | undefined;
      for await (const chunk of tts.synthesize(request(LONG_TEXT))) {
        // The watcher records each reply before the pool sees it: the worker's end would be there if it had come.
        endedBeforeFirstChunk ??= threads.replies.slice(before).some((reply) => reply.kind === 'end');
        chunks.push(chunk);
      }
      expect(endedBeforeFirstChunk).toBe(false);
      expect(chunks.length).toBeGreaterThan(100);
      // Chunks are espeak's own (a tenth of a second, shorter at the ends of sentences), handed over as they came.
      const lengths = chunks.map((chunk) => chunk.length).sort((a, b) => a - b);
      expect(lengths[lengths.length >> 1]).toBeGreaterThan(RATE / 12);
      expect(lengths[lengths.length >> 1]).toBeLessThan(RATE / 8);
    });

    it('drops angle brackets and tags rather than pausing at them or reading them', async () => {
      const plain = await speak(tts, request('Press the green button to go back.'));
      const bracketed = await speak(tts, request('Press the <b>green</b> button <<<< >>>> to go back.'));
      expect(Math.abs(seconds(bracketed.samples) - seconds(plain.samples))).toBeLessThan(seconds(plain.samples) * 0.05);
      const spawned = threads.workers.length;
      await expect(speak(tts, request(' <<>> <br/> '))).resolves.toEqual({ chunks: [], samples: new Int16Array(0) });
      expect(threads.workers).toHaveLength(spawned);
    });

    it('keeps each caller’s audio to itself when many speak at once', async () => {
      const speeches = [
        request('Yes.', 'en-US', 'shubh'),
        request(SENTENCES['hi-IN'], 'hi-IN', 'anushka'),
        request(`${SENTENCES['ta-IN']} ${SENTENCES['ta-IN']} ${SENTENCES['ta-IN']}`, 'ta-IN', 'karun'),
        request('Your order has shipped and will arrive on Monday morning.', 'en-IN', 'vidya'),
        request(SENTENCES['bn-IN'], 'bn-IN', 'hitesh'),
        request(`${SENTENCES['te-IN']} ${SENTENCES['te-IN']}`, 'te-IN', 'arya'),
      ];
      const alone: number[] = [];
      for (const speech of speeches) alone.push(seconds((await speak(tts, speech)).samples));
      const together = await Promise.all([...speeches, ...speeches].map((speech) => speak(tts, speech)));
      // espeak varies its timing slightly from run to run; another caller's chunk would add a tenth of a second.
      together.forEach(({ samples }, index) => expect(Math.abs(seconds(samples) - alone[index % speeches.length])).toBeLessThan(0.05));
      expect(threads.workers).toHaveLength(2);
    });

    it('serves a caller waiting in silence before sentences that other callers need only once theirs has played', async () => {
      const queued = new WatchedThreads();
      const one = builtin({ spawn: queued.spawn });
      // The thread is busy with a long text; meanwhile three sentences wait, the one needed now asked for last.
      const speeches = [
        speak(one, request(LONG_TEXT)),
        speak(one, { ...request(SENTENCES['en-US']), slackMs: 5_000 }),
        speak(one, { ...request(SENTENCES['en-IN'], 'en-IN'), slackMs: 3_000 }),
        speak(one, request(SENTENCES['hi-IN'], 'hi-IN')),
      ];
      await Promise.all(speeches);
      // Requests are numbered from 1 in the order asked.
      expect(queued.replies.filter((reply) => reply.kind === 'end').map((reply) => reply.id)).toEqual([1, 4, 3, 2]);
      await one.close();
    });

    it('synthesises in its worker threads, not on the event loop', async () => {
      const speeches = Array.from({ length: 20 }, (_, index) =>
        request(`${SENTENCES['en-US']} ${SENTENCES['hi-IN']}`, index % 2 ? 'en-US' : 'hi-IN', index % 3 ? 'arya' : 'karun'),
      );
      const [processBefore, mainBefore] = [process.cpuUsage(), mainThreadCpuMs()];
      const results = await Promise.all(speeches.map((speech) => speak(tts, speech)));
      const [processMs, mainMs] = [cpuMs(process.cpuUsage(processBefore)), mainThreadCpuMs() - mainBefore];
      expect(results.every(({ samples }) => seconds(samples) > 2)).toBe(true);
      // Receiving the chunks costs the main thread a small fraction of what producing them costs the workers.
      expect(processMs).toBeGreaterThan(200);
      expect(mainMs).toBeLessThan(processMs / 4);
    });
  });

  describe('stopping', () => {
    it('stops at once when aborted mid-sentence, and its thread serves the next request', async () => {
      const threads = new WatchedThreads();
      const tts = builtin({ spawn: threads.spawn });
      const full = await speak(tts, request(LONG_TEXT));
      const interrupted = new AbortController();
      const received: Int16Array[] = [];
      for await (const chunk of tts.synthesize(request(LONG_TEXT, 'en-US', 'anushka', interrupted.signal))) {
        received.push(chunk);
        if (received.length === 3) interrupted.abort();
      }
      expect(received).toHaveLength(3);
      const id = Math.max(...threads.idsSeen());
      await threads.ended(id);
      // The worker stopped within a few chunks of the abort, far from the end of the text.
      expect(threads.chunksOf(id)).toBeLessThan(full.chunks.length / 5);
      const next = await speak(tts, request(SENTENCES['en-US']));
      expect(seconds(next.samples)).toBeGreaterThan(1);
      expect(threads.workers).toHaveLength(1);
      await tts.close();
    });

    it('drops a request aborted while it waits for the thread, before it reaches espeak', async () => {
      const threads = new WatchedThreads();
      const tts = builtin({ spawn: threads.spawn });
      const first = new AbortController();
      const second = new AbortController();
      const firstDone = (async () => {
        let chunks = 0;
        for await (const _chunk of tts.synthesize(request(LONG_TEXT, 'en-US', 'anushka', first.signal))) {
          if (++chunks === 1) {
            second.abort();
            first.abort();
          }
        }
        return chunks;
      })();
      const secondDone = speak(tts, request(SENTENCES['en-US'], 'en-US', 'anushka', second.signal));
      await expect(firstDone).resolves.toBe(1);
      await expect(secondDone).resolves.toEqual({ chunks: [], samples: new Int16Array(0) });
      const third = await speak(tts, request(SENTENCES['en-US']));
      expect(seconds(third.samples)).toBeGreaterThan(1);
      // Only the first and the third ever reached the worker.
      expect(threads.idsSeen().size).toBe(2);
      await tts.close();
    });

    it('times out a synthesis that takes too long, stopping it in its thread', async () => {
      const threads = new WatchedThreads();
      const tts = builtin({ spawn: threads.spawn, timeoutMs: 3_000 });
      await speak(tts, request('Ready.'));
      // Ten times what the fastest machine synthesises within the deadline (144 sentences took about 3 s on Node 24).
      const failure = speak(tts, request(LONG_TEXT.repeat(120)));
      await expect(failure).rejects.toBeInstanceOf(SpeechProviderFailure);
      await expect(failure).rejects.toMatchObject({ kind: 'timeout' });
      await threads.ended(Math.max(...threads.idsSeen()));
      const next = await speak(tts, request(SENTENCES['en-US']));
      expect(seconds(next.samples)).toBeGreaterThan(1);
      expect(threads.workers).toHaveLength(1);
      await tts.close();
    });

    it('replaces a thread that does not stop when asked', async () => {
      const threads = new WatchedThreads();
      threads.substitutes.push(
        () => new Worker("require('node:worker_threads').parentPort.on('message', () => { for (;;); });", { eval: true }),
      );
      // The options object is the provider's own (it reads the deadline per request): a short deadline for the
      // hung thread, then a long one for the replacement, whose cold start (loading espeak) counts in it and can
      // take seconds while the whole suite runs on 2 cores.
      const options: BuiltinTextToSpeechOptions = { espeakPath: ESPEAK_PATH, workers: 1, timeoutMs: 1_500, spawn: threads.spawn };
      const tts = new BuiltinTextToSpeech(options);
      await expect(speak(tts, request(SENTENCES['en-US']))).rejects.toMatchObject({ kind: 'timeout' });
      const [hung] = threads.workers;
      await once(hung, 'exit');
      options.timeoutMs = 60_000;
      const next = await speak(tts, request(SENTENCES['en-US']));
      expect(seconds(next.samples)).toBeGreaterThan(1);
      expect(threads.workers).toHaveLength(2);
      await tts.close();
    });
  });

  describe('failing', () => {
    it('fails the request of a thread that dies, and serves the queued ones on its replacement', async () => {
      const threads = new WatchedThreads();
      const tts = builtin({ spawn: threads.spawn });
      const dying = tts.synthesize(request(LONG_TEXT))[Symbol.asyncIterator]();
      await dying.next();
      const queued = speak(tts, request(SENTENCES['hi-IN'], 'hi-IN'));
      await threads.workers[0].terminate();
      await expect(dying.next()).rejects.toMatchObject({ kind: 'connection' });
      expect(seconds((await queued).samples)).toBeGreaterThan(1);
      expect(threads.workers).toHaveLength(2);
      await tts.close();
    });

    it('fails what it was doing when closed, and speaks no more', async () => {
      const tts = builtin();
      const speaking = tts.synthesize(request(LONG_TEXT))[Symbol.asyncIterator]();
      await speaking.next();
      await tts.close();
      await expect(speaking.next()).rejects.toMatchObject({ kind: 'connection' });
      await expect(speak(tts, request('Hello.'))).rejects.toMatchObject({ kind: 'connection' });
    });
  });
});
