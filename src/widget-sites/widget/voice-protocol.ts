/**
 * The widget's side of the voice socket (contract section 15), without browser globals so that Jest can drive
 * it against a `ws` server: `start` with the token, `ready`, the frames each way, `end`, and what each close
 * code means. A socket lost (1001, 1006) is opened again once with the same token: the conversation goes on.
 */

/** The part of the WebSocket API used here (the browser's, and the `ws` package's in the tests). */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

const OPEN = 1;

export type ServerMessage =
  | { type: 'ready'; sampleRate: number; input: 'speech' | 'text' }
  | { type: 'transcript'; text: string; final: boolean }
  | { type: 'reply'; text: string }
  | { type: 'reply.done'; text: string; interrupted: boolean }
  | { type: 'clear' }
  | { type: 'error'; message: string }
  | { type: 'ended' };

/**
 * How a socket's life ended: `ended` (the conversation is over: `ended`, or 4410), `gone` (4404: wrong token or
 * unknown conversation), `busy` (4409: another socket has this conversation), `failed` (anything else, after
 * the one reconnection a lost socket gets).
 */
export type VoiceOutcome = 'ended' | 'gone' | 'busy' | 'failed';

export interface VoiceListener {
  /** The service is listening: `sampleRate` of the audio it sends, `input` what it expects (audio, or text too). */
  ready(sampleRate: number, input: 'speech' | 'text'): void;
  /** A text frame from the service other than `ready` and `ended`. */
  message(message: Exclude<ServerMessage, { type: 'ready' } | { type: 'ended' }>): void;
  /** A binary frame: the agent's voice. */
  audio(pcm: ArrayBuffer): void;
  /** The socket closed for good (not called when the widget closed it itself). */
  closed(outcome: VoiceOutcome, code: number): void;
}

export interface VoiceConnectionOptions {
  /** `ws(s)://…/conversations/{id}/voice`. */
  url: string;
  token: string;
  /** Opens a socket (the browser's WebSocket; the tests pass the `ws` package's). */
  open: (url: string) => SocketLike;
  /** Of the audio the widget sends. */
  sampleRate: number;
  /** Times a lost socket is opened again (1001, 1006) before the call counts as failed. */
  reconnects?: number;
}

const LOST_CODES = new Set([1001, 1006]);
const OUTCOME_OF_CODE: Record<number, VoiceOutcome> = { 1000: 'ended', 4410: 'ended', 4404: 'gone', 4409: 'busy' };

/** Reads the `voice` address of a conversation from the address the script was loaded from (http → ws, https → wss). */
export function voiceSocketUrl(base: string, conversationId: string): string {
  return `${base.replace(/^http/, 'ws')}/conversations/${encodeURIComponent(conversationId)}/voice`;
}

export class VoiceConnection {
  private socket: SocketLike | null = null;
  private isReady = false;
  private reconnectsLeft: number;
  private ending = false;
  private stopped = false;

  constructor(
    private readonly options: VoiceConnectionOptions,
    private readonly listener: VoiceListener,
  ) {
    this.reconnectsLeft = options.reconnects ?? 1;
  }

  get ready(): boolean {
    return this.isReady;
  }

  connect(): void {
    const socket = this.options.open(this.options.url);
    this.socket = socket;
    socket.binaryType = 'arraybuffer';
    socket.onopen = () => socket.send(JSON.stringify({ type: 'start', token: this.options.token, sampleRate: this.options.sampleRate }));
    socket.onmessage = (event) => this.receive(event.data);
    socket.onerror = () => undefined; // a close event follows, with the code that says what happened
    socket.onclose = (event) => this.onClose(socket, event.code);
  }

  /** One frame of the visitor's audio: sent only once the service is ready (it keeps very few frames before). */
  sendAudio(frame: ArrayBuffer): void {
    if (this.isReady && this.socket?.readyState === OPEN) this.socket.send(frame);
  }

  /** An utterance recognised in the browser, or typed; false when the socket cannot take it now. */
  sendText(text: string): boolean {
    if (!this.isReady || this.socket?.readyState !== OPEN) return false;
    this.socket.send(JSON.stringify({ type: 'text', text }));
    return true;
  }

  /** Ends the conversation: the service answers `ended` and closes (listener.closed('ended')). */
  end(): boolean {
    if (this.socket?.readyState !== OPEN) return false;
    this.ending = true;
    this.socket.send(JSON.stringify({ type: 'end' }));
    return true;
  }

  /** Closes the socket without ending the conversation (the panel was closed, the page leaves). */
  stop(): void {
    this.stopped = true;
    this.isReady = false;
    this.socket?.close(1000, 'Closed by the visitor');
  }

  private receive(data: unknown): void {
    if (data instanceof ArrayBuffer) {
      this.listener.audio(data);
      return;
    }
    const message = parseServerMessage(data);
    if (!message) return; // not the service's: ignored
    if (message.type === 'ready') {
      this.isReady = true;
      this.listener.ready(message.sampleRate, message.input);
    } else if (message.type === 'ended') this.ending = true;
    else this.listener.message(message);
  }

  private onClose(socket: SocketLike, code: number): void {
    if (socket !== this.socket || this.stopped) return;
    this.isReady = false;
    if (!this.ending && LOST_CODES.has(code) && this.reconnectsLeft > 0) {
      this.reconnectsLeft--;
      this.connect();
      return;
    }
    this.socket = null;
    this.listener.closed(this.ending ? 'ended' : (OUTCOME_OF_CODE[code] ?? 'failed'), code);
  }
}

function parseServerMessage(data: unknown): ServerMessage | null {
  if (typeof data !== 'string') return null;
  try {
    const message = JSON.parse(data) as { type?: unknown };
    return message && typeof message.type === 'string' ? (message as ServerMessage) : null;
  } catch {
    return null;
  }
}
