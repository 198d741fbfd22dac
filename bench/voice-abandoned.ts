/**
 * Abandoned voice sockets (`npm run bench:voice-abandoned`): 8,000 sockets opened on one conversation and left
 * without `start`, in waves of up to 3,000 at once (below HTTP_MAX_CONNECTIONS, 4,096, which counts voice
 * sockets), each closed by the service with 4408 after its start timeout (VOICE_START_TIMEOUT_MS at its default,
 * 10 s). Meanwhile an API client reads `GET /agents` every 20 ms, and one real call opens its socket (start →
 * ready) during each wave. Reported: the service's RSS idle, at its peak and once every socket was closed; its
 * open handles before and after (from /proc: file descriptors); the API's latency during the waves; the close
 * codes. Options: --total 8000 --wave 3000. Writes bench/results/<date>-voice-abandoned.json.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { percentile, round } from './stats';
import { startVoiceBenchService } from './voice-service';
import { numberOption } from './options';

const ROOT = path.resolve(__dirname, '..');
const log = (line: string) => process.stderr.write(`[bench:voice-abandoned] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const openDescriptors = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

/** A socket opened and left: resolves with its close code. */
function abandonedSocket(url: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { perMessageDeflate: false });
    socket.on('error', () => undefined);
    socket.on('close', (code) => resolve(code));
  });
}

/** A real call's socket: milliseconds from the connection to `ready`. */
async function realCall(url: string, token: string): Promise<number> {
  const began = performance.now();
  const socket = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const ready = new Promise<void>((resolve) => socket.once('message', () => resolve()));
  socket.send(JSON.stringify({ type: 'start', token, sampleRate: 16_000 }));
  await ready;
  const ms = performance.now() - began;
  socket.close(1000);
  return ms;
}

async function main(): Promise<void> {
  const total = numberOption('total', 8_000);
  const wave = numberOption('wave', 3_000);
  const bench = await startVoiceBenchService({ name: 'voice-abandoned', env: { LOG_LEVEL: 'warn' } });
  try {
    const { service, apiKey } = bench;
    const socketUrl = (conversationId: string) => `${service.baseUrl.replace('http', 'ws')}/conversations/${conversationId}/voice`;
    const target = await bench.startConversation();
    await sleep(1_000);
    const idle = { rssMiB: service.rssMiB(), descriptors: openDescriptors(service.pid) };
    log(`idle: ${JSON.stringify(idle)}; ${total} sockets in waves of ${wave}`);

    // The API's latency while the waves come and go.
    const latencies: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const began = performance.now();
        const response = await fetch(`${service.baseUrl}/agents`, { headers: { 'X-Api-Key': apiKey } });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`GET /agents: ${response.status}`);
        latencies.push(performance.now() - began);
        await sleep(20);
      }
    })();
    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, service.rssMiB())), 250);

    const codes: Record<number, number> = {};
    const readyMs: number[] = [];
    const began = performance.now();
    for (let opened = 0; opened < total; opened += wave) {
      const closes = Array.from({ length: Math.min(wave, total - opened) }, () => abandonedSocket(socketUrl(target.conversationId)));
      const call = await bench.startConversation();
      readyMs.push(await realCall(socketUrl(call.conversationId), call.token));
      for (const code of await Promise.all(closes)) codes[code] = (codes[code] ?? 0) + 1;
      log(`${opened + closes.length} closed`);
    }
    const seconds = (performance.now() - began) / 1000;
    probing = false;
    await probe;
    clearInterval(sampler);
    await sleep(2_000); // the service's handles of the last wave are closed after their sockets'
    const after = { rssMiB: service.rssMiB(), descriptors: openDescriptors(service.pid) };

    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      options: { total, wave },
      seconds: round(seconds),
      closeCodes: codes,
      rssMiB: { idle: idle.rssMiB, peak: peakRss, after: after.rssMiB },
      peakKiBPerOpenSocket: round(((peakRss - idle.rssMiB) * 1024) / wave),
      descriptors: { idle: idle.descriptors, after: after.descriptors },
      apiLatencyMs: {
        requests: latencies.length,
        p50: round(percentile(latencies, 0.5)),
        p99: round(percentile(latencies, 0.99)),
        max: round(Math.max(...latencies)),
      },
      realCallReadyMs: readyMs.map((ms) => round(ms)),
    };
    const file = path.join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-voice-abandoned.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`wrote ${path.relative(ROOT, file)}`);
  } finally {
    await bench.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
