import { Controller, Get, HttpException, Res } from '@nestjs/common';
import { ApiExtension, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { ErrorResponse } from '../common/error-response.dto';
import { messagesExtension } from '../common/message-unions';
import { WritesOwnResponse } from '../common/responds';
import { VOICE_CLIENT_MESSAGES, VOICE_SERVER_MESSAGES } from './dto/voice-socket-messages.dto';

const UPGRADE_REQUIRED = 426;

/** The 426 of a WebSocket route asked for without `Upgrade: websocket` (written by the exception filter). */
export function upgradeRequired(response: Response, message: string): never {
  response.setHeader('Upgrade', 'websocket');
  // A 426 names the protocol in Upgrade (RFC 9110 section 15.5.22, formerly RFC 7231 section 6.5.15), and an
  // Upgrade header is listed in Connection (section 7.8). Node keeps the connection open for any Connection header
  // without `close`, so `close` is added where the connection was to close (the client asked for it, HTTP/1.0).
  response.setHeader('Connection', response.shouldKeepAlive ? 'Upgrade' : 'Upgrade, close');
  throw new HttpException(message, UPGRADE_REQUIRED);
}

/** The 426's OpenAPI description, for a WebSocket route. */
export const UPGRADE_REQUIRED_RESPONSE = {
  status: UPGRADE_REQUIRED,
  description:
    'Upgrade Required: a request without `Upgrade: websocket`. The same answer whatever the id (nothing is looked up), without any credential',
  type: ErrorResponse,
  headers: {
    Upgrade: { description: 'The protocol to upgrade to', schema: { type: 'string', enum: ['websocket'] } },
    Connection: { description: '`Upgrade` (with `close` when the connection closes)', schema: { type: 'string', example: 'Upgrade' } },
  },
};

/** The 101's OpenAPI description, for a WebSocket route. */
export const SWITCHING_PROTOCOLS_RESPONSE = {
  status: 101,
  headers: {
    Upgrade: { schema: { type: 'string', enum: ['websocket'] } },
    Connection: { schema: { type: 'string', enum: ['Upgrade'] } },
    'Sec-WebSocket-Accept': { description: 'RFC 6455 section 4.2.2', schema: { type: 'string' } },
  },
};

const SOCKET_PROTOCOL = `A WebSocket (RFC 6455): open it with \`ws://\` or \`wss://\` at this path, as the API's base
address is http or https. No API key, and no token in the URL: the conversation's token travels in the first frame.
This operation is documented for the socket; a request without \`Upgrade: websocket\` gets a 426 (the same for any
conversation id: nothing is looked up).

**Handshake** (answered before the upgrade, in the error shape, without looking the conversation up: an existing one
and an unknown one get the same answer): 503 with \`Retry-After\` when the instance serves as many spoken calls as it
may (\`VOICE_MAX_CALLS\`; \`GET /health\` reports the load) or while it stops; 429 with \`Retry-After\` for an address
over the budget of the widget routes' credentials that do not exist (\`UNAUTHENTICATED_RATE_LIMIT\`: every socket that
proves no token counts in it as their 404s do) or over the widget rate limit of the conversation's routes
(\`WIDGET_RATE_LIMIT\`, per conversation and client address). Whether the conversation exists, and which pages may
open it, is told only after \`start\`, to its token.

**Start**: within 10 s, the client's first frame is text: \`{"type":"start","token":"vac_…","sampleRate":16000}\`
(\`sampleRate\`: the rate of the audio it will send, a whole number from 8000 to 48000; default 16000). The service
answers \`{"type":"ready","sampleRate":16000,"input":"speech"|"text"}\`: the rate of the audio it sends, and
\`speech\` when it transcribes the audio itself (\`STT_PROVIDER\`), \`text\` when the client sends what the browser
recognised as text frames (the audio is still recorded). The greeting, when there is one, is spoken first (on the
conversation's first socket, cut off when the visitor speaks first).

**Client → service**: binary frames of 16-bit little-endian mono PCM at \`sampleRate\`, 10–200 ms each (a burst of up
to 30 s, then at most twice real time); \`{"type":"text","text":"…"}\` (an utterance recognised in the browser or
typed, with the rules of a message: one that breaks them gets an \`error\` and the socket stays open);
\`{"type":"end"}\` (ends the conversation, as \`POST …/end\`). At most 5 text frames a second.

**Service → client**: \`{"type":"transcript","text":"…","final":false|true}\` (the visitor's speech as heard, one
final per utterance); \`{"type":"reply","text":"…"}\` (pieces of the agent's reply as produced);
\`{"type":"reply.done","text":"<what the agent said>","interrupted":false|true}\`; binary frames of 16-bit
little-endian mono PCM at the \`ready\` rate (the agent's voice, sent at the pace it plays); \`{"type":"clear"}\`
(drop the agent audio not yet played: the visitor interrupted); \`{"type":"error","message":"…"}\`;
\`{"type":"ended"}\`, then close 1000. The service pings every 15 s; a client that answers no ping, or does not read
what it is sent, is dropped.

**Close codes**: 4404 a wrong token or an unknown conversation; 4403 an \`Origin\` the conversation's routes refuse
(a widget conversation: the pages of its site's allowed domain; an API conversation: \`CORS_ORIGINS\` or no
\`Origin\`); 4429 the client's address went over the budget above after the upgrade (the reason says when to retry);
1013 no room for another call on this instance by \`start\` (retry in a few seconds); 4408 no \`start\` within 10 s;
4409 the conversation already has a live socket (the first keeps going; one still closing is waited for), or another
socket took it over; 4410 the conversation had ended by \`start\`; 1007 a frame that is not what it claims
(malformed JSON or not an object, an odd byte count, invalid UTF-8); 1008 a frame against the rules (audio before
\`start\`, a first message that is not \`start\`, a bad \`token\` or \`sampleRate\`, over 50 frames before
\`ready\`, audio outside 10–200 ms or faster than twice real time after a 30 s burst, over 5 text frames a second,
an unknown \`type\`); 1009 a frame over 256 KiB (the WebSocket library's "message too big"); 1011 a fault of the
service's (reconnect); 1001 the instance is stopping (reconnect: another instance continues); 1000 after \`ended\`.
The service's own 1007, 1008 and 1011 follow an \`error\` message. A socket that closes does not end the
conversation (\`end\`, \`POST …/end\` or the idle rule do): a new socket may continue it.

**Schemas**: the text frames are \`VoiceClientMessage\` (\`start\`, \`text\`, \`end\`) and \`VoiceServerMessage\`
(\`ready\`, \`transcript\`, \`reply\`, \`reply.done\`, \`clear\`, \`error\`, \`ended\`), unions on \`type\` in
components.schemas, which this operation's \`x-messages\` refers to (\`receives\`: what the service receives).`;

/**
 * `GET /conversations/{conversationId}/voice` in the OpenAPI document and, for a request that is not a WebSocket
 * handshake, its answer. The socket itself is VoiceGateway's: it takes every `Upgrade: websocket` request to this
 * path on the HTTP server's `upgrade` event, before Express, so what reaches this route asked for no socket. The
 * 426 looks nothing up, so it needs no credential, says nothing of the conversation and is not rate limited.
 */
@ApiTags('conversations (bearer token)')
@Public()
@Controller('conversations')
export class VoiceSocketController {
  @Get(':conversationId/voice')
  @WritesOwnResponse() // every answer is an error, which the exception filter writes
  @ApiOperation({ summary: 'The voice socket: speak the conversation (a WebSocket; a plain GET is a 426)', description: SOCKET_PROTOCOL })
  @ApiExtension('x-messages', messagesExtension({ receives: VOICE_CLIENT_MESSAGES, sends: VOICE_SERVER_MESSAGES }))
  @ApiParam({ name: 'conversationId', type: String, format: 'uuid', description: 'The `conversationId` the conversation was started with' })
  @ApiResponse({ ...SWITCHING_PROTOCOLS_RESPONSE, description: 'Switching Protocols: the WebSocket is open; send `start` within 10 s' })
  @ApiResponse(UPGRADE_REQUIRED_RESPONSE)
  @ApiErrors(
    [
      429,
      "Too many requests from this address: credentials that do not exist, or this conversation's widget rate limit (before the upgrade); see `Retry-After`",
    ],
    [
      503,
      'No room for another call on this instance (`VOICE_MAX_CALLS`), or it is stopping (before the upgrade): see `Retry-After`, or connect again',
    ],
  )
  voice(@Res() response: Response): never {
    upgradeRequired(response, 'This is a WebSocket: connect with Upgrade: websocket, then send {"type":"start","token":"vac_…"}');
  }
}
