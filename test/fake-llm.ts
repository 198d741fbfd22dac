import * as http from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * An OpenAI-compatible Chat Completions server on loopback, speaking the real wire protocol: `POST
 * /v1/chat/completions`, streamed as `data: {chat.completion.chunk}` events ending with `data: [DONE]`, or one
 * `chat.completion` object when not streamed; errors as `{"error": {...}}` with an HTTP status. What it answers
 * is set per test (`behave`), and every request it received is kept (`requests`).
 *
 * Tool calls (`tool-calls`) are streamed as the providers stream them: OpenAI's way (a call's first delta with its
 * `index`, `id`, `type` and `function.name`, its arguments in small pieces after it, the calls one after the other,
 * `finish_reason: "tool_calls"`), optionally with the ids and names themselves split across chunks; or Ollama's
 * (each call whole in one delta, every call of the answer at `index` 0).
 */

/** A message of a request: `content` is null beside `tool_calls` (an assistant's), and a `tool` message names its call. */
export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  headers: http.IncomingHttpHeaders;
  body: {
    model: string;
    messages: ChatMessage[];
    stream?: boolean;
    max_tokens?: number;
    tools?: { type: string; function: { name: string; description: string; parameters: object } }[];
    [field: string]: unknown;
  };
}

/** A call the fake model makes: `arguments` is the JSON text it writes (any text: invalid arguments too). */
export interface FakeToolCall {
  name: string;
  arguments: string;
  id?: string;
}

/** How the fake answers one request. */
export type Behaviour =
  /**
   * The reply in these pieces, each a chunk (optionally `delayMs` apart); `firstDelayMs` more before the first (a
   * model's time to its first token, after the stream's headers); `hold` waits for it before finishing.
   */
  | { kind: 'stream'; pieces: string[]; delayMs?: number; firstDelayMs?: number; hold?: Promise<void> }
  /** An HTTP error with the API's error body (its message is the provider's text, which must never be seen). */
  | { kind: 'status'; status: number; message: string }
  /** Headers sent, then nothing, ever (a stalled provider). */
  | { kind: 'stall' }
  /** A 200 stream of chunks that are not JSON. */
  | { kind: 'garbage'; text: string }
  /** Some chunks, then the connection cut (no finish_reason, no [DONE]). */
  | { kind: 'cut'; pieces: string[] }
  /** A non-streamed completion whose message content is this. */
  | { kind: 'completion'; content: string }
  /**
   * An answer that calls tools, streamed (see above), after the text `content` if any. `style` `openai` (the default)
   * or `ollama`; `splitLabels` splits each id and name across two chunks too.
   */
  | { kind: 'tool-calls'; calls: FakeToolCall[]; content?: string; style?: 'openai' | 'ollama'; splitLabels?: boolean };

export interface FakeLlm {
  /** The base URL to configure (LLM_BASE_URL), ending in /v1. */
  url: string;
  requests: ChatRequest[];
  /** How long each `firstDelayMs` actually took (a busy machine's timers fire late), in order. */
  firstDelaysTaken: number[];
  /** Answers every following request this way (or by this function of the request). */
  behave(behaviour: Behaviour | ((request: ChatRequest) => Behaviour)): void;
  /** Performance-timeline time (ms) at which each stream's first content chunk was written, in order. */
  firstTokenAt: number[];
  close(): Promise<void>;
}

const CREATED = 1_795_000_000;

function chunk(model: string, delta: object, finishReason: string | null): string {
  const body = {
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    system_fingerprint: 'fp_test',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

export function completion(model: string, content: string): object {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    service_tier: 'default',
    system_fingerprint: 'fp_test',
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let callSerial = 0;

/** `text` in pieces of at most `size` characters (at least one piece, maybe empty). */
const piecesOf = (text: string, size: number) => (text === '' ? [''] : (text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []));

/** The `tool_calls` deltas of an answer, one chunk's worth each, as the style's providers split them. */
function toolCallDeltas({ calls, style = 'openai', splitLabels = false }: Extract<Behaviour, { kind: 'tool-calls' }>): object[][] {
  const withIds = calls.map((call) => ({ ...call, id: call.id ?? `call_${++callSerial}abcdef` }));
  if (style === 'ollama') {
    return withIds.map((call) => [{ id: call.id, index: 0, type: 'function', function: { name: call.name, arguments: call.arguments } }]);
  }
  return withIds.flatMap((call, index) => {
    const [id, name] = [call.id, call.name];
    const first = splitLabels
      ? [
          [{ index, id: id.slice(0, 5), type: 'function', function: { name: name.slice(0, 3), arguments: '' } }],
          [{ index, id: id.slice(5), function: { name: name.slice(3) } }],
        ]
      : [[{ index, id, type: 'function', function: { name, arguments: '' } }]];
    return [...first, ...piecesOf(call.arguments, 4).map((piece) => [{ index, function: { arguments: piece } }])];
  });
}

/** The default: a streamed echo of the visitor's latest message, in three pieces. */
const echo = (request: ChatRequest): Behaviour => {
  if (!request.body.stream) return { kind: 'completion', content: '{"sentiment":"neutral","status":"new","summary":"A short chat."}' };
  const last = [...request.body.messages].reverse().find((message) => message.role === 'user')?.content ?? '';
  return { kind: 'stream', pieces: ['You said: ', last, '.'] };
};

export async function startFakeLlm(): Promise<FakeLlm> {
  const requests: ChatRequest[] = [];
  const firstDelaysTaken: number[] = [];
  const firstTokenAt: number[] = [];
  let behaviour: (request: ChatRequest) => Behaviour = echo;
  const sockets = new Set<import('node:net').Socket>();

  async function answer(request: ChatRequest, response: http.ServerResponse): Promise<void> {
    const plan = behaviour(request);
    const model = request.body.model;
    const streamHeaders = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' };
    switch (plan.kind) {
      case 'completion':
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(completion(model, plan.content)));
        return;
      case 'status':
        response
          .writeHead(plan.status, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ error: { message: plan.message, type: 'server_error', param: null, code: null } }));
        return;
      case 'stall':
        response.writeHead(200, streamHeaders);
        response.flushHeaders();
        return; // never ends: the client's deadline must
      case 'garbage':
        response.writeHead(200, streamHeaders);
        response.write(chunk(model, { role: 'assistant', content: '' }, null));
        response.end(`data: ${plan.text}\n\ndata: [DONE]\n\n`);
        return;
      case 'cut':
        response.writeHead(200, streamHeaders);
        response.write(chunk(model, { role: 'assistant', content: '' }, null));
        for (const piece of plan.pieces) response.write(chunk(model, { content: piece }, null));
        await sleep(20);
        response.socket?.destroy();
        return;
      case 'tool-calls':
        response.writeHead(200, streamHeaders);
        response.write(chunk(model, { role: 'assistant', content: plan.content === undefined ? null : '', refusal: null }, null));
        if (plan.content !== undefined)
          for (const piece of piecesOf(plan.content, 8)) response.write(chunk(model, { content: piece }, null));
        for (const deltas of toolCallDeltas(plan)) response.write(chunk(model, { tool_calls: deltas }, null));
        response.write(chunk(model, {}, 'tool_calls'));
        response.end('data: [DONE]\n\n');
        return;
      case 'stream':
        response.writeHead(200, streamHeaders);
        response.write(chunk(model, { role: 'assistant', content: '', refusal: null }, null));
        for (const [index, piece] of plan.pieces.entries()) {
          if (plan.delayMs) await sleep(plan.delayMs);
          if (index === 0 && plan.firstDelayMs) {
            const from = performance.now();
            await sleep(plan.firstDelayMs);
            firstDelaysTaken.push(performance.now() - from); // longer than asked on a busy machine
          }
          if (index === 0) firstTokenAt.push(performance.timeOrigin + performance.now());
          response.write(chunk(model, { content: piece }, null));
        }
        await plan.hold;
        response.write(chunk(model, {}, 'stop'));
        response.end('data: [DONE]\n\n');
        return;
    }
  }

  const server = http.createServer((incoming, response) => {
    const parts: Buffer[] = [];
    incoming.on('data', (part: Buffer) => parts.push(part));
    incoming.on('end', () => {
      if (incoming.method !== 'POST' || incoming.url !== '/v1/chat/completions') {
        response
          .writeHead(404, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
        return;
      }
      const request = { headers: incoming.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')) };
      requests.push(request);
      answer(request, response).catch(() => response.destroy());
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    firstTokenAt,
    firstDelaysTaken,
    behave(next) {
      behaviour = typeof next === 'function' ? next : () => next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
