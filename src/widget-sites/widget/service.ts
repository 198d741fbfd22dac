/**
 * The chat transport: the service's public conversation routes over fetch (contract section 10), the reply
 * streamed as Server-Sent Events read from the response body (EventSource cannot POST).
 */

/** Not an HTTP status: the service could not be reached, or the reply's stream broke off. */
export const UNREACHABLE = 0;
export const INTERRUPTED = -1;

export interface Session {
  conversationId: string;
  token: string;
}

export interface Message {
  speaker: 'agent' | 'user';
  text: string;
}

export interface Visitor {
  name: string;
  phone: string;
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    message = '',
    readonly retryAfter = 0,
  ) {
    super(message || 'HTTP ' + status);
  }
}

interface RequestOptions {
  token?: string;
  body?: object;
  accept?: string;
}

/** fetch() with the conversation's token; a failure becomes a RequestError with the status and the service's message. */
async function request(base: string, method: string, path: string, options: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.token) headers.Authorization = 'Bearer ' + options.token;
  if (options.body) headers['Content-Type'] = 'application/json';
  if (options.accept) headers.Accept = options.accept;
  let response: Response;
  try {
    response = await fetch(base + path, {
      method,
      headers,
      body: options.body ? JSON.stringify(options.body) : undefined,
      credentials: 'omit',
    });
  } catch {
    throw new RequestError(UNREACHABLE);
  }
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { message?: unknown };
    throw new RequestError(
      response.status,
      typeof body.message === 'string' ? body.message : '',
      Number(response.headers.get('Retry-After')),
    );
  }
  return response;
}

const conversationPath = (session: Session, rest = '') => '/conversations/' + encodeURIComponent(session.conversationId) + rest;

export async function startSession(base: string, siteKey: string, visitor: Visitor): Promise<{ session: Session; greeting: string }> {
  const body: Record<string, string> = { siteKey };
  if (visitor.name) body.name = visitor.name;
  if (visitor.phone) body.phone = visitor.phone;
  const started = (await (await request(base, 'POST', '/widget/sessions', { body })).json()) as Session & { greeting: string };
  return { session: { conversationId: started.conversationId, token: started.token }, greeting: started.greeting };
}

/**
 * The conversation so far, as the visitor saw it: the entries of the tools the agent called (`speaker` `tool`) are
 * the transcript's, not the chat's.
 */
export async function loadConversation(base: string, session: Session): Promise<{ status: string; messages: Message[] }> {
  const { status, messages } = (await (await request(base, 'GET', conversationPath(session), { token: session.token })).json()) as {
    status: string;
    messages: (Message | { speaker: 'tool'; text: string })[];
  };
  return { status, messages: messages.filter((message): message is Message => message.speaker !== 'tool') };
}

export async function endConversation(base: string, session: Session): Promise<void> {
  await request(base, 'POST', conversationPath(session, '/end'), { token: session.token });
}

/** Sends the visitor's message; onDelta gets each piece of the reply as it streams. Resolves with the whole reply. */
export async function sendMessage(base: string, session: Session, text: string, onDelta: (piece: string) => void): Promise<string> {
  const response = await request(base, 'POST', conversationPath(session, '/messages'), {
    token: session.token,
    body: { text },
    accept: 'text/event-stream',
  });
  let reply: string | null = null;
  await readEventStream(response, (name, data) => {
    if (name === 'delta') onDelta(data.text);
    else if (name === 'done') reply = data.text;
  });
  if (reply === null) throw new RequestError(INTERRUPTED);
  return reply;
}

/** Reads a text/event-stream body as it arrives, handing each event to onEvent. */
async function readEventStream(response: Response, onEvent: (name: string, data: { text: string }) => void): Promise<void> {
  let buffer = '';
  const dispatch = (block: string) => {
    let name = 'message';
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      const colon = line.indexOf(':');
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      const key = colon < 0 ? line : line.slice(0, colon);
      if (key === 'event') name = value;
      else if (key === 'data') data.push(value);
    }
    if (!data.length) return;
    let parsed: { text: string };
    try {
      parsed = JSON.parse(data.join('\n')) as { text: string };
    } catch {
      return; // not the service's: ignored
    }
    onEvent(name, parsed);
  };
  const consume = () => {
    const blocks = buffer.split(/\r?\n\r?\n/);
    buffer = blocks.pop() ?? ''; // an unfinished event waits for the rest
    blocks.forEach(dispatch);
  };
  if (!response.body || !response.body.getReader) {
    // no streamed bodies in this browser: the reply at once
    buffer = await response.text();
    consume();
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      throw new RequestError(INTERRUPTED);
    }
    if (chunk.done) return;
    buffer += decoder.decode(chunk.value, { stream: true });
    consume();
  }
}

/** What went wrong, for the visitor. */
export function describeError(error: unknown): string {
  const failure = error instanceof RequestError ? error : new RequestError(UNREACHABLE);
  switch (failure.status) {
    case UNREACHABLE:
      return 'Could not reach the assistant. Check your connection and try again.';
    case INTERRUPTED:
      return 'The connection was lost while the reply was coming in. Please try again.';
    case 404:
      return 'This conversation is no longer available.';
    case 400:
      return 'That message could not be sent: it is empty or longer than 2,000 characters.';
    case 409:
      return failure.message || 'The conversation cannot take this message.';
    case 410:
      return 'This conversation has ended.';
    case 429:
      return (
        'Too many messages in a short time. Please wait ' +
        (failure.retryAfter > 0 ? failure.retryAfter + ' seconds' : 'a moment') +
        ' and try again.'
      );
    default:
      return 'Something went wrong (error ' + failure.status + '). Please try again in a moment.';
  }
}
