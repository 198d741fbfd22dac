import { Logger } from '@nestjs/common';
import { once } from 'node:events';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { REPLY_LANGUAGES, ReplyLanguage, VOICE_IDS } from '../src/agents/voices';
import { createLogger, PinoLoggerService } from '../src/common/logger';
import { AppConfig, loadConfig } from '../src/config/config';
import { logProviderFailure } from '../src/conversations/answering/failure-log';
import { ProviderHttp } from '../src/conversations/answering/provider-http';
import { concatPcm } from '../src/voice/audio/pcm';
import { encodeWav } from '../src/voice/audio/wav';
import { resample } from '../src/voice/audio/resample';
import { SpeechProviderFailure } from '../src/voice/provider-failure';
import { multipart } from '../src/voice/speech-http';
import { OpenAiSpeechToText } from '../src/voice/stt/openai-stt';
import { createSpeechToText } from '../src/voice/stt/providers';
import { SarvamSpeechToText } from '../src/voice/stt/sarvam-stt';
import { SpeechToText } from '../src/voice/stt/speech-to-text';
import { OpenAiTextToSpeech } from '../src/voice/tts/openai-tts';
import { createTextToSpeech } from '../src/voice/tts/providers';
import { SarvamTextToSpeech } from '../src/voice/tts/sarvam-tts';
import { TextToSpeech } from '../src/voice/tts/text-to-speech';
import {
  FAKE_SPEECH_KEY,
  FakeSpeechProviders,
  fakeSpeech,
  Garbage,
  PROVIDER_SECRET,
  speechSamples,
  startFakeSpeechProviders,
} from './fake-speech-providers';

/**
 * The providers' deadline in the cases about the deadline. Every other case runs under a patient one, so that a busy
 * machine (the whole suite on two cores) never turns a slow answer into a timeout the case did not ask for.
 */
const DEADLINE_MS = 400;
const PATIENT_MS = 30_000;
const deadline = { TTS_TIMEOUT_MS: String(DEADLINE_MS), STT_TIMEOUT_MS: String(DEADLINE_MS) };
/** The environment a failure case runs under: the short deadline only when a timeout is what it expects. */
const envFor = (kind: string): Record<string, string> => (kind === 'timeout' ? deadline : {});
const SPOKEN = 'The customer secret sentence.';
const UTTERANCE = fakeSpeech('A second of the visitor speaking.', 16_000);

let fake: FakeSpeechProviders;
let providerHttp: ProviderHttp;

beforeAll(async () => {
  fake = await startFakeSpeechProviders({ apiKey: FAKE_SPEECH_KEY });
  providerHttp = new ProviderHttp();
});
afterAll(async () => {
  providerHttp.onApplicationShutdown();
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.setMode({ kind: 'ok' });
  fake.answerSarvamAt(undefined);
});

function config(env: Record<string, string> = {}): AppConfig {
  return loadConfig({
    ...process.env,
    TTS_BASE_URL: fake.openAiUrl,
    TTS_API_KEY: FAKE_SPEECH_KEY,
    TTS_MODEL: 'tts-test',
    STT_BASE_URL: fake.openAiUrl,
    STT_API_KEY: FAKE_SPEECH_KEY,
    STT_MODEL: 'stt-test',
    SARVAM_BASE_URL: fake.sarvamUrl,
    SARVAM_API_KEY: FAKE_SPEECH_KEY,
    TTS_TIMEOUT_MS: String(PATIENT_MS),
    STT_TIMEOUT_MS: String(PATIENT_MS),
    ...env,
  });
}

const tts = (provider: 'openai' | 'sarvam', env: Record<string, string> = {}): TextToSpeech =>
  createTextToSpeech(config({ TTS_PROVIDER: provider, ...env }), providerHttp, () => null)!;
const stt = (provider: 'openai' | 'sarvam', env: Record<string, string> = {}): SpeechToText =>
  createSpeechToText(config({ STT_PROVIDER: provider, ...env }), providerHttp)!;

async function speak(
  speaker: TextToSpeech,
  text = SPOKEN,
  voice = 'shubh',
  language: ReplyLanguage = 'en-IN',
  signal = new AbortController().signal,
) {
  const chunks: Int16Array[] = [];
  for await (const chunk of speaker.synthesize({ text, voice, language, signal })) chunks.push(chunk);
  return { chunks, pcm: concatPcm(chunks) };
}

const transcribe = (listener: SpeechToText, language: ReplyLanguage = 'hi-IN', signal = new AbortController().signal) =>
  listener.transcribe({ audio: UTTERANCE, language, signal });

/** The failure an attempt ended with (the test fails if it did not fail). */
async function failureOf(attempt: () => Promise<unknown>): Promise<SpeechProviderFailure> {
  const error = await attempt().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SpeechProviderFailure);
  // Only a kind and a status: nothing of the provider's answer travels with the failure.
  expect(`${(error as Error).message} ${JSON.stringify(error)}`).not.toContain(PROVIDER_SECRET);
  return error as SpeechProviderFailure;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the fake providers', () => {
  const post = (path: string, headers: Record<string, string>, body: string | Buffer) =>
    fetch(`${fake.sarvamUrl}${path}`, { method: 'POST', headers, body }).then(async (response) => {
      await response.body?.cancel();
      return response.status;
    });
  const openAiJson = { 'Content-Type': 'application/json', Authorization: `Bearer ${FAKE_SPEECH_KEY}` };
  const sarvamJson = { 'Content-Type': 'application/json', 'api-subscription-key': FAKE_SPEECH_KEY };
  const bulbul = (fields: object) =>
    JSON.stringify({ text: 'Hello.', target_language_code: 'hi-IN', speaker: 'anushka', model: 'bulbul:v2', ...fields });
  const form = (fields: Record<string, string>, data: Buffer) => {
    const { body, contentType } = multipart(fields, { field: 'file', filename: 'audio.wav', type: 'audio/wav', data });
    return { body, headers: { 'Content-Type': contentType, Authorization: `Bearer ${FAKE_SPEECH_KEY}` } };
  };

  it('refuse what the real APIs refuse, with their statuses', async () => {
    const speech = (fields: object) => JSON.stringify({ model: 'm', input: 'Hello.', voice: 'shubh', response_format: 'pcm', ...fields });
    expect(await post('/v1/audio/speech', openAiJson, speech({}))).toBe(200);
    expect(await post('/v1/audio/nothing', openAiJson, speech({}))).toBe(404);
    expect(await post('/v1/audio/speech', { 'Content-Type': 'application/json' }, speech({}))).toBe(401);
    expect(await post('/v1/audio/speech', openAiJson, speech({ input: 'x'.repeat(4_097) }))).toBe(400);
    expect(await post('/v1/audio/speech', openAiJson, '{"model":')).toBe(400);

    expect(await post('/text-to-speech', sarvamJson, bulbul({}))).toBe(200);
    expect(await post('/text-to-speech', { 'Content-Type': 'application/json' }, bulbul({}))).toBe(403);
    expect(await post('/text-to-speech', sarvamJson, bulbul({ model: 'bulbul:v3' }))).toBe(400); // anushka is not a v3 speaker
    expect(await post('/text-to-speech', sarvamJson, bulbul({ target_language_code: 'en-US' }))).toBe(400);
    expect(await post('/text-to-speech', sarvamJson, bulbul({ text: 'x'.repeat(1_501) }))).toBe(400);

    const wav = encodeWav(UTTERANCE, 16_000);
    const transcription = (fields: Record<string, string>, data = wav) => {
      const { body, headers } = form(fields, data);
      return post('/v1/audio/transcriptions', headers, body);
    };
    expect(await transcription({ model: 'm', language: 'hi' })).toBe(200);
    expect(await transcription({ model: 'm', language: 'hi-IN' })).toBe(400);
    expect(await transcription({ model: 'm' }, Buffer.from('not a wav'))).toBe(400);
    expect(await post('/v1/audio/transcriptions', openAiJson, '{"model":"m"}')).toBe(400);
  });
});

describe('the factories', () => {
  it('make nothing for none, the built-in voice by its loader, and each provider by name', () => {
    const builtin = { name: 'builtin' } as TextToSpeech;
    expect(createTextToSpeech(config({ TTS_PROVIDER: 'none' }), providerHttp, () => builtin)).toBeNull();
    expect(createTextToSpeech(config({ TTS_PROVIDER: 'builtin' }), providerHttp, () => builtin)).toBe(builtin);
    expect(createTextToSpeech(config({ TTS_PROVIDER: 'builtin' }), providerHttp, () => null)).toBeNull();
    expect(tts('openai')).toBeInstanceOf(OpenAiTextToSpeech);
    expect(tts('openai', { TTS_SAMPLE_RATE: '22050' }).sampleRate).toBe(22_050);
    expect(tts('sarvam')).toBeInstanceOf(SarvamTextToSpeech);
    expect(tts('sarvam').sampleRate).toBe(16_000);
    expect(createSpeechToText(config({ STT_PROVIDER: 'none' }), providerHttp)).toBeNull();
    expect(stt('openai')).toBeInstanceOf(OpenAiSpeechToText);
    expect(stt('sarvam')).toBeInstanceOf(SarvamSpeechToText);
  });
});

describe('OpenAI-compatible text-to-speech', () => {
  it('asks for raw PCM in the agent voice and yields exactly the samples the server spoke', async () => {
    const { chunks, pcm } = await speak(tts('openai'), SPOKEN, 'anushka-ng');
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request.path).toBe('/v1/audio/speech');
    expect(request.headers.authorization).toBe(`Bearer ${FAKE_SPEECH_KEY}`);
    expect(request.json).toEqual({ model: 'tts-test', input: SPOKEN, voice: 'anushka-ng', response_format: 'pcm' });
    // The fake writes odd-sized pieces, so samples straddle chunk boundaries.
    expect(chunks.length).toBeGreaterThan(1);
    expect(pcm).toEqual(fakeSpeech(SPOKEN, 24_000));
  });

  it('yields the first audio before the answer has ended', async () => {
    let release!: () => void;
    fake.setMode({ kind: 'slow', chunkMs: 0, hold: new Promise<void>((resolve) => (release = resolve)) });
    const speech = tts('openai').synthesize({ text: SPOKEN, voice: 'shubh', language: 'en-IN', signal: new AbortController().signal });
    const iterator = speech[Symbol.asyncIterator]();
    // The fake holds the rest of its answer until released, so this chunk came while the body was still open.
    const first = await iterator.next();
    expect(first.done).toBe(false);
    release();
    const chunks = [first.value as Int16Array];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) chunks.push(next.value);
    expect(chunks.length).toBeGreaterThan(1);
    expect(concatPcm(chunks)).toEqual(fakeSpeech(SPOKEN, 24_000));
  });

  it('sends a text over the API limit of 4,096 characters as several requests, cut between words', async () => {
    const text = Array.from({ length: 900 }, (_, index) => `word${index % 10}`).join(' ');
    const { pcm } = await speak(tts('openai'), text);
    const inputs = fake.requests.map((request) => request.json!.input as string);
    expect(inputs.length).toBe(2);
    expect(inputs.every((input) => input.length <= 4_096 && /^word\d( word\d)*$/.test(input))).toBe(true);
    expect(inputs.join(' ')).toBe(text);
    expect(pcm.length).toBe(inputs.reduce((total, input) => total + speechSamples(input, 24_000), 0));
  });

  it.each<[string, string, number | undefined, () => void]>([
    ['a server error', 'http-status', 500, () => fake.setMode({ kind: 'status', status: 500 })],
    ['an HTML page', 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body: 'html' })],
    ['a JSON error with 200', 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body: 'not-json' })],
    ['an odd number of bytes', 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body: 'odd-pcm' })],
    ['no audio', 'empty', undefined, () => fake.setMode({ kind: 'garbage', body: 'no-audio' })],
    ['no answer', 'timeout', undefined, () => fake.setMode({ kind: 'stall' })],
    ['a stream that stops', 'timeout', undefined, () => fake.setMode({ kind: 'slow', chunkMs: 0, hold: new Promise(() => undefined) })],
  ])('turns %s into a %s failure', async (_case, kind, status, arrange) => {
    arrange();
    const failure = await failureOf(() => speak(tts('openai', envFor(kind))));
    expect(failure).toMatchObject({ kind, status });
  });

  it('answers 401 to a wrong key, and a refused connection is a connection failure', async () => {
    expect(await failureOf(() => speak(tts('openai', { TTS_API_KEY: 'sk-wrong' })))).toMatchObject({ kind: 'http-status', status: 401 });
    const port = await closedPort();
    expect(await failureOf(() => speak(tts('openai', { TTS_BASE_URL: `http://127.0.0.1:${port}/v1` })))).toMatchObject({
      kind: 'connection',
    });
  });

  it('ends quietly when the caller aborts mid-stream, and the request is closed', async () => {
    fake.setMode({ kind: 'slow', chunkMs: 0, hold: new Promise(() => undefined) });
    const controller = new AbortController();
    const aborted = once(fake.events, 'aborted');
    const chunks: Int16Array[] = [];
    for await (const chunk of tts('openai').synthesize({ text: SPOKEN, voice: 'shubh', language: 'en-IN', signal: controller.signal })) {
      chunks.push(chunk);
      controller.abort();
    }
    expect(chunks).toHaveLength(1);
    expect(await aborted).toEqual(['/v1/audio/speech']);
  });
});

/** Bulbul's speaker and model for each catalog voice (anushka has no newer model than v2). */
const BULBUL_OF: Record<string, [string, string]> = {
  shubh: ['shubh', 'bulbul:v3'],
  'shubh-ng': ['shubh', 'bulbul:v3'],
  'ritu-preview': ['ritu', 'bulbul:v3'],
  'aditya-preview': ['aditya', 'bulbul:v3'],
  anushka: ['anushka', 'bulbul:v2'],
  'anushka-ng': ['anushka', 'bulbul:v2'],
  manisha: ['manisha', 'bulbul:v2'],
  vidya: ['vidya', 'bulbul:v2'],
  arya: ['arya', 'bulbul:v2'],
  abhilash: ['abhilash', 'bulbul:v2'],
  karun: ['karun', 'bulbul:v2'],
  hitesh: ['hitesh', 'bulbul:v2'],
};

describe('Sarvam text-to-speech', () => {
  it('asks Bulbul for every catalog voice as its speaker on its model, at 16 kHz', async () => {
    expect(Object.keys(BULBUL_OF).sort()).toEqual([...VOICE_IDS].sort());
    for (const voice of VOICE_IDS) {
      fake.requests.length = 0;
      const { pcm } = await speak(tts('sarvam'), SPOKEN, voice, 'hi-IN');
      const [speaker, model] = BULBUL_OF[voice];
      expect(fake.requests.map((request) => request.json)).toEqual([
        { text: SPOKEN, target_language_code: 'hi-IN', speaker, model, speech_sample_rate: 16_000 },
      ]);
      expect(fake.requests[0].headers['api-subscription-key']).toBe(FAKE_SPEECH_KEY);
      expect(pcm).toEqual(fakeSpeech(SPOKEN, 16_000));
    }
  });

  it('writes every reply language as Sarvam does (US English as Indian English)', async () => {
    for (const language of REPLY_LANGUAGES) await speak(tts('sarvam'), SPOKEN, 'anushka', language);
    const sent = fake.requests.map((request) => request.json!.target_language_code);
    expect(sent).toEqual(REPLY_LANGUAGES.map((language) => (language === 'en-US' ? 'en-IN' : language)));
    expect(sent).toContain('od-IN');
  });

  it('resamples an answer at another rate to 16 kHz', async () => {
    fake.answerSarvamAt(22_050);
    const { pcm } = await speak(tts('sarvam'));
    expect(pcm).toEqual(resample(fakeSpeech(SPOKEN, 22_050), 22_050, 16_000));
  });

  it('cuts a text over the model limit at sentence ends (1,500 characters on v2, 2,500 on v3)', async () => {
    const sentence = 'This sentence is forty characters long. ';
    const text = sentence.repeat(100).trim();
    await speak(tts('sarvam'), text, 'anushka');
    const v2 = fake.requests.map((request) => request.json!.text as string);
    fake.requests.length = 0;
    await speak(tts('sarvam'), text, 'shubh');
    const v3 = fake.requests.map((request) => request.json!.text as string);
    for (const [parts, limit] of [
      [v2, 1_500],
      [v3, 2_500],
    ] as const) {
      expect(parts.length).toBe(Math.ceil(text.length / limit));
      expect(parts.every((part) => part.length <= limit && part.endsWith('long.'))).toBe(true);
      expect(parts.join(' ')).toBe(text);
    }
  });

  it.each<[string, string, number | undefined, () => void]>([
    ['a server error', 'http-status', 500, () => fake.setMode({ kind: 'status', status: 500 })],
    ...(['not-json', 'html', 'no-audio', 'not-wav', 'wav-without-data'] as Garbage[]).map(
      (body) =>
        [body, 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body })] as [string, string, undefined, () => void],
    ),
    ['no answer', 'timeout', undefined, () => fake.setMode({ kind: 'stall' })],
  ])('turns %s into a %s failure', async (_case, kind, status, arrange) => {
    arrange();
    expect(await failureOf(() => speak(tts('sarvam', envFor(kind))))).toMatchObject({ kind, status });
  });

  it('answers 403 to a wrong key, as Sarvam does', async () => {
    expect(await failureOf(() => speak(tts('sarvam', { SARVAM_API_KEY: 'wrong' })))).toMatchObject({ kind: 'http-status', status: 403 });
  });

  it('ends quietly when the caller aborts while Sarvam is synthesizing, and the request is closed', async () => {
    fake.setMode({ kind: 'stall' });
    const controller = new AbortController();
    const aborted = once(fake.events, 'aborted');
    const received = once(fake.events, 'request');
    const spoken = speak(tts('sarvam'), SPOKEN, 'shubh', 'en-IN', controller.signal);
    await received;
    controller.abort();
    expect((await spoken).chunks).toEqual([]);
    expect(await aborted).toEqual(['/text-to-speech']);
  });
});

const ISO_639_1: Record<ReplyLanguage, string> = {
  'hi-IN': 'hi',
  'en-IN': 'en',
  'en-US': 'en',
  'bn-IN': 'bn',
  'gu-IN': 'gu',
  'kn-IN': 'kn',
  'ml-IN': 'ml',
  'mr-IN': 'mr',
  'od-IN': 'or',
  'pa-IN': 'pa',
  'ta-IN': 'ta',
  'te-IN': 'te',
};

interface ListenerCase {
  provider: 'openai' | 'sarvam';
  path: string;
  fields: (language: ReplyLanguage) => Record<string, string>;
  auth: { header: string; value: string; env: Record<string, string>; refusal: number };
}

describe.each<ListenerCase>([
  {
    provider: 'openai',
    path: '/v1/audio/transcriptions',
    fields: (language: ReplyLanguage) => ({ model: 'stt-test', language: ISO_639_1[language], response_format: 'json' }),
    auth: { header: 'authorization', value: `Bearer ${FAKE_SPEECH_KEY}`, env: { STT_API_KEY: 'wrong' }, refusal: 401 },
  },
  {
    provider: 'sarvam',
    path: '/speech-to-text',
    fields: (language: ReplyLanguage) => ({
      model: 'saaras:v3',
      mode: 'transcribe',
      language_code: language === 'en-US' ? 'en-IN' : language,
    }),
    auth: { header: 'api-subscription-key', value: FAKE_SPEECH_KEY, env: { SARVAM_API_KEY: 'wrong' }, refusal: 403 },
  },
])('$provider speech-to-text', ({ provider, path, fields, auth }) => {
  it('sends the utterance as a 16 kHz mono WAV with the fields for every reply language, and answers the transcript', async () => {
    fake.setTranscript((wav) => `heard ${wav.samples.length} samples`);
    for (const language of REPLY_LANGUAGES) {
      expect(await transcribe(stt(provider), language)).toBe(`heard ${UTTERANCE.length} samples`);
    }
    expect(fake.requests.map((request) => request.fields)).toEqual(REPLY_LANGUAGES.map(fields));
    for (const request of fake.requests) {
      expect(request.path).toBe(path);
      expect(request.headers[auth.header]).toBe(auth.value);
      expect(request.file).toEqual({
        filename: 'audio.wav',
        type: 'audio/wav',
        sampleRate: 16_000,
        channels: 1,
        samples: UTTERANCE.length,
      });
    }
  });

  it('answers an empty transcript when nothing was said', async () => {
    fake.setTranscript('');
    expect(await transcribe(stt(provider))).toBe('');
  });

  it.each<[string, string, number | undefined, () => void]>([
    ['a server error', 'http-status', 503, () => fake.setMode({ kind: 'status', status: 503 })],
    ['not JSON', 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body: 'not-json' })],
    ['an HTML page', 'invalid-response', undefined, () => fake.setMode({ kind: 'garbage', body: 'html' })],
    [
      'a transcript that is not text',
      'invalid-response',
      undefined,
      () => fake.setMode({ kind: 'garbage', body: 'transcript-not-string' }),
    ],
    ['no answer', 'timeout', undefined, () => fake.setMode({ kind: 'stall' })],
  ])('turns %s into a %s failure', async (_case, kind, status, arrange) => {
    arrange();
    expect(await failureOf(() => transcribe(stt(provider, envFor(kind))))).toMatchObject({ kind, status });
  });

  it('is refused a wrong key as the API refuses it', async () => {
    expect(await failureOf(() => transcribe(stt(provider, auth.env)))).toMatchObject({ kind: 'http-status', status: auth.refusal });
  });

  it("rejects with the caller's AbortError when aborted, and the request is closed", async () => {
    fake.setMode({ kind: 'stall' });
    const controller = new AbortController();
    const aborted = once(fake.events, 'aborted');
    const received = once(fake.events, 'request');
    const heard = transcribe(stt(provider), 'hi-IN', controller.signal);
    await received;
    controller.abort();
    await expect(heard).rejects.toMatchObject({ name: 'AbortError' });
    expect(await aborted).toEqual([path]);
  });
});

describe('what is logged of a failure', () => {
  it('is its kind and status, never the spoken text, the transcript or the provider body', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const logger = createLogger({ logLevel: 'debug' }, sink);
    Logger.overrideLogger(new PinoLoggerService(logger));
    try {
      const nest = new Logger('VoiceTest');
      fake.setTranscript(`${PROVIDER_SECRET} transcript`);
      const modes: Parameters<FakeSpeechProviders['setMode']>[0][] = [
        { kind: 'status', status: 500 },
        { kind: 'garbage', body: 'html' },
        { kind: 'garbage', body: 'not-json' },
      ];
      for (const mode of modes) {
        fake.setMode(mode);
        for (const attempt of [
          () => speak(tts('openai')),
          () => speak(tts('sarvam')),
          () => transcribe(stt('openai')),
          () => transcribe(stt('sarvam')),
        ]) {
          logProviderFailure(nest, await failureOf(attempt), 'The speech provider failed');
        }
      }
      expect(lines).toHaveLength(modes.length * 4);
      const logged = lines.join('\n');
      expect(logged).toContain('"failure":"http-status"');
      expect(logged).toContain('"failure":"invalid-response"');
      expect(logged).not.toContain(PROVIDER_SECRET);
      expect(logged).not.toContain(SPOKEN);
    } finally {
      Logger.overrideLogger(false);
    }
  });
});
