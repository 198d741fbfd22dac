import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { MessageUnion } from '../../common/message-unions';

/**
 * Twilio's bidirectional Media Streams protocol on `GET /telephony/twilio/stream` (contract section 17), as schemas
 * of the OpenAPI document: `TwilioStreamFromCarrier` (what the carrier sends) and `TwilioStreamToCarrier` (what the
 * service sends), each a union told apart by `event`. Every frame is a JSON text frame. As Twilio documents them
 * (https://www.twilio.com/docs/voice/media-streams/websocket-messages); a receiver ignores fields it does not know.
 */

const STREAM_SID = 'MZ18ad3ab5a668481ce02b83e7395059f0';
const CALL_SID = 'CA0123456789abcdef0123456789abcdef';
const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';

// --- Carrier → service ------------------------------------------------------------------------------------------

@ApiSchema({ description: 'The first frame once the socket is open.' })
export class TwilioStreamConnected {
  @ApiProperty({ enum: ['connected'] })
  event: 'connected';
  /** @example "Call" */
  protocol: string;
  /** @example "1.0.0" */
  version: string;
}

export class TwilioStreamMediaFormat {
  @ApiProperty({ enum: ['audio/x-mulaw'] })
  encoding: 'audio/x-mulaw';
  /** @example 8000 */
  @ApiProperty({ type: 'integer', enum: [8000] })
  sampleRate: number;
  /** @example 1 */
  @ApiProperty({ type: 'integer', enum: [1] })
  channels: number;
}

export class TwilioStreamParameters {
  /** The one-time token that opens the stream (valid for 60 s and one stream). @example "vst_3q2-7wVhZ0kq9yXb1mT4cR8sLdE6uJfA0kq9yXb1mT4" */
  token: string;
}

export class TwilioStreamStartDetails {
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  @ApiProperty({ example: ACCOUNT_SID })
  accountSid: string;
  /** The carrier's id of the call (`CallSid` of the voice webhook). */
  @ApiProperty({ example: CALL_SID })
  callSid: string;
  /** The audio that will flow: `inbound` (the caller's) for a `<Connect><Stream>`. */
  @ApiProperty({ enum: ['inbound', 'outbound'], isArray: true, example: ['inbound'] })
  tracks: ('inbound' | 'outbound')[];
  /** The `<Parameter>`s of the `<Stream>` the service answered the call with. */
  customParameters: TwilioStreamParameters;
  mediaFormat: TwilioStreamMediaFormat;
}

@ApiSchema({ description: 'Once, after `connected`: which call the stream carries. No valid token within 10 s closes the socket.' })
export class TwilioStreamStart {
  @ApiProperty({ enum: ['start'] })
  event: 'start';
  /** Counts the stream's messages from "1". @example "1" */
  sequenceNumber: string;
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  start: TwilioStreamStartDetails;
}

export class TwilioStreamMediaChunk {
  @ApiProperty({ enum: ['inbound', 'outbound'], example: 'inbound' })
  track: 'inbound' | 'outbound';
  /** Counts the track's chunks from "1". @example "2" */
  chunk: string;
  /** Milliseconds since the stream started. @example "5" */
  timestamp: string;
  /** 20 ms of μ-law audio at 8 kHz, mono, base64. @example "fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+" */
  @ApiProperty({ format: 'byte' })
  payload: string;
}

@ApiSchema({ description: "The caller's audio, every 20 ms." })
export class TwilioStreamMedia {
  @ApiProperty({ enum: ['media'] })
  event: 'media';
  /** @example "3" */
  sequenceNumber: string;
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  media: TwilioStreamMediaChunk;
}

export class TwilioStreamMarkName {
  /** The name the service gave the mark. @example "sentence-3" */
  name: string;
}

@ApiSchema({ description: 'A mark the service sent, echoed once the audio sent before it has played (or was cleared).' })
export class TwilioStreamMark {
  @ApiProperty({ enum: ['mark'] })
  event: 'mark';
  /** @example "4" */
  sequenceNumber: string;
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  mark: TwilioStreamMarkName;
}

export class TwilioStreamDtmfDigit {
  @ApiProperty({ enum: ['inbound_track'] })
  track: 'inbound_track';
  /** The key the caller pressed: 0–9, `*` or `#`. @example "1" */
  @ApiProperty({ pattern: '^[0-9*#]$' })
  digit: string;
}

@ApiSchema({ description: 'The caller pressed a key.' })
export class TwilioStreamDtmf {
  @ApiProperty({ enum: ['dtmf'] })
  event: 'dtmf';
  /** @example "5" */
  sequenceNumber: string;
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  dtmf: TwilioStreamDtmfDigit;
}

export class TwilioStreamStopDetails {
  @ApiProperty({ example: ACCOUNT_SID })
  accountSid: string;
  @ApiProperty({ example: CALL_SID })
  callSid: string;
}

@ApiSchema({ description: 'The stream ended (the caller hung up, or the call was moved on): the conversation ends.' })
export class TwilioStreamStop {
  @ApiProperty({ enum: ['stop'] })
  event: 'stop';
  /** @example "6" */
  sequenceNumber: string;
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  stop: TwilioStreamStopDetails;
}

// --- Service → carrier ------------------------------------------------------------------------------------------

export class TwilioStreamOutboundAudio {
  /** The agent's voice: μ-law at 8 kHz, mono, base64, without headers. @example "fn5+fn5+fn5+fn5+" */
  @ApiProperty({ format: 'byte' })
  payload: string;
}

@ApiSchema({ description: "The agent's voice, paced at about the speed it plays (never more than about a second ahead)." })
export class TwilioStreamSendMedia {
  @ApiProperty({ enum: ['media'] })
  event: 'media';
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  media: TwilioStreamOutboundAudio;
}

@ApiSchema({
  description: 'After each sentence: the carrier echoes it once the sentence has played, so the transcript keeps what the caller heard.',
})
export class TwilioStreamSendMark {
  @ApiProperty({ enum: ['mark'] })
  event: 'mark';
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
  mark: TwilioStreamMarkName;
}

@ApiSchema({ description: 'The caller interrupted: the carrier drops the audio it has not played (and echoes the marks after it).' })
export class TwilioStreamClear {
  @ApiProperty({ enum: ['clear'] })
  event: 'clear';
  @ApiProperty({ example: STREAM_SID })
  streamSid: string;
}

export const TWILIO_STREAM_FROM_CARRIER: MessageUnion = {
  name: 'TwilioStreamFromCarrier',
  description: "A frame Twilio sends on the media stream (JSON text): Twilio's Media Streams protocol.",
  discriminator: 'event',
  members: {
    connected: TwilioStreamConnected,
    start: TwilioStreamStart,
    media: TwilioStreamMedia,
    mark: TwilioStreamMark,
    dtmf: TwilioStreamDtmf,
    stop: TwilioStreamStop,
  },
};

export const TWILIO_STREAM_TO_CARRIER: MessageUnion = {
  name: 'TwilioStreamToCarrier',
  description: 'A frame the service sends to Twilio on the media stream (JSON text), in a bidirectional stream.',
  discriminator: 'event',
  members: { media: TwilioStreamSendMedia, mark: TwilioStreamSendMark, clear: TwilioStreamClear },
};

/**
 * For the stream route's description (`GET /telephony/twilio/stream`), with `@ApiExtension('x-messages',
 * messagesExtension({ receives: TWILIO_STREAM_FROM_CARRIER, sends: TWILIO_STREAM_TO_CARRIER }))`.
 */
export const TWILIO_STREAM_MESSAGES_DOC =
  'Messages: the carrier sends `TwilioStreamFromCarrier` (`connected`, `start`, `media`, `mark`, `dtmf`, `stop`), the service ' +
  'sends `TwilioStreamToCarrier` (`media`, `mark`, `clear`): schemas in components.schemas, referenced by `x-messages`.';
