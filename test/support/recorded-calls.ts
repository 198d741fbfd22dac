import { EventEmitter, once } from 'node:events';
import WebSocket from 'ws';
import { CallTransport, VoiceCall, VoiceCallContext, VoiceCalls } from '../../src/voice/voice-call';
import type { TestContext } from '../helpers';

/**
 * The pipeline's place in these tests (the protocol is what they test): each call keeps what the session hands it,
 * answers each text with a `reply` echoing it (a fence: every frame sent before that text has been handed over),
 * and answers `end` as the pipeline does (`ended`, close 1000).
 */
export class RecordedCall extends EventEmitter implements VoiceCall {
  readonly audioFrames: Int16Array[] = [];
  readonly texts: string[] = [];
  begun = false;
  closed = false;

  constructor(
    readonly context: VoiceCallContext,
    readonly link: CallTransport,
  ) {
    super();
  }

  begin(): void {
    this.begun = true;
  }

  audio(pcm: Int16Array): void {
    this.audioFrames.push(pcm.slice());
  }

  text(text: string): void {
    this.texts.push(text);
    this.link.send({ type: 'reply', text });
  }

  /** The marks the transport echoed. */
  readonly marks: string[] = [];

  played(mark: string): void {
    this.marks.push(mark);
  }

  /** How many times the conversation was said to have ended elsewhere. */
  finished = 0;

  finish(): Promise<void> {
    this.finished++;
    return Promise.resolve();
  }

  end(): Promise<void> {
    this.link.send({ type: 'ended' });
    this.link.close(1000, 'Conversation ended');
    return Promise.resolve();
  }

  /** What close() waits for: the call's storing, which a test may hold. */
  stored: Promise<void> = Promise.resolve();

  close(): Promise<void> {
    this.closed = true;
    this.emit('closed');
    return this.stored;
  }

  /** Resolves once the session has closed the call (its socket is gone). */
  async whenClosed(): Promise<void> {
    if (!this.closed) await once(this, 'closed');
  }
}

/** Puts RecordedCalls in the place of the app's VoiceCalls (the provider VoiceModule registers); returns the calls opened. */
export function recordCalls(context: TestContext): Map<string, RecordedCall> {
  const calls = new Map<string, RecordedCall>();
  jest.spyOn(context.app.get(VoiceCalls), 'open').mockImplementation((callContext, link) => {
    const call = new RecordedCall(callContext, link);
    calls.set(callContext.access.id, call);
    return Promise.resolve(call);
  });
  return calls;
}

/** What a WebSocket client sees when the handshake is refused: the HTTP status, its headers and the error body. */
export function refusedHandshake(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on('open', () => reject(new Error('upgraded')));
    socket.on('error', () => undefined);
    socket.on('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(body) as unknown, headers: response.headers }));
    });
  });
}
