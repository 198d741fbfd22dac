/**
 * The built-in voice's benchmark (`node -r ./scripts/register.js bench/voice-tts.ts`): espeak-ng in its worker
 * threads, as BuiltinTextToSpeech runs it in the service.
 *
 * - Real-time factor per reply language: the process's CPU time (every thread) over the seconds of audio made,
 *   female and male voices alternating, after a warm-up in that language.
 * - First chunk: from the call to the first chunk, cold (a new instance: thread start and espeak's load) and warm.
 * - A worker thread's resident memory: the growth of the process's RSS as a first, then a second thread speaks
 *   every language.
 * - 20 syntheses at once, with 1 and 2 threads: the main thread's longest event-loop stall
 *   (monitorEventLoopDelay) and its own CPU time against the whole process's.
 *
 * Prints the JSON summary on stdout, progress on stderr, and writes bench/results/<date>-voice-tts.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { REPLY_LANGUAGES, ReplyLanguage } from '../src/agents/voices';
import { BuiltinTextToSpeech } from '../src/voice/tts/builtin-tts';
import { SpeechRequest } from '../src/voice/tts/text-to-speech';
import { median, percentile, round } from './stats';
import { cpuMs, mainThreadCpuMs } from './cpu-time';

const ESPEAK_PATH = require.resolve('@echogarden/espeak-ng-emscripten');
const MiB = 1024 * 1024;
const ROUNDS = 5;

/** A customer-service sentence in each reply language, in its own script. */
const SENTENCES: Record<ReplyLanguage, string> = {
  'hi-IN': 'नमस्ते, आपका ऑर्डर शुक्रवार तक बेंगलुरु पहुँच जाएगा। क्या मैं आपकी और कोई मदद कर सकती हूँ?',
  'en-IN': 'Namaste, your order will reach Bengaluru by Friday. Can I help you with anything else?',
  'bn-IN': 'নমস্কার, আপনার অর্ডার শুক্রবারের মধ্যে কলকাতায় পৌঁছে যাবে। আমি কি আর কোনোভাবে সাহায্য করতে পারি?',
  'gu-IN': 'નમસ્તે, તમારો ઓર્ડર શુક્રવાર સુધીમાં અમદાવાદ પહોંચી જશે. શું હું બીજી કોઈ મદદ કરી શકું?',
  'kn-IN': 'ನಮಸ್ಕಾರ, ನಿಮ್ಮ ಆರ್ಡರ್ ಶುಕ್ರವಾರದೊಳಗೆ ಬೆಂಗಳೂರು ತಲುಪುತ್ತದೆ. ನಾನು ಇನ್ನೇನಾದರೂ ಸಹಾಯ ಮಾಡಬಹುದೇ?',
  'ml-IN': 'നമസ്കാരം, നിങ്ങളുടെ ഓർഡർ വെള്ളിയാഴ്ചയ്ക്കുള്ളിൽ കൊച്ചിയിൽ എത്തും. മറ്റെന്തെങ്കിലും സഹായം വേണോ?',
  'mr-IN': 'नमस्कार, तुमची ऑर्डर शुक्रवारपर्यंत पुण्यात पोहोचेल. मी तुम्हाला आणखी काही मदत करू शकते का?',
  'od-IN': 'ନମସ୍କାର, ଆପଣଙ୍କ ଅର୍ଡର ଶୁକ୍ରବାର ସୁଦ୍ଧା ଭୁବନେଶ୍ୱରରେ ପହଞ୍ଚିବ। ମୁଁ ଆଉ କିଛି ସାହାଯ୍ୟ କରିପାରିବି କି?',
  'pa-IN': 'ਸਤ ਸ੍ਰੀ ਅਕਾਲ, ਤੁਹਾਡਾ ਆਰਡਰ ਸ਼ੁੱਕਰਵਾਰ ਤੱਕ ਅੰਮ੍ਰਿਤਸਰ ਪਹੁੰਚ ਜਾਵੇਗਾ। ਕੀ ਮੈਂ ਹੋਰ ਕੋਈ ਮਦਦ ਕਰ ਸਕਦੀ ਹਾਂ?',
  'ta-IN': 'வணக்கம், உங்கள் ஆர்டர் வெள்ளிக்கிழமைக்குள் சென்னையை அடையும். வேறு ஏதாவது உதவி வேண்டுமா?',
  'te-IN': 'నమస్కారం, మీ ఆర్డర్ శుక్రవారానికి హైదరాబాద్ చేరుకుంటుంది. నేను ఇంకేమైనా సహాయం చేయగలనా?',
  'en-US': 'Hello, your order will reach Seattle by Friday. Can I help you with anything else?',
};

const log = (line: string) => process.stderr.write(`[bench:voice-tts] ${line}\n`);

function speech(language: ReplyLanguage, voice = 'anushka', text = SENTENCES[language]): SpeechRequest {
  return { text, language, voice, signal: new AbortController().signal };
}

/** Speaks to the end; the seconds of audio, the chunks, and the milliseconds to the first chunk. */
async function speak(tts: BuiltinTextToSpeech, request: SpeechRequest) {
  const start = performance.now();
  let firstChunkMs = NaN;
  let samples = 0;
  let chunks = 0;
  for await (const chunk of tts.synthesize(request)) {
    if (chunks++ === 0) firstChunkMs = performance.now() - start;
    samples += chunk.length;
  }
  return { seconds: samples / tts.sampleRate, chunks, firstChunkMs };
}

function instance(workers: number): BuiltinTextToSpeech {
  return new BuiltinTextToSpeech({ espeakPath: ESPEAK_PATH, workers, timeoutMs: 60_000 });
}

/**
 * CPU per second of audio in each language: first on a new thread, one sentence per language (V8 still optimising
 * espeak's JavaScript, each language's dictionary loading), then steady, once the thread has spoken them all.
 */
async function realTimeFactors() {
  const tts = instance(1);
  const firstSentence: Record<string, number> = {};
  for (const language of REPLY_LANGUAGES) {
    const cpu = process.cpuUsage();
    const { seconds } = await speak(tts, speech(language));
    firstSentence[language] = round(cpuMs(cpu) / 1000 / seconds, 4);
  }
  const steady: Record<string, { rtf: number; audioSeconds: number }> = {};
  for (const language of REPLY_LANGUAGES) {
    let audioSeconds = 0;
    const cpu = process.cpuUsage();
    for (let index = 0; index < ROUNDS; index++)
      audioSeconds += (await speak(tts, speech(language, index % 2 ? 'shubh' : 'anushka'))).seconds;
    steady[language] = { rtf: round(cpuMs(cpu) / 1000 / audioSeconds, 4), audioSeconds: round(audioSeconds, 1) };
    log(`${language}: RTF ${steady[language].rtf} steady, ${firstSentence[language]} on a new thread`);
  }
  await tts.close();
  return { steady, firstSentenceOnNewThread: firstSentence };
}

async function firstChunkLatency() {
  const cold: number[] = [];
  for (let round = 0; round < 3; round++) {
    const tts = instance(1);
    cold.push((await speak(tts, speech('en-US'))).firstChunkMs);
    await tts.close();
  }
  const tts = instance(1);
  await speak(tts, speech('hi-IN'));
  const warm: number[] = [];
  for (let round = 0; round < 30; round++) warm.push((await speak(tts, speech(round % 2 ? 'hi-IN' : 'en-US'))).firstChunkMs);
  await tts.close();
  log(`first chunk: cold ${cold.map((ms) => round(ms, 0)).join(', ')} ms, warm median ${round(median(warm), 1)} ms`);
  return {
    coldMs: cold.map((ms) => round(ms, 1)),
    warm: { medianMs: round(median(warm), 2), p95Ms: round(percentile(warm, 0.95), 2), maxMs: round(Math.max(...warm), 2) },
  };
}

/** RSS growth once a thread has spoken every language (each loads its dictionary), then once a second has too. */
async function workerMemory() {
  const before = process.memoryUsage().rss;
  const tts = instance(2);
  // One at a time, the first thread is never busy and serves them all.
  for (const language of REPLY_LANGUAGES) await speak(tts, speech(language));
  const oneThread = process.memoryUsage().rss;
  // Two at a time: the second request of each pair starts and then goes to the second thread.
  for (const language of REPLY_LANGUAGES) await Promise.all([speak(tts, speech(language)), speak(tts, speech(language, 'shubh'))]);
  const twoThreads = process.memoryUsage().rss;
  await tts.close();
  const result = { firstThreadMiB: round((oneThread - before) / MiB, 1), secondThreadMiB: round((twoThreads - oneThread) / MiB, 1) };
  log(`RSS per thread: ${result.firstThreadMiB} MiB, then ${result.secondThreadMiB} MiB`);
  return result;
}

async function concurrent(workers: number) {
  const tts = instance(workers);
  // Warm every thread first: the figures are of speaking, not of loading espeak.
  await Promise.all(Array.from({ length: workers }, (_, index) => speak(tts, speech(index % 2 ? 'ta-IN' : 'hi-IN'))));
  const requests = Array.from({ length: 20 }, (_, index) =>
    speech(REPLY_LANGUAGES[index % REPLY_LANGUAGES.length], index % 3 ? 'arya' : 'karun'),
  );
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const [processBefore, mainBefore] = [process.cpuUsage(), mainThreadCpuMs()];
  const start = performance.now();
  delay.enable();
  const results = await Promise.all(requests.map((request) => speak(tts, request)));
  delay.disable();
  const wallMs = performance.now() - start;
  const [processMs, mainMs] = [cpuMs(processBefore), mainThreadCpuMs() - mainBefore];
  await tts.close();
  const audioSeconds = results.reduce((total, result) => total + result.seconds, 0);
  const chunks = results.reduce((total, result) => total + result.chunks, 0);
  const firstChunks = results.map((result) => result.firstChunkMs);
  const summary = {
    workers,
    syntheses: requests.length,
    audioSeconds: round(audioSeconds, 1),
    chunks,
    wallMs: round(wallMs, 0),
    firstChunkMs: { median: round(median(firstChunks), 1), max: round(Math.max(...firstChunks), 1) },
    processCpuMs: round(processMs, 0),
    mainThread: {
      cpuMs: round(mainMs, 0),
      cpuMicrosecondsPerChunk: round((mainMs * 1000) / chunks, 1),
      longestStallMs: round(delay.max / 1e6, 2),
      stallP99Ms: round(delay.percentile(99) / 1e6, 2),
    },
  };
  const { longestStallMs } = summary.mainThread;
  log(`20 at once on ${workers} thread(s): longest stall ${longestStallMs} ms, main thread CPU ${mainMs} of ${round(processMs, 0)} ms`);
  return summary;
}

async function main(): Promise<void> {
  const date = new Date().toISOString().slice(0, 10);
  const summary = {
    date,
    node: process.version,
    // Other work on the machine inflates the timings: its load when the run started.
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAverage: os.loadavg().map((load) => round(load, 2)) },
    package: '@echogarden/espeak-ng-emscripten',
    sampleRate: 22_050,
    // First, while no thread has run: memory freed by earlier threads would be reused and hide the next one's.
    workerRss: await workerMemory(),
    realTimeFactor: await realTimeFactors(),
    firstChunk: await firstChunkLatency(),
    concurrent: [await concurrent(1), await concurrent(2)],
  };
  const json = JSON.stringify(summary, null, 2);
  const file = path.resolve(__dirname, 'results', `${date}-voice-tts.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${json}\n`);
  process.stdout.write(`${json}\n`);
  log(`written to ${path.relative(process.cwd(), file)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
