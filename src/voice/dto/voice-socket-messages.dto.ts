import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { MessageUnion } from '../../common/message-unions';
import type { VoiceServerMessage } from '../voice-call';

/**
 * The voice socket's text frames (`GET /conversations/{conversationId}/voice`, contract section 15), as schemas of
 * the OpenAPI document: `VoiceClientMessage` (what the client sends) and `VoiceServerMessage` (what the service
 * sends), each a union told apart by `type`. Audio travels as binary frames beside them (16-bit little-endian mono
 * PCM), which no schema describes.
 */

// --- Client → service -------------------------------------------------------------------------------------------

@ApiSchema({ description: "The first frame, within 10 s of the upgrade: the conversation's token, and the rate of the audio to come." })
export class VoiceStartMessage {
  @ApiProperty({ enum: ['start'] })
  type: 'start';
  /** The `token` the conversation was started with. @example "vac_3q2-7wVhZ0kq9yXb1mT4cR8sLdE6uJfA" */
  @ApiProperty({ maxLength: 512 })
  token: string;
  /** The rate of the PCM the client will send, in Hz. @example 16000 */
  @ApiProperty({ type: 'integer', minimum: 8_000, maximum: 48_000, default: 16_000, required: false })
  sampleRate?: number;
}

@ApiSchema({
  description:
    'An utterance recognised in the browser, or typed: a message with the rules of `POST …/messages` (an `error` if it breaks them).',
})
export class VoiceTextMessage {
  @ApiProperty({ enum: ['text'] })
  type: 'text';
  /** 1–2,000 characters after trimming. @example "Do you deliver on Sundays?" */
  text: string;
}

@ApiSchema({ description: 'Ends the conversation, as `POST /conversations/{conversationId}/end` does.' })
export class VoiceEndMessage {
  @ApiProperty({ enum: ['end'] })
  type: 'end';
}

// --- Service → client -------------------------------------------------------------------------------------------

@ApiSchema({ description: 'The answer to `start`: the call has begun.' })
export class VoiceReadyMessage {
  @ApiProperty({ enum: ['ready'] })
  type: 'ready';
  /** The rate of the PCM the service sends, in Hz. @example 16000 */
  @ApiProperty({ type: 'integer' })
  sampleRate: number;
  /** `speech`: the service transcribes the audio itself; `text`: the client sends what the browser recognised as `text` frames. */
  @ApiProperty({ enum: ['speech', 'text'], example: 'speech' })
  input: 'speech' | 'text';
}

@ApiSchema({ description: "The visitor's speech as heard so far; one `final` per utterance." })
export class VoiceTranscriptMessage {
  @ApiProperty({ enum: ['transcript'] })
  type: 'transcript';
  /** @example "Do you deliver on Sundays?" */
  text: string;
  /** @example true */
  final: boolean;
}

@ApiSchema({ description: "A piece of the agent's reply, as it is produced." })
export class VoiceReplyMessage {
  @ApiProperty({ enum: ['reply'] })
  type: 'reply';
  /** @example "Yes, we deliver" */
  text: string;
}

@ApiSchema({ description: "The agent's reply is over." })
export class VoiceReplyDoneMessage {
  @ApiProperty({ enum: ['reply.done'] })
  type: 'reply.done';
  /** What the agent said (up to where the visitor interrupted it). @example "Yes, we deliver every day from 9 am to 6 pm." */
  text: string;
  /** Whether the visitor interrupted it. @example false */
  interrupted: boolean;
}

@ApiSchema({ description: 'Drop the agent audio not yet played: the visitor interrupted.' })
export class VoiceClearMessage {
  @ApiProperty({ enum: ['clear'] })
  type: 'clear';
}

@ApiSchema({ description: 'Something the client sent was refused (a 1007, 1008 or 1011 close may follow).' })
export class VoiceErrorMessage {
  @ApiProperty({ enum: ['error'] })
  type: 'error';
  /** @example "Audio frames are 10 to 200 ms long" */
  message: string;
}

@ApiSchema({ description: 'The conversation has ended; the socket closes with 1000.' })
export class VoiceEndedMessage {
  @ApiProperty({ enum: ['ended'] })
  type: 'ended';
}

export const VOICE_CLIENT_MESSAGES: MessageUnion = {
  name: 'VoiceClientMessage',
  description: 'A text frame the client sends on the voice socket (JSON); its audio goes in binary frames.',
  discriminator: 'type',
  members: { start: VoiceStartMessage, text: VoiceTextMessage, end: VoiceEndMessage },
};

const SERVER_MESSAGES = {
  ready: VoiceReadyMessage,
  transcript: VoiceTranscriptMessage,
  reply: VoiceReplyMessage,
  'reply.done': VoiceReplyDoneMessage,
  clear: VoiceClearMessage,
  error: VoiceErrorMessage,
  ended: VoiceEndedMessage,
};

export const VOICE_SERVER_MESSAGES: MessageUnion = {
  name: 'VoiceServerMessage',
  description: "A text frame the service sends on the voice socket (JSON); the agent's voice goes in binary frames.",
  discriminator: 'type',
  members: SERVER_MESSAGES,
};

/**
 * The documented server messages are exactly what the service sends (VoiceServerMessage, which VoiceSession.send
 * takes): a message added, removed or changed there and not here fails to compile.
 */
type Documented = InstanceType<(typeof SERVER_MESSAGES)[keyof typeof SERVER_MESSAGES]>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const SERVER_MESSAGES_DOCUMENTED: Same<Documented, VoiceServerMessage> = true;
