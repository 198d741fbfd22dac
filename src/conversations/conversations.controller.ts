import { Body, Controller, Get, Headers, HttpCode, Options, Param, Post, Req, Res, UseInterceptors } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { UuidPipe } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds, WritesOwnResponse } from '../common/responds';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { clientAddressKey } from '../rate-limit/rate-limit';
import { WidgetRateLimit } from '../rate-limit/widget-rate-limit';
import { allowConversationOrigin, allowConversationPreflight, ORIGIN_HEADER } from './conversation-cors';
import { ConversationEnds } from './conversation-ends.service';
import { ConversationLimitHeaders } from './conversation-limits';
import { ConversationReplies } from './conversation-replies.service';
import { ConversationTalk, ConversationView } from './conversation-talk.service';
import { ConversationAccess } from './conversations.repository';
import { ConversationResponse, MessageReplyResponse, toConversationResponse } from './dto/conversation-response.dto';
import { SendMessageDto } from './dto/start-conversation.dto';
import { EventStream } from './event-stream';
import { validatedBody } from './validated-body';

/** The OpenAPI security scheme of the conversation routes (registered in src/openapi.ts). */
export const CONVERSATION_TOKEN_SCHEME = 'conversation-token';

const ConversationId = () => Param('conversationId', new UuidPipe('Conversation'));
const UNKNOWN_CONVERSATION_404 = [404, "No such conversation, or a token that is not this conversation's"] as [number, string];
const ENDED_410 = [410, 'The conversation has ended'] as [number, string];

const STREAM_DESCRIPTION = `The whole reply as JSON; or, with \`Accept: text/event-stream\`, a Server-Sent Events stream:
\`event: delta\` / \`data: {"text": "…"}\` for each piece of the reply as it is produced, then \`event: done\` /
\`data: {"text": "<the whole reply>"}\`. The \`done\` text is what was recorded: when the provider fails part-way, it is
the fixed apology, which replaces the pieces shown so far. The reply is produced and recorded even if the client
goes away.`;

const MESSAGE_409 = `The visitor has sent 100 messages (the limit), or the reply to their previous message is still being
produced: one reply at a time, so send the next message once the reply (or \`done\`) has arrived`;

const MESSAGE_429 = `Too many requests from this address for this conversation, or naming site keys or conversations that do not exist; or too
many replies are being produced at once for the conversation's account, its site or (a widget conversation) this address
(CONVERSATION_MAX_REPLIES_PER_*); see \`Retry-After\``;

/**
 * A conversation's own routes: no API key, the conversation's bearer token instead (a wrong one is a 404, like
 * an unknown conversation). CORS for the widget's page (or, for API conversations, CORS_ORIGINS); rate limited
 * per conversation and client IP like the other public widget routes.
 */
@ApiTags('conversations (bearer token)')
@Public()
@WidgetRateLimit()
@UseInterceptors(ConversationLimitHeaders)
@Controller('conversations')
export class ConversationsController {
  constructor(
    private readonly talk: ConversationTalk,
    private readonly replies: ConversationReplies,
    private readonly ends: ConversationEnds,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Post(':conversationId/messages')
  @ApiBearerAuth(CONVERSATION_TOKEN_SCHEME)
  @ApiOperation({ summary: "Send the visitor's message and get the agent's reply, whole (JSON) or streamed (Server-Sent Events)" })
  @WritesOwnResponse()
  @ApiExtraModels(MessageReplyResponse)
  @ApiOkResponse({
    description: STREAM_DESCRIPTION,
    content: {
      'application/json': { schema: { $ref: getSchemaPath(MessageReplyResponse) } },
      'text/event-stream': {
        schema: {
          type: 'string',
          example: 'event: delta\ndata: {"text":"Yes, "}\n\nevent: done\ndata: {"text":"Yes, we deliver on Sundays."}\n\n',
        },
      },
    },
  })
  @ApiBody({ type: SendMessageDto })
  @ApiErrors(400, UNKNOWN_CONVERSATION_404, [409, MESSAGE_409], ENDED_410, 413, 415, [429, MESSAGE_429])
  async message(
    @ConversationId() conversationId: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('origin') origin: string | undefined,
    @Body() body: unknown,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const dto = await this.messageBody(conversationId, authorization, body, origin, response);
    const turn = await this.talk.accept(conversationId, authorization, dto.text, clientAddressKey(request), (access) =>
      allowConversationOrigin(access, origin, this.config.corsOrigins, response),
    );
    if (request.accepts(['application/json', 'text/event-stream']) === 'text/event-stream') {
      const stream = new EventStream(response);
      const text = await this.replies.reply(turn, (piece) => stream.send('delta', { text: piece }));
      stream.end('done', { text });
    } else {
      const text = await this.replies.reply(turn);
      if (!response.destroyed) response.status(200).json({ text } satisfies MessageReplyResponse);
    }
  }

  @Get(':conversationId')
  @ApiBearerAuth(CONVERSATION_TOKEN_SCHEME)
  @ApiOperation({ summary: 'The conversation so far (the widget shows it again after a page reload)' })
  @Responds(ConversationResponse, toConversationResponse)
  @ApiErrors(UNKNOWN_CONVERSATION_404)
  async get(
    @ConversationId() conversationId: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('origin') origin: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<ConversationView> {
    const access = await this.open(conversationId, authorization, origin, response);
    response.set('Cache-Control', 'no-store');
    return this.talk.view(access);
  }

  @Post(':conversationId/end')
  @ApiBearerAuth(CONVERSATION_TOKEN_SCHEME)
  @NoContent("Ended (or it already had): when the visitor said something, it is now a call with the conversation's id")
  @ApiOperation({ summary: 'End the conversation; again 204 if it has already ended' })
  @ApiErrors(UNKNOWN_CONVERSATION_404)
  @ApiNoBody()
  async end(
    @ConversationId() conversationId: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('origin') origin: string | undefined,
    @Body() body: unknown,
    @Res({ passthrough: true }) response: Response,
  ): Promise<void> {
    const access = await this.open(conversationId, authorization, origin, response);
    refuseBodyFields(body); // after the token, as a message's body is checked
    await this.ends.end(access);
  }

  @Options([':conversationId', ':conversationId/messages', ':conversationId/end'])
  @HttpCode(204)
  @ApiOperation({ summary: 'CORS preflight of the conversation routes, for the pages that started it' })
  @ApiHeader(ORIGIN_HEADER)
  @ApiNoContentResponse({ description: 'Allowed: the CORS headers' })
  @ApiErrors([403, 'This page may not call this conversation'], [404, 'No such conversation'])
  async preflight(
    @ConversationId() conversationId: string,
    @Headers('origin') origin: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<void> {
    allowConversationPreflight(await this.talk.corsRule(conversationId), origin, this.config.corsOrigins, response);
  }

  /** The conversation of the token (404), with the CORS header for the page when it may read the answer. */
  private async open(
    conversationId: string,
    authorization: string | undefined,
    origin: string | undefined,
    response: Response,
  ): Promise<ConversationAccess> {
    const access = await this.talk.authenticate(conversationId, authorization);
    allowConversationOrigin(access, origin, this.config.corsOrigins, response);
    return access;
  }

  /**
   * The message, validated only now: a body that fails validation is a 400 only for the conversation's own
   * token (with the CORS header, so that the page can read it); with a wrong or missing token it is the 404 of
   * any request without it, as a request without an API key is a 401 whatever its body. The token is looked up
   * on that path alone (a valid message is accepted by one statement that checks the token itself).
   */
  private async messageBody(
    conversationId: string,
    authorization: string | undefined,
    body: unknown,
    origin: string | undefined,
    response: Response,
  ): Promise<SendMessageDto> {
    try {
      return await validatedBody(body, SendMessageDto);
    } catch (error) {
      await this.open(conversationId, authorization, origin, response);
      throw error;
    }
  }
}
