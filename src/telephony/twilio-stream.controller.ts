import { Controller, Get, Res } from '@nestjs/common';
import { ApiExtension, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { messagesExtension } from '../common/message-unions';
import { WritesOwnResponse } from '../common/responds';
import { TWILIO_STREAM_FROM_CARRIER, TWILIO_STREAM_MESSAGES_DOC, TWILIO_STREAM_TO_CARRIER } from './dto/media-stream-messages.dto';
import { SWITCHING_PROTOCOLS_RESPONSE, UPGRADE_REQUIRED_RESPONSE, upgradeRequired } from '../voice/voice-socket.controller';

const STREAM_PROTOCOL = `Twilio's Media Streams protocol over a WebSocket (\`wss://\`, or \`ws://\` when the API's base address
is http): what the carrier connects to when it runs the \`<Connect><Stream>\` TwiML the service answered a call with. No
credential in the handshake: the stream's one-time token comes in its \`start\` message. A request without
\`Upgrade: websocket\` gets a 426.

**From the carrier**: \`connected\`; \`start\` (\`start.streamSid\`, \`start.callSid\`, \`start.customParameters.token\`,
\`start.mediaFormat\` \`audio/x-mulaw\` 8000 Hz mono): a start without a valid token (unknown, used, late, or its call
over), or none within 10 s, closes the stream (1008) and nothing is created; \`media\` (\`media.payload\`: base64 μ-law,
20 ms); \`mark\` (a name the service sent, echoed once the audio before it has played); \`dtmf\` (\`dtmf.digit\`: digits
within 2 s of each other are one caller turn, \`(keypad) 1 2 3\`); \`stop\` (the caller hung up: the conversation ends).
What is not JSON, an unknown event and a malformed message are ignored.

**To the carrier**: \`{"event":"media","streamSid":…,"media":{"payload":<base64 μ-law 8 kHz>}}\`, the agent's voice,
at most about a second ahead of what has played; \`{"event":"mark","streamSid":…,"mark":{"name":…}}\` every 200 ms of
it and after each sentence; \`{"event":"clear","streamSid":…}\` when the caller interrupts.

**Ends**: \`stop\` or the socket closing ends the conversation (\`caller-hung-up\`). When the service ends it (the
agent's \`end_call\`, the idle sweep, \`PHONE_MAX_CALL_SECONDS\`; the agent's \`transfer_call\` gives the call \`<Dial>\` instead), the last sentence plays, the carrier
is asked to complete the call, and the stream closes with 1000. 1013: no room for another call on this instance by
\`start\`; 1001: the instance is stopping; 1009: a message over 64 KiB.

${TWILIO_STREAM_MESSAGES_DOC}`;

/**
 * `GET /telephony/twilio/stream` in the OpenAPI document and, for a request that is not a WebSocket handshake, its
 * answer (a 426 that looks nothing up). The stream itself is TwilioStreamGateway's.
 */
@ApiTags('telephony (carrier webhooks)')
@Public()
@Controller('telephony/twilio')
export class TwilioStreamController {
  @Get('stream')
  @WritesOwnResponse() // every answer is an error, which the exception filter writes
  @ApiOperation({ summary: "The carrier's media stream of a phone call (a WebSocket; a plain GET is a 426)", description: STREAM_PROTOCOL })
  @ApiExtension('x-messages', messagesExtension({ receives: TWILIO_STREAM_FROM_CARRIER, sends: TWILIO_STREAM_TO_CARRIER }))
  @ApiResponse({
    ...SWITCHING_PROTOCOLS_RESPONSE,
    description: 'Switching Protocols: the stream is open; the carrier sends `connected`, then `start`',
  })
  @ApiResponse(UPGRADE_REQUIRED_RESPONSE)
  @ApiErrors([
    503,
    'No room for another call on this instance (`VOICE_MAX_CALLS`), or it is stopping (before the upgrade): see `Retry-After`',
  ])
  stream(@Res() response: Response): never {
    upgradeRequired(response, "This is a WebSocket for the carrier's media streams: connect with Upgrade: websocket");
  }
}
