import type { ConversationAccess } from '../conversations/conversations.repository';
import type { RecordingSampleRate } from './recording/mp3-encoding';

/** What the service sends on the voice socket as text frames (contract section 15). */
export type VoiceServerMessage =
  | { type: 'ready'; sampleRate: number; input: 'speech' | 'text' }
  | { type: 'transcript'; text: string; final: boolean }
  | { type: 'reply'; text: string }
  | { type: 'reply.done'; text: string; interrupted: boolean }
  | { type: 'clear' }
  | { type: 'error'; message: string }
  | { type: 'ended' };

/**
 * The edge of a spoken call, one per transport: the browser's voice socket (VoiceSession) and a carrier's media
 * stream (src/telephony). Audio crosses it as 16-bit mono PCM at VOICE_SAMPLE_RATE in 20 ms frames; each transport
 * converts to its own rate and encoding (the codec is at the edge).
 */
export interface CallTransport {
  /**
   * How the call knows what has played: `clock`, the far end plays what it is sent at real time (the browser, so
   * each tick of the voice clock plays one frame sent); `marks`, it says so by echoing the marks it is sent (a carrier).
   */
  readonly playback: 'clock' | 'marks';
  /** One of the browser protocol's text messages; a transport without them (a carrier's) ignores it. */
  send(message: VoiceServerMessage): void;
  /** One frame of the agent's voice; false when the transport is backed up and cannot take it now (sent later). */
  sendAudio(frame: Int16Array): boolean;
  /** A point in the audio sent (`marks` playback): reported back through VoiceCall.played once what precedes it has played. */
  mark(name: string): void;
  /** Drops what was sent and not yet played (the visitor interrupted). */
  clear(): void;
  /** Ends the transport: 1000 after `ended`, 4404 when the conversation is gone, 1011 for a fault. */
  close(code: number, reason: string): void;
}

/** The socket's conversation, once `start` proved its token. */
export interface VoiceCallContext {
  access: ConversationAccess;
  /** `Bearer <token>`, as the conversation's HTTP routes take it (ConversationTalk.accept). */
  authorization: string;
  /** The client's address (the reply caps count it). */
  address: string;
  /**
   * The rate of the PCM that `audio` gets, when it is the client's own (the call resamples it, a slice at a time
   * with the rest of its work on the audio); absent, the audio comes already at VOICE_SAMPLE_RATE.
   */
  inputSampleRate?: number;
  /** The rate the call's recording is encoded at: a phone line's 8 kHz, or VOICE_SAMPLE_RATE when absent. */
  recordingSampleRate?: RecordingSampleRate;
}

/** One socket's spoken conversation: the pipeline behind the protocol (VoicePipeline, src/voice/pipeline/voice-pipeline.ts). */
export interface VoiceCall {
  /** `ready` has been sent: the call begins (the greeting, on a conversation's first socket, is said first). */
  begin(): void;
  /**
   * The visitor's audio: 16-bit mono PCM at VOICE_SAMPLE_RATE (or the context's `inputSampleRate`), 10-200 ms per
   * call, the buffer given up. Only queued here: the call works through it a slice at a time, in order.
   */
  audio(pcm: Int16Array): void;
  /** An utterance recognised in the browser or typed (a `text` frame): taken after the audio that came before it. */
  text(text: string): void;
  /** The transport echoed a mark it was sent (`marks` playback): the audio before it has played. */
  played(mark: string): void;
  /** The visitor ended the conversation (an `end` frame): answered with `ended` and close 1000. */
  end(): Promise<void>;
  /**
   * The conversation has ended elsewhere (the agent hung up, its end route, its maximum length): nothing more is
   * heard or said but the sentence being spoken, which plays to its end; resolves then (or after `maxMs`).
   */
  finish(maxMs: number): Promise<void>;
  /** The socket is gone (closed by either side): stop talking, store what was recorded; the conversation goes on. */
  close(): Promise<void>;
}

/** Opens the pipeline of a socket once `start` succeeded; `ready` is sent once it is open. */
export abstract class VoiceCalls {
  /** Whether the service transcribes the audio (`speech`) or the client sends text (`text`). */
  abstract readonly input: 'speech' | 'text';
  /**
   * Sets up the socket's call (the agent's voice, the recording, the VAD), so that every frame after `ready` is
   * heard and recorded; an HttpException (410) when the conversation ended or its agent was deleted meanwhile.
   */
  abstract open(context: VoiceCallContext, transport: CallTransport): Promise<VoiceCall>;
}
