/**
 * Conversations benchmark (`npm run bench:conversations`): the service's own time per message and its memory
 * with many replies streaming at once, against a local OpenAI-compatible provider that answers at once.
 *
 * - The service runs as its own process (compiled by tsc, as `npm start` runs it) on a throwaway embedded
 *   PostgreSQL, with LLM_BASE_URL pointing at a Chat Completions server in this process (the real wire format:
 *   `data: {chat.completion.chunk}` events, then `data: [DONE]`).
 * - Every message is sent as the widget sends it (`Accept: text/event-stream`) and its stream read to `done`.
 *   For each message: the client's total time, the provider's own span (request received → response ended),
 *   the service's own time = total − provider span, and the gap between the provider writing its first token
 *   and the client receiving the first `delta` event. Both clocks are this process's.
 * - N conversations at once (50), opened before the clock starts; each visitor arrives after one pause, then
 *   sends a message, reads the whole reply and pauses again (uniform 0–2 × the think time) before the next, at
 *   three paces: think time 1 s (each visitor sending about a message a second, faster than anyone types: about
 *   50 messages/s in all), 250 ms (about 180/s), and 0 (saturation: the throughput; every message then waits
 *   behind the others, so its time there is queueing).
 * - Streams: 1,000 conversations whose replies stream at once (the provider sends 20 pieces 100 ms apart):
 *   errors, and the service's RSS growth (peak − before, sampled every 50 ms).
 * - Tools: the same paces (but saturation) with an agent that has a webhook tool, called once per message: the
 *   provider's first answer calls it, a tool endpoint in this process answers in `--tool-ms` (50 ms), and the second
 *   answer is the reply. Own time is then the total minus both provider spans and the tool's span (request received →
 *   answer written): what the service adds for a message whose reply calls a tool, beside the same paces without.
 * - Each phase ends its conversations as visitors leaving would (each becomes a call, analysed in the background
 *   by a request the provider answers at once, as the API answers one that does not stream), and the next phase
 *   starts once the job queue has nothing due: each phase measures its own load, not the previous one's
 *   aftermath (the 1,000 streamed conversations' analyses ran through the next phase before).
 *
 * Prints a Markdown summary on stdout, progress on stderr, and writes bench/results/conversations-<date>.json.
 * Options: --conversations 50 --seconds 30 --think-ms 1000,250,0 --streams 1000 --rounds 3 --tool-ms 50 (0: no tool
 * phases); --profile runs the service with
 * --cpu-prof (the profile lands in the system's temporary directory, named on stderr).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { buildService, RunningServer, startService } from './servers';
import { percentile, round } from './stats';

const ROOT = path.resolve(__dirname, '..');

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}

const log = (line: string) => process.stderr.write(`[bench:conversations] ${line}\n`);
const now = () => performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const loadAverage = () => os.loadavg().map((value) => round(value));

// ---- The provider: Chat Completions, streamed, in this process ----

/** The provider's work for one message: its first request received, the reply's first token, the last answer ended. */
interface ProviderSpan {
  receivedAt: number;
  firstTokenAt: number;
  endedAt: number;
  /** Time spent answering, added up over the message's requests (two when the reply calls a tool). */
  busyMs: number;
}

/** A tool call as the tool endpoint saw it. */
interface ToolSpan {
  receivedAt: number;
  endedAt: number;
}

interface StreamPlan {
  pieces: string[];
  /** Between pieces; 0: all written at once. */
  delayMs: number;
}

function chunk(delta: object, finishReason: string | null): string {
  const body = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_795_000_000,
    model: 'bench-model',
    system_fingerprint: 'fp_bench',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

const ANALYSIS = JSON.stringify({ sentiment: 'neutral', status: 'new', summary: 'The visitor asked about deliveries.' });

function completion(content: string): string {
  return JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_795_000_000,
    model: 'bench-model',
    system_fingerprint: 'fp_bench',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 200, completion_tokens: 20, total_tokens: 220 },
  });
}

/** The visitor's message a request answers (the key of its spans): the last user message, in both requests of a tool turn. */
const visitorMessage = (messages: { role: string; content: string | null }[]) =>
  [...messages].reverse().find((message) => message.role === 'user')!.content!;

async function startProvider() {
  const spans = new Map<string, ProviderSpan>();
  /** A span of the message's, added to what its earlier requests took. */
  const record = (key: string, span: Omit<ProviderSpan, 'busyMs'>) => {
    const earlier = spans.get(key);
    const busyMs = span.endedAt - span.receivedAt + (earlier?.busyMs ?? 0);
    spans.set(key, { ...span, receivedAt: earlier?.receivedAt ?? span.receivedAt, busyMs });
  };
  let plan: StreamPlan = { pieces: ['Yes, ', 'we deliver ', 'every day ', 'from 9 to 6.'], delayMs: 0 };
  const server = http.createServer((request, response) => {
    const receivedAt = now();
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    const answer = async () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        messages: { role: string; content: string | null }[];
        stream?: boolean;
        tools?: { function: { name: string } }[];
      };
      // A request that does not stream is a post-call analysis: answered at once, as the API answers it.
      if (!body.stream) return void response.writeHead(200, { 'Content-Type': 'application/json' }).end(completion(ANALYSIS));
      const key = visitorMessage(body.messages);
      if (body.tools && body.messages.at(-1)!.role !== 'tool') {
        // The first answer of a tool turn: a call of the agent's tool, its id and arguments in pieces as OpenAI sends them.
        response.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
        response.write(chunk({ role: 'assistant', content: null }, null));
        const name = body.tools[0].function.name;
        response.write(chunk({ tool_calls: [{ index: 0, id: 'call_bench', type: 'function', function: { name, arguments: '' } }] }, null));
        for (const piece of ['{"ref":', JSON.stringify(key), '}'])
          response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null));
        response.write(chunk({}, 'tool_calls'));
        response.end('data: [DONE]\n\n', () => record(key, { receivedAt, firstTokenAt: 0, endedAt: now() }));
        return;
      }
      const { pieces, delayMs } = plan;
      response.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
      response.write(chunk({ role: 'assistant', content: '' }, null));
      let firstTokenAt = 0;
      for (const [index, piece] of pieces.entries()) {
        if (delayMs && index > 0) await sleep(delayMs);
        response.write(chunk({ content: piece }, null));
        if (index === 0) firstTokenAt = now();
      }
      response.write(chunk({}, 'stop'));
      response.end('data: [DONE]\n\n', () => record(key, { receivedAt, firstTokenAt, endedAt: now() }));
    };
    request.on('end', () => {
      // A failure of the stand-in (a request it cannot read) cuts the answer, which the round counts as an error,
      // rather than ending the whole run without its clean-up.
      answer().catch((error: unknown) => {
        log(`provider stand-in: ${error instanceof Error ? error.message : String(error)}`);
        response.destroy();
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    spans,
    setPlan: (next: StreamPlan) => (plan = next),
    replyOf: () => plan.pieces.join(''),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ---- The tool: a customer's endpoint, in this process ----

/** A webhook tool's endpoint answering `{"ok":true}` after `delayMs`; each call's span kept by the message (its `ref` argument). */
async function startToolEndpoint(delayMs: number) {
  const spans = new Map<string, ToolSpan>();
  const server = http.createServer((request, response) => {
    const receivedAt = now();
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const { arguments: args } = JSON.parse(Buffer.concat(parts).toString('utf8')) as { arguments: { ref: string } };
      setTimeout(() => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end('{"ok":true}', () => spans.set(args.ref, { receivedAt, endedAt: now() }));
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tools/lookup`,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---- The client: the widget's requests ----

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function jsonRequest<T>(url: string, method: string, headers: Record<string, string>, body?: object): Promise<{ status: number; body: T }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, agent, headers: { 'Content-Type': 'application/json', ...headers } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => (text += part));
      response.on('end', () => resolve({ status: response.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    request.on('error', reject);
    request.end(body ? JSON.stringify(body) : undefined);
  });
}

interface Conversation {
  conversationId: string;
  token: string;
  messages: number;
}

interface MessageTiming {
  key: string;
  sentAt: number;
  firstDeltaAt: number;
  doneAt: number;
  doneText: string;
  status: number;
}

/** Sends a message as the widget does, reading the stream to its end (or its error). */
function streamMessage(baseUrl: string, conversation: Conversation, text: string): Promise<MessageTiming> {
  return new Promise((resolve) => {
    const timing: MessageTiming = { key: text, sentAt: now(), firstDeltaAt: 0, doneAt: 0, doneText: '', status: 0 };
    const fail = () => resolve({ ...timing, doneAt: now() });
    const request = http.request(`${baseUrl}/conversations/${conversation.conversationId}/messages`, {
      method: 'POST',
      agent,
      headers: { Authorization: `Bearer ${conversation.token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    });
    request.on('error', fail);
    request.on('response', (response) => {
      timing.status = response.statusCode!;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => {
        if (!timing.firstDeltaAt && part.includes('event: delta')) timing.firstDeltaAt = now();
        body += part;
      });
      response.on('end', () => {
        timing.doneAt = now();
        const done = /event: done\ndata: (.*)\n\n$/.exec(body);
        timing.doneText = done ? (JSON.parse(done[1]) as { text: string }).text : '';
        resolve(timing);
      });
      response.on('error', fail);
    });
    request.end(JSON.stringify({ text }));
  });
}

// ---- Phases ----

interface Context {
  service: RunningServer;
  baseUrl: string;
  apiKey: string;
  agentId: number;
  provider: Awaited<ReturnType<typeof startProvider>>;
  /** The tool phases: the agent whose replies call its webhook tool, and the tool's endpoint. */
  tool?: { agentId: number; endpoint: Awaited<ReturnType<typeof startToolEndpoint>> };
  /** The service's database, to see its job queue. */
  jobs: Client;
}

/**
 * Waits until the job queue has nothing due (the post-call analyses of the conversations that the last phase
 * ended), so that a phase measures its own load and not the previous phase's aftermath.
 */
async function settle(context: Context): Promise<void> {
  const deadline = now() + 120_000;
  for (;;) {
    const { rows } = await context.jobs.query<{ due: number }>(
      "SELECT count(*)::int AS due FROM pgboss.job WHERE state IN ('created', 'retry', 'active') AND start_after <= now()",
    );
    if (rows[0].due === 0) return;
    if (now() > deadline) throw new Error(`${rows[0].due} jobs still due after 120 s`);
    await sleep(200);
  }
}

/** The visitor leaves: the conversation ends (and becomes a call, analysed in the background). */
async function endConversation(context: Context, conversation: Conversation): Promise<void> {
  await jsonRequest(`${context.baseUrl}/conversations/${conversation.conversationId}/end`, 'POST', {
    Authorization: `Bearer ${conversation.token}`,
  });
}

async function endAll(context: Context, conversations: Conversation[]): Promise<void> {
  await Promise.all(conversations.map((conversation) => endConversation(context, conversation)));
}

let messageSerial = 0;

async function startConversation(context: Context, agentId = context.agentId): Promise<Conversation> {
  const { status, body } = await jsonRequest<{ conversationId: string; token: string }>(
    `${context.baseUrl}/agents/${agentId}/conversations`,
    'POST',
    { 'X-Api-Key': context.apiKey },
    {},
  );
  if (status !== 201) throw new Error(`starting a conversation answered ${status}`);
  return { ...body, messages: 0 };
}

interface PhaseFigures {
  messages: number;
  errors: number;
  errorKinds: Record<string, number>;
  seconds: number;
  messagesPerSecond: number;
  /** The service process's CPU time (user + system) over the phase, per message: what contention does not change. */
  serviceCpuMsPerMessage: number;
  ownMs: { p50: number; p90: number; p99: number; max: number };
  totalMs: { p50: number; p99: number };
  providerMs: { p50: number; p99: number };
  firstByteGapMs: { p50: number; p90: number; p99: number; max: number };
  /** Tool phases: the tool's span per message (its answer's delay, and the connection's time on this side). */
  toolMs?: { p50: number; p99: number };
  /** The 1 % slowest messages: when each was sent (seconds into the phase), its own time and first-byte gap. */
  slowest: { atS: number; ownMs: number; gapMs: number }[];
  loadAverageBefore: number[];
  loadAverageAfter: number[];
}

/**
 * `conversations` visitors at once, for `seconds`, each pausing (uniform 0 to 2 × thinkMs), then sending a
 * message and reading the reply, again and again. A conversation nearing the 100-message limit is ended and a
 * new one started. With `withTool`, the conversations are the tool agent's: each reply calls its tool once.
 */
async function talk(context: Context, conversations: number, seconds: number, thinkMs: number, withTool = false): Promise<PhaseFigures> {
  const agentId = withTool ? context.tool!.agentId : context.agentId;
  const toolSpans = withTool ? context.tool!.endpoint.spans : undefined;
  await settle(context);
  const loadAverageBefore = loadAverage();
  const cpuBefore = context.service.cpuSeconds();
  const timings: MessageTiming[] = [];
  const errorKinds: Record<string, number> = {};
  const expected = context.provider.replyOf();
  const opened = await Promise.all(Array.from({ length: conversations }, () => startConversation(context, agentId)));
  const started = now();
  const deadline = started + seconds * 1000;
  const current = [...opened];
  await Promise.all(
    opened.map(async (first, visitor) => {
      let conversation = first;
      // Visitors arrive spread over one pause, as they would: with none, all of them send their first message in
      // the same millisecond, a burst of `conversations` messages that the saturation pace measures on its own.
      if (thinkMs) await sleep(Math.random() * 2 * thinkMs);
      while (now() < deadline) {
        if (conversation.messages >= 95) {
          await endConversation(context, conversation);
          conversation = await startConversation(context, agentId);
          current[visitor] = conversation;
        }
        const timing = await streamMessage(context.baseUrl, conversation, `Bench message ${++messageSerial}`);
        conversation.messages++;
        const failure =
          timing.status !== 200
            ? `status ${timing.status}`
            : timing.doneText !== expected
              ? 'another reply'
              : !context.provider.spans.has(timing.key)
                ? 'no provider request'
                : toolSpans && !toolSpans.has(timing.key)
                  ? 'no tool call'
                  : '';
        if (failure) errorKinds[failure] = (errorKinds[failure] ?? 0) + 1;
        else timings.push(timing);
        if (thinkMs) await sleep(Math.random() * 2 * thinkMs);
      }
    }),
  );
  const elapsed = (now() - started) / 1000;
  const serviceCpuSeconds = context.service.cpuSeconds() - cpuBefore;
  const loadAverageAfter = loadAverage();
  const span = (timing: MessageTiming) => context.provider.spans.get(timing.key)!;
  const toolTime = (timing: MessageTiming) => {
    const tool = toolSpans?.get(timing.key);
    return tool ? tool.endedAt - tool.receivedAt : 0;
  };
  const own = timings.map((timing) => timing.doneAt - timing.sentAt - span(timing).busyMs - toolTime(timing));
  const gaps = timings.map((timing) => timing.firstDeltaAt - span(timing).firstTokenAt);
  const totals = timings.map((timing) => timing.doneAt - timing.sentAt);
  const providers = timings.map((timing) => span(timing).busyMs);
  const tools = timings.map(toolTime);
  await endAll(context, current);
  const figures = (values: number[]) => ({
    p50: round(percentile(values, 0.5)),
    p90: round(percentile(values, 0.9)),
    p99: round(percentile(values, 0.99)),
    max: round(Math.max(...values)),
  });
  return {
    messages: timings.length,
    errors: Object.values(errorKinds).reduce((sum, count) => sum + count, 0),
    errorKinds,
    seconds: round(elapsed),
    messagesPerSecond: round(timings.length / elapsed),
    serviceCpuMsPerMessage: round((serviceCpuSeconds * 1000) / timings.length),
    ownMs: figures(own),
    totalMs: { p50: round(percentile(totals, 0.5)), p99: round(percentile(totals, 0.99)) },
    providerMs: { p50: round(percentile(providers, 0.5)), p99: round(percentile(providers, 0.99)) },
    firstByteGapMs: figures(gaps),
    ...(withTool ? { toolMs: { p50: round(percentile(tools, 0.5)), p99: round(percentile(tools, 0.99)) } } : {}),
    slowest: timings
      .map((timing, index) => ({ atS: round((timing.sentAt - started) / 1000), ownMs: round(own[index]), gapMs: round(gaps[index]) }))
      .sort((a, b) => b.ownMs - a.ownMs)
      .slice(0, Math.ceil(timings.length / 100))
      .sort((a, b) => a.atS - b.atS),
    loadAverageBefore,
    loadAverageAfter,
  };
}

interface StreamsFigures {
  streams: number;
  errors: number;
  seconds: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  rssGrowthMiB: number;
  loadAverageBefore: number[];
}

/** `count` conversations whose replies all stream at the same time; the service's RSS sampled every 50 ms. */
async function streamAtOnce(context: Context, count: number): Promise<StreamsFigures> {
  await settle(context);
  const conversations: Conversation[] = [];
  for (let index = 0; index < count; index += 50) {
    conversations.push(...(await Promise.all(Array.from({ length: Math.min(50, count - index) }, () => startConversation(context)))));
  }
  await sleep(2_000); // let the starts' garbage be collected before "before"
  const loadAverageBefore = loadAverage();
  const { service } = context;
  const rssBeforeMiB = service.rssMiB();
  let rssPeakMiB = rssBeforeMiB;
  const sampler = setInterval(() => (rssPeakMiB = Math.max(rssPeakMiB, service.rssMiB())), 50);
  const started = now();
  const expected = context.provider.replyOf();
  const timings = await Promise.all(
    conversations.map((conversation) => streamMessage(context.baseUrl, conversation, `Bench stream ${++messageSerial}`)),
  );
  clearInterval(sampler);
  rssPeakMiB = Math.max(rssPeakMiB, service.rssMiB());
  const errors = timings.filter((timing) => timing.status !== 200 || timing.doneText !== expected).length;
  await endAll(context, conversations);
  return {
    streams: count,
    errors,
    seconds: round((now() - started) / 1000),
    rssBeforeMiB,
    rssPeakMiB,
    rssGrowthMiB: round(rssPeakMiB - rssBeforeMiB),
    loadAverageBefore,
  };
}

async function main(): Promise<void> {
  const conversations = option('conversations', 50);
  const seconds = option('seconds', 30);
  const thinkIndex = process.argv.indexOf('--think-ms');
  const paces = (thinkIndex > 0 ? process.argv[thinkIndex + 1] : '1000,250,0').split(',').map(Number);
  const streams = option('streams', 1_000);
  const rounds = option('rounds', 3);
  const toolMs = option('tool-ms', 50);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'voice-agent-bench-conversations-'));
  const postgres = await startThrowawayPostgres();
  const provider = await startProvider();
  const toolEndpoint = toolMs > 0 ? await startToolEndpoint(toolMs) : undefined;
  let service: RunningServer | undefined;
  let jobs: Client | undefined;
  try {
    log(`load average ${loadAverage().join(' ')}; building the service`);
    const main = buildService();
    await runMigrations(postgres.url, loadConfig({}));
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'warn' };
    const created = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Bench'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    const { apiKey } = JSON.parse(created.trim().split('\n').at(-1)!);
    const profileArgs = process.argv.includes('--profile')
      ? ['--cpu-prof', `--cpu-prof-dir=${os.tmpdir()}`, '--cpu-prof-name=conversations-service.cpuprofile']
      : [];
    if (profileArgs.length) log(`profile: ${path.join(os.tmpdir(), 'conversations-service.cpuprofile')}`);
    service = await startService({
      name: 'service',
      script: main,
      nodeArgs: profileArgs,
      env: {
        ...env,
        DATA_DIR: path.join(work, 'service-data'),
        LLM_BASE_URL: provider.url,
        LLM_API_KEY: 'bench',
        RATE_LIMIT: '0',
        WIDGET_RATE_LIMIT: '1000000',
        // The tool's endpoint is on loopback.
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      },
      readyPath: '/health',
      logFile: path.join(work, 'service.log'),
    });
    const { body: agentBody } = await jsonRequest<{ id: number }>(
      `${service.baseUrl}/agents`,
      'POST',
      { 'X-Api-Key': apiKey },
      { name: 'Bench agent', model: 'bench-model' },
    );
    jobs = new Client({ connectionString: postgres.url });
    await jobs.connect();
    const context: Context = { service, baseUrl: service.baseUrl, apiKey, agentId: agentBody.id, provider, jobs };
    if (toolEndpoint) {
      const { body: tool } = await jsonRequest<{ id: number }>(
        `${service.baseUrl}/tools`,
        'POST',
        { 'X-Api-Key': apiKey },
        { type: 'webhook', name: 'lookup_order', description: 'Looks up an order.', url: toolEndpoint.url },
      );
      const { body: toolAgent } = await jsonRequest<{ id: number }>(
        `${service.baseUrl}/agents`,
        'POST',
        { 'X-Api-Key': apiKey },
        { name: 'Bench agent with a tool', model: 'bench-model', toolIds: [tool.id] },
      );
      context.tool = { agentId: toolAgent.id, endpoint: toolEndpoint };
    }

    log('warm-up');
    await talk(context, conversations, 5, 0);
    const talks: (PhaseFigures & { round: number; thinkMs: number; tool: boolean })[] = [];
    const streamed: (StreamsFigures & { round: number })[] = [];
    for (let round = 1; round <= rounds; round++) {
      provider.setPlan({ pieces: ['Yes, ', 'we deliver ', 'every day ', 'from 9 to 6.'], delayMs: 0 });
      for (const thinkMs of paces) {
        talks.push({
          round,
          thinkMs,
          tool: false,
          ...(await talk(context, conversations, thinkMs ? seconds : Math.max(5, seconds / 3), thinkMs)),
        });
        log(`round ${round}, think ${thinkMs} ms: ${JSON.stringify(talks.at(-1))}`);
        if (!context.tool || !thinkMs) continue;
        talks.push({ round, thinkMs, tool: true, ...(await talk(context, conversations, seconds, thinkMs, true)) });
        log(`round ${round}, think ${thinkMs} ms, a tool call each: ${JSON.stringify(talks.at(-1))}`);
      }
      if (streams === 0) continue;
      provider.setPlan({ pieces: Array.from({ length: 20 }, (_, index) => `piece ${index} `), delayMs: 100 });
      streamed.push({ round, ...(await streamAtOnce(context, streams)) });
      log(`round ${round} streams: ${JSON.stringify(streamed.at(-1))}`);
    }

    const options = { conversations, seconds, thinkMs: paces, streams, rounds, toolMs };
    const result = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, options, talks, streamed };
    const file = path.join(ROOT, 'bench', 'results', `conversations-${new Date().toISOString().slice(0, 16).replace(':', '')}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${path.relative(ROOT, file)}`);

    const lines = [
      `| Round | Think time | Tool (p50 / p99 ms) | Messages/s | Service's own time p50 / p90 / p99 (ms) | First byte after the provider's first token p50 / p99 (ms) | Service CPU per message (ms) | Errors | Load before |`,
      '|---|---|---|---|---|---|---|---|---|',
      ...talks.map(
        (figures) =>
          `| ${figures.round} | ${figures.thinkMs} ms | ${figures.toolMs ? `${figures.toolMs.p50} / ${figures.toolMs.p99}` : 'none'} | ${figures.messagesPerSecond} | ` +
          `${figures.ownMs.p50} / ${figures.ownMs.p90} / ${figures.ownMs.p99} | ` +
          `${figures.firstByteGapMs.p50} / ${figures.firstByteGapMs.p99} | ${figures.serviceCpuMsPerMessage} | ${figures.errors} | ${figures.loadAverageBefore.join(' ')} |`,
      ),
      '',
      `| Round | Streams at once | Errors | Seconds | RSS before (MiB) | RSS peak (MiB) | Growth (MiB) | Load before |`,
      '|---|---|---|---|---|---|---|---|',
      ...streamed.map(
        (figures) =>
          `| ${figures.round} | ${figures.streams} | ${figures.errors} | ${figures.seconds} | ${figures.rssBeforeMiB} | ${figures.rssPeakMiB} | ${figures.rssGrowthMiB} | ${figures.loadAverageBefore.join(' ')} |`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (error) {
    const serviceLog = path.join(work, 'service.log');
    if (fs.existsSync(serviceLog)) log(`service log:\n${fs.readFileSync(serviceLog, 'utf8').slice(-4_000)}`);
    throw error;
  } finally {
    await jobs?.end();
    await service?.stop();
    await provider.close();
    await toolEndpoint?.close();
    await postgres.destroy();
    agent.destroy();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
