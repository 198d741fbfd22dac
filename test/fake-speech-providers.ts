import { EventEmitter } from 'node:events';
import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import type { AppConfig } from '../src/config/config';
import { loadConfig } from '../src/config/config';
import { bytesFromPcm } from '../src/voice/audio/pcm';
import { DecodedWav, encodeWav, parseWav } from '../src/voice/audio/wav';

/**
 * OpenAI's `/audio/speech` and `/audio/transcriptions` and Sarvam's `/text-to-speech` and `/speech-to-text` on
 * one loopback server, speaking their wire formats: the methods, headers, JSON and multipart fields are checked
 * and a wrong request answered as the real API would (OpenAI 400/401/404 with `{"error": …}`, Sarvam 400/403/422).
 * Speech is a syllable-like tone whose length is proportional to the text; a transcript is whatever the test
 * sets. Every request is recorded (its fields, never its audio), and how the server answers is set per test.
 */

/** The API key both providers expect, when the fake is started with one. */
export const FAKE_SPEECH_KEY = 'sk-fake-speech';
/** Words in every error body, so a test can prove that no provider text reaches a log. */
export const PROVIDER_SECRET = 'PROVIDER-SECRET-TEXT';

const ISO_639_1 = ['hi', 'en', 'bn', 'gu', 'kn', 'ml', 'mr', 'or', 'pa', 'ta', 'te'];
const SARVAM_LANGUAGES = ['bn-IN', 'en-IN', 'gu-IN', 'hi-IN', 'kn-IN', 'ml-IN', 'mr-IN', 'od-IN', 'pa-IN', 'ta-IN', 'te-IN'];
const BULBUL: Record<string, { speakers: string[]; maxText: number; rates: number[] }> = {
  'bulbul:v2': {
    speakers: ['anushka', 'manisha', 'vidya', 'arya', 'abhilash', 'karun', 'hitesh'],
    maxText: 1_500,
    rates: [8_000, 16_000, 22_050, 24_000],
  },
  'bulbul:v3': {
    speakers: ['shubh', 'aditya', 'ritu', 'priya', 'neha', 'rahul', 'pooja', 'rohan', 'simran', 'kavya'],
    maxText: 2_500,
    rates: [8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000],
  },
};
const SAARAS_MODES = ['transcribe', 'translate', 'verbatim', 'translit', 'codemix'];

/** Speech per character of text, so that a longer text is a longer answer. */
const MS_PER_CHARACTER = 40;

/** How many samples the fake speaks for `text` at `sampleRate`. */
export function speechSamples(text: string, sampleRate: number): number {
  return Math.round(([...text].length * MS_PER_CHARACTER * sampleRate) / 1000);
}

/** Syllables of a 180 Hz voice whose loudness rises and falls four times a second, tiled to the text's length. */
export function fakeSpeech(text: string, sampleRate: number): Int16Array {
  const syllable = syllableAt(sampleRate);
  const pcm = new Int16Array(speechSamples(text, sampleRate));
  for (let at = 0; at < pcm.length; at += syllable.length) pcm.set(syllable.subarray(0, pcm.length - at), at);
  return pcm;
}

const syllables = new Map<number, Int16Array>();

/** One syllable, computed once per rate: tiling it keeps a minute of speech cheap even under coverage instrumentation. */
function syllableAt(sampleRate: number): Int16Array {
  let syllable = syllables.get(sampleRate);
  if (!syllable) {
    syllable = new Int16Array(Math.round(sampleRate / 4));
    for (let index = 0; index < syllable.length; index++) {
      const t = index / sampleRate;
      syllable[index] = Math.round(12_000 * Math.sin((Math.PI * index) / syllable.length) * Math.sin(2 * Math.PI * 180 * t));
    }
    syllables.set(sampleRate, syllable);
  }
  return syllable;
}

/** One request as the fake received it: its fields, never its audio. */
export interface SpeechProviderRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The JSON body (text-to-speech). */
  json?: Record<string, unknown>;
  /** The multipart text fields (speech-to-text). */
  fields?: Record<string, string>;
  /** The multipart file: its name, type and format (speech-to-text). */
  file?: { filename: string; type: string; sampleRate: number; channels: number; samples: number };
}

/** What the fake answers a correct request with. */
export type SpeechMode =
  | { kind: 'ok' }
  /** An HTTP error with the API's error body. */
  | { kind: 'status'; status: number }
  /** The request read, and nothing ever sent back. */
  | { kind: 'stall' }
  /** A 200 whose body is not what the API answers. */
  | { kind: 'garbage'; body: Garbage }
  /** The answer in pieces `chunkMs` apart; the second piece waits for `hold` when given (OpenAI's stream). */
  | { kind: 'slow'; chunkMs: number; hold?: Promise<void> };

export type Garbage =
  /** Text that is not JSON (every API). */
  | 'not-json'
  /** A proxy's HTML page (every API). */
  | 'html'
  /** An odd number of PCM bytes (OpenAI speech). */
  | 'odd-pcm'
  /** No audio at all: an empty PCM body, or `audios: []` (speech). */
  | 'no-audio'
  /** A base64 string that is not a WAV (Sarvam speech). */
  | 'not-wav'
  /** A WAV with its format but no data chunk (Sarvam speech). */
  | 'wav-without-data'
  /** The transcript as a number (speech-to-text). */
  | 'transcript-not-string';

/**
 * A provider's own time, added before every following answer of its kind begins (0 or absent: at once): a
 * transcription's (its JSON), a voice's to its first audio (its headers and first bytes). Both APIs of each kind.
 */
export interface SpeechDelays {
  transcriptionMs?: number;
  speechMs?: number;
  /** A transcription answers only once this has resolved (then `transcriptionMs` later). */
  transcriptionAfter?: Promise<void>;
}

export interface FakeSpeechProviders {
  /** OpenAI-compatible base URL (TTS_BASE_URL, STT_BASE_URL), ending in /v1. */
  openAiUrl: string;
  /** Sarvam's base URL (SARVAM_BASE_URL). */
  sarvamUrl: string;
  requests: SpeechProviderRequest[];
  /** How long each delay of `setDelays` actually took (a busy machine's timers fire late), in order. */
  delaysTaken: { transcription: number[]; speech: number[] };
  /** The rate of OpenAI's PCM (TTS_SAMPLE_RATE). */
  openAiSampleRate: number;
  /** Answers every following request this way. */
  setMode(mode: SpeechMode): void;
  /** What every following transcription answers, or a function of the WAV received. */
  setTranscript(transcript: string | ((wav: DecodedWav) => string)): void;
  /** How long every following answer takes to begin, by kind (as a real provider's own time). */
  setDelays(delays: SpeechDelays): void;
  /** Sarvam's speech at this rate whatever the request asks (undefined: the rate asked). */
  answerSarvamAt(rate: number | undefined): void;
  /** Emits 'request' when one is recorded, and 'aborted' (with the path) when a client closes a connection before its answer ended. */
  events: EventEmitter;
  close(): Promise<void>;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

export async function startFakeSpeechProviders(options: { apiKey?: string; openAiSampleRate?: number } = {}): Promise<FakeSpeechProviders> {
  const requests: SpeechProviderRequest[] = [];
  const delaysTaken = { transcription: [] as number[], speech: [] as number[] };
  /** Sleeps `ms` and notes how long that took. */
  const delay = async (ms: number, taken: number[]) => {
    const from = performance.now();
    await sleep(ms);
    taken.push(performance.now() - from);
  };
  const events = new EventEmitter();
  const sockets = new Set<Socket>();
  const openAiSampleRate = options.openAiSampleRate ?? 24_000;
  let mode: SpeechMode = { kind: 'ok' };
  let sarvamRate: number | undefined;
  let delays: SpeechDelays = {};
  let transcriptOf: (wav: DecodedWav) => string = () => 'Hello from the fake.';

  const routes: Record<string, (request: SpeechProviderRequest, body: Buffer, response: http.ServerResponse) => Promise<void>> = {
    '/v1/audio/speech': openAiSpeech,
    '/v1/audio/transcriptions': openAiTranscription,
    '/text-to-speech': sarvamSpeech,
    '/speech-to-text': sarvamTranscription,
  };
  const isSarvam = (path: string) => !path.startsWith('/v1/');
  const record = (request: SpeechProviderRequest) => {
    requests.push(request);
    events.emit('request', request);
  };

  const server = http.createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const path = new URL(incoming.url ?? '/', 'http://fake').pathname;
      const request: SpeechProviderRequest = { method: incoming.method ?? '', path, headers: incoming.headers };
      response.on('close', () => {
        if (!response.writableFinished) events.emit('aborted', path);
      });
      const route = routes[path];
      const handle = async () => {
        if (!route) throw new Refusal(404, 'not_found');
        if (request.method !== 'POST') throw new Refusal(isSarvam(path) ? 405 : 404, 'method_not_allowed');
        authorize(request);
        await route(request, Buffer.concat(chunks), response);
      };
      handle().catch((error: unknown) => {
        refuse(response, isSarvam(path), error instanceof Refusal ? error : new Refusal(500, 'internal_server_error'));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function authorize(request: SpeechProviderRequest): void {
    if (!options.apiKey) return;
    if (isSarvam(request.path)) {
      if (request.headers['api-subscription-key'] !== options.apiKey) throw new Refusal(403, 'invalid_api_key_error');
    } else if (request.headers.authorization !== `Bearer ${options.apiKey}`) {
      throw new Refusal(401, 'invalid_api_key');
    }
  }

  async function openAiSpeech(request: SpeechProviderRequest, body: Buffer, response: http.ServerResponse): Promise<void> {
    const json = (request.json = readJson(request, body));
    record(request);
    const { model, input, voice, response_format: format } = json;
    // A compatible server's voices are its own (speaches, Kokoro), so any name is taken.
    if (typeof model !== 'string' || typeof voice !== 'string' || !voice || typeof input !== 'string')
      throw new Refusal(400, 'invalid_value');
    if ([...input].length === 0 || [...input].length > 4_096) throw new Refusal(400, 'string_above_max_length');
    if (format !== 'pcm') throw new Refusal(400, 'unsupported_format'); // the real API has others; the service asks for pcm only
    const pcm = bytesFromPcm(fakeSpeech(input, openAiSampleRate));
    if (await answeredOtherwise(response, { 'Content-Type': 'audio/pcm' }, { 'odd-pcm': pcm.subarray(1), 'no-audio': Buffer.alloc(0) }))
      return;
    // Odd-sized pieces, as a network delivers them: a sample's two bytes are split between chunks.
    const pieces = [pcm.subarray(0, 4_801), pcm.subarray(4_801, 9_603), pcm.subarray(9_603)].filter((piece) => piece.length > 0);
    if (delays.speechMs) await delay(delays.speechMs, delaysTaken.speech);
    response.writeHead(200, { 'Content-Type': 'audio/pcm', 'Transfer-Encoding': 'chunked' });
    for (const [index, piece] of pieces.entries()) {
      if (index > 0 && mode.kind === 'slow') {
        if (index === 1 && mode.hold) await mode.hold;
        await sleep(mode.chunkMs);
      }
      if (response.destroyed) return;
      response.write(piece);
    }
    response.end();
  }

  async function sarvamSpeech(request: SpeechProviderRequest, body: Buffer, response: http.ServerResponse): Promise<void> {
    const json = (request.json = readJson(request, body));
    record(request);
    const { text, target_language_code: language, speaker, model, speech_sample_rate: rate } = json;
    const bulbul = BULBUL[typeof model === 'string' ? model : 'bulbul:v2'];
    if (!bulbul || typeof text !== 'string' || typeof language !== 'string') throw new Refusal(422, 'invalid_request_error');
    if (!SARVAM_LANGUAGES.includes(language)) throw new Refusal(400, 'invalid_request_error');
    if (typeof speaker !== 'string' || !bulbul.speakers.includes(speaker)) throw new Refusal(400, 'invalid_request_error');
    if ([...text].length === 0 || [...text].length > bulbul.maxText) throw new Refusal(400, 'invalid_request_error');
    const sampleRate = rate === undefined ? 22_050 : rate;
    if (typeof sampleRate !== 'number' || !bulbul.rates.includes(sampleRate)) throw new Refusal(400, 'invalid_request_error');
    // Sarvam has answered at its model's default rate whatever was asked (Pipecat sent `sample_rate`, ignored).
    const answerRate = sarvamRate ?? sampleRate;
    const wav = encodeWav(fakeSpeech(text, answerRate), answerRate);
    const answer = (audios: string[]) => Buffer.from(JSON.stringify({ request_id: 'req_fake', audios }));
    const wavWithoutData = wav.subarray(0, 36);
    wavWithoutData.writeUInt32LE(28, 4);
    const garbage = {
      'no-audio': answer([]),
      'not-wav': answer([Buffer.from(`${PROVIDER_SECRET} is not a WAV`).toString('base64')]),
      'wav-without-data': answer([wavWithoutData.toString('base64')]),
    };
    if (await answeredOtherwise(response, { 'Content-Type': 'application/json' }, garbage)) return;
    if (mode.kind === 'slow') await sleep(mode.chunkMs);
    if (delays.speechMs) await delay(delays.speechMs, delaysTaken.speech);
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(answer([wav.toString('base64')]));
  }

  async function openAiTranscription(request: SpeechProviderRequest, body: Buffer, response: http.ServerResponse): Promise<void> {
    const wav = readMultipart(request, body, 'invalid_request_error');
    const { model, language, response_format: format = 'json' } = request.fields!;
    if (!model) throw new Refusal(400, 'invalid_request_error');
    if (language !== undefined && !ISO_639_1.includes(language)) throw new Refusal(400, 'unsupported_language');
    if (format !== 'json') throw new Refusal(400, 'unsupported_format'); // the service asks for json only
    await transcribed(response, wav, 'text');
  }

  async function sarvamTranscription(request: SpeechProviderRequest, body: Buffer, response: http.ServerResponse): Promise<void> {
    const wav = readMultipart(request, body, 'invalid_request_error');
    const { model = 'saarika:v2.5', mode: saarasMode, language_code: language } = request.fields!;
    if (!['saaras:v3', 'saarika:v2.5'].includes(model)) throw new Refusal(400, 'invalid_request_error');
    if (saarasMode !== undefined && !SAARAS_MODES.includes(saarasMode)) throw new Refusal(400, 'invalid_request_error');
    if (language !== undefined && language !== 'unknown' && !SARVAM_LANGUAGES.includes(language)) {
      throw new Refusal(400, 'invalid_request_error');
    }
    await transcribed(response, wav, 'transcript', { request_id: 'req_fake', language_code: language ?? 'unknown' });
  }

  async function transcribed(response: http.ServerResponse, wav: DecodedWav, field: string, extra: object = {}): Promise<void> {
    const garbage = { 'transcript-not-string': Buffer.from(JSON.stringify({ ...extra, [field]: 42 })) };
    if (await answeredOtherwise(response, { 'Content-Type': 'application/json' }, garbage)) return;
    if (mode.kind === 'slow') await sleep(mode.chunkMs);
    await delays.transcriptionAfter;
    if (delays.transcriptionMs) await delay(delays.transcriptionMs, delaysTaken.transcription);
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ...extra, [field]: transcriptOf(wav) }));
  }

  /** Answers by the mode when it is not a normal answer: true when it did (or never will). */
  async function answeredOtherwise(
    response: http.ServerResponse,
    headers: http.OutgoingHttpHeaders,
    garbage: Partial<Record<Garbage, Buffer>>,
  ): Promise<boolean> {
    switch (mode.kind) {
      case 'status':
        throw new Refusal(mode.status, 'server_error');
      case 'stall':
        return true; // the client's deadline must end it
      case 'garbage': {
        if (mode.body === 'html') {
          response.writeHead(200, { 'Content-Type': 'text/html' }).end(`<html><body>${PROVIDER_SECRET}</body></html>`);
        } else if (mode.body === 'not-json') {
          response.writeHead(200, { 'Content-Type': 'application/json' }).end(`{"${PROVIDER_SECRET}": `);
        } else {
          const body = garbage[mode.body];
          if (!body) throw new Error(`The fake has no '${mode.body}' garbage for this API`);
          response.writeHead(200, headers).end(body);
        }
        return true;
      }
      default:
        return false;
    }
  }

  function readMultipart(request: SpeechProviderRequest, body: Buffer, code: string): DecodedWav {
    const boundary = /^multipart\/form-data;\s*boundary=("?)([^";]+)\1/i.exec(request.headers['content-type'] ?? '')?.[2];
    if (!boundary) {
      record(request);
      throw new Refusal(400, code);
    }
    const parts = parseMultipart(body, boundary);
    request.fields = Object.fromEntries(
      parts.filter((part) => part.filename === undefined).map((part) => [part.name, part.data.toString()]),
    );
    record(request);
    const file = parts.find((part) => part.name === 'file' && part.filename !== undefined);
    if (!file) throw new Refusal(400, code);
    let wav: DecodedWav;
    try {
      wav = parseWav(file.data);
    } catch {
      throw new Refusal(400, 'invalid_file_format');
    }
    request.file = {
      filename: file.filename!,
      type: file.type ?? '',
      sampleRate: wav.sampleRate,
      channels: wav.channels,
      samples: wav.samples.length,
    };
    return wav;
  }

  function refuse(response: http.ServerResponse, sarvam: boolean, refusal: Refusal): void {
    if (response.headersSent) return void response.destroy();
    const message = `${PROVIDER_SECRET}: the fake refused this (${refusal.code})`;
    const error = sarvam ? { message, code: refusal.code } : { message, type: 'invalid_request_error', param: null, code: refusal.code };
    response.writeHead(refusal.status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error }));
  }

  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    openAiUrl: `http://127.0.0.1:${port}/v1`,
    sarvamUrl: `http://127.0.0.1:${port}`,
    requests,
    delaysTaken,
    openAiSampleRate,
    events,
    setMode: (next) => (mode = next),
    answerSarvamAt: (rate) => (sarvamRate = rate),
    setDelays: (next) => (delays = next),
    setTranscript: (transcript) => (transcriptOf = typeof transcript === 'string' ? () => transcript : transcript),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function readJson(request: SpeechProviderRequest, body: Buffer): Record<string, unknown> {
  if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) throw new Refusal(400, 'invalid_request_error');
  try {
    const json: unknown = JSON.parse(body.toString('utf8'));
    if (json && typeof json === 'object' && !Array.isArray(json)) return json as Record<string, unknown>;
  } catch {
    // answered below, as a malformed body
  }
  throw new Refusal(400, 'invalid_request_error');
}

interface Part {
  name: string;
  filename?: string;
  type?: string;
  data: Buffer;
}

/** The parts of a multipart/form-data body (RFC 7578); a malformed one is a 400. */
function parseMultipart(body: Buffer, boundary: string): Part[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let start = body.indexOf(delimiter);
  if (start !== 0) throw new Refusal(400, 'invalid_request_error');
  for (;;) {
    start += delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') return parts;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), start);
    if (next < 0) throw new Refusal(400, 'invalid_request_error');
    const part = body.subarray(start + 2, next);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd < 0) throw new Refusal(400, 'invalid_request_error');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const name = /;\s*name="([^"]*)"/i.exec(headers)?.[1];
    if (name === undefined) throw new Refusal(400, 'invalid_request_error');
    parts.push({
      name,
      filename: /filename="([^"]*)"/i.exec(headers)?.[1],
      type: /^content-type:\s*(.+)$/im.exec(headers)?.[1].trim(),
      data: part.subarray(headerEnd + 4),
    });
    start = next + 2;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A service's voice settings that listen and speak through these stand-ins (OpenAI's wire format), with patient
 * deadlines: a busy machine must not turn a stand-in's answer into a timeout.
 */
export function standInVoice(providers: FakeSpeechProviders): AppConfig['voice'] {
  return {
    ...loadConfig({}).voice,
    sttProvider: 'openai',
    openAiStt: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'whisper-1' },
    ttsProvider: 'openai',
    openAiTts: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'tts-1', sampleRate: providers.openAiSampleRate },
    sttTimeoutMs: 30_000,
    ttsTimeoutMs: 30_000,
  };
}

/** Resolves once the voice stand-in (OpenAI's `/v1/audio/speech`) is asked to say exactly `text`. */
export function synthesised(providers: FakeSpeechProviders, text: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const seen = (request: SpeechProviderRequest) => {
      if (request.path !== '/v1/audio/speech' || request.json?.input !== text) return;
      providers.events.off('request', seen);
      resolve();
    };
    providers.events.on('request', seen);
  });
}
