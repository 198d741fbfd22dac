/**
 * One spoken call in the widget (contract section 15): the microphone streamed to the voice socket, the agent's
 * voice played, and what the service says about the conversation handed to the panel. Where the service does not
 * transcribe (`input: text`), the browser recognises the speech, or else the visitor types; either way as text
 * frames, while the audio still streams for the recording.
 */
import { BrowserListener, speechRecognitionAvailable } from './browser-speech';
import { Microphone } from './microphone';
import { SOCKET_SAMPLE_RATE } from './pcm-frames';
import { AgentVoice } from './playback';
import { ServerMessage, SocketLike, VoiceConnection, VoiceOutcome, voiceSocketUrl } from './voice-protocol';

/** The browser's WebSocket, seen as the protocol client's SocketLike (its handlers receive richer events). */
const openWebSocket = (url: string) => new WebSocket(url) as unknown as SocketLike;

/** What the panel shows of the call. */
export interface CallView {
  /** Listening: `speech` the service hears the visitor, `browser` the browser does, `typed` the visitor types. */
  listening(input: 'speech' | 'browser' | 'typed'): void;
  transcript(text: string, final: boolean): void;
  replyPiece(text: string): void;
  replyDone(text: string, interrupted: boolean): void;
  error(message: string): void;
  /** The call is over: `ended` the conversation has ended, otherwise the socket could not go on. */
  closed(outcome: VoiceOutcome): void;
}

/** Why a call could not start: no microphone (or no permission, or no worklet) → the text box over HTTP. */
export class NoMicrophone extends Error {}

export class VoiceCall {
  private readonly connection: VoiceConnection;
  private microphone: Microphone | null = null;
  private readonly voice: AgentVoice;
  private listener: BrowserListener | null = null;
  private muted = false;
  private finished = false;

  constructor(
    private readonly context: AudioContext,
    base: string,
    session: { conversationId: string; token: string },
    private readonly language: string,
    private readonly view: CallView,
  ) {
    this.voice = new AgentVoice(context, SOCKET_SAMPLE_RATE);
    this.connection = new VoiceConnection(
      { url: voiceSocketUrl(base, session.conversationId), token: session.token, sampleRate: SOCKET_SAMPLE_RATE, open: openWebSocket },
      {
        ready: (sampleRate, input) => this.onReady(sampleRate, input),
        message: (message) => this.onMessage(message),
        audio: (pcm) => this.voice.play(pcm),
        closed: (outcome) => this.finish(outcome),
      },
    );
  }

  /** Opens the microphone (NoMicrophone when it cannot), then the socket. */
  async start(): Promise<void> {
    if (!Microphone.supported()) throw new NoMicrophone();
    void this.context.resume();
    try {
      this.microphone = await Microphone.open(this.context, (frame) => this.connection.sendAudio(frame));
    } catch {
      throw new NoMicrophone();
    }
    if (this.finished) return this.microphone.close();
    this.connection.connect();
  }

  /** Typed text, as a text frame; false when the socket cannot take it now. */
  sendText(text: string): boolean {
    return this.connection.sendText(text);
  }

  setMuted(muted: boolean): void {
    this.muted = muted;
    this.microphone?.setMuted(muted);
    if (muted) this.listener?.stop();
    else this.listener?.start();
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** Ends the conversation through the socket; false when the socket is not open (the caller ends it over HTTP). */
  end(): boolean {
    return this.connection.end();
  }

  /** Leaves the call without ending the conversation. */
  stop(): void {
    this.connection.stop();
    this.release();
  }

  private onReady(sampleRate: number, input: 'speech' | 'text'): void {
    this.voice.setSampleRate(sampleRate);
    if (input === 'speech') return this.view.listening('speech');
    if (!speechRecognitionAvailable()) return this.view.listening('typed');
    this.listener?.stop();
    this.listener = new BrowserListener(
      this.language,
      (text) => this.connection.sendText(text),
      () => this.view.listening('typed'),
    );
    if (!this.muted) this.listener.start();
    this.view.listening('browser');
  }

  private onMessage(message: Exclude<ServerMessage, { type: 'ready' } | { type: 'ended' }>): void {
    switch (message.type) {
      case 'transcript':
        return this.view.transcript(message.text, message.final);
      case 'reply':
        return this.view.replyPiece(message.text);
      case 'reply.done':
        return this.view.replyDone(message.text, message.interrupted);
      case 'clear':
        return this.voice.clear();
      case 'error':
        return this.view.error(message.message);
    }
  }

  private finish(outcome: VoiceOutcome): void {
    this.release();
    this.view.closed(outcome);
  }

  private release(): void {
    this.finished = true;
    this.listener?.stop();
    this.listener = null;
    this.microphone?.close();
    this.microphone = null;
    this.voice.clear();
  }
}
