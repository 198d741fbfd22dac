import { Body, ConflictException, Controller, Headers, HttpCode, Options, Post, Req, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiNoContentResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { Responds } from '../common/responds';
import { clientAddressKey } from '../rate-limit/rate-limit';
import { WidgetRateLimit } from '../rate-limit/widget-rate-limit';
import { allowSiteOrigin } from '../widget-sites/widget-cors';
import { WidgetSitesService } from '../widget-sites/widget-sites.service';
import { allowSessionPreflight, ORIGIN_HEADER } from './conversation-cors';
import { ConversationLimitHeaders } from './conversation-limits';
import { ConversationStarts, StartedConversation } from './conversation-starts.service';
import { StartedConversationResponse, toStartedConversationResponse } from './dto/conversation-response.dto';
import { StartWidgetSessionDto } from './dto/start-conversation.dto';
import { validatedBody } from './validated-body';

const WIDGET_START_429 = `Too many requests from this address, or naming site keys or conversations that do not exist; or the site or its account
has as many active conversations as it may (CONVERSATION_MAX_ACTIVE_PER_SITE, _PER_ACCOUNT); or this address started
CONVERSATION_MAX_STARTS_PER_ADDRESS conversations in the window, whatever the sites; see \`Retry-After\``;

/** A widget visitor starts a conversation with the site's agent (public: by site key, from an allowed page). */
@ApiTags('widget (public)')
@Public()
@WidgetRateLimit()
@UseInterceptors(ConversationLimitHeaders)
@Controller('widget')
export class WidgetSessionsController {
  constructor(
    private readonly sites: WidgetSitesService,
    private readonly starts: ConversationStarts,
  ) {}

  @Post('sessions')
  @ApiOperation({ summary: "Start a conversation with the site's agent, from a page on the site's allowed domain (CORS)" })
  @ApiHeader(ORIGIN_HEADER)
  @Responds(StartedConversationResponse, toStartedConversationResponse, { status: 201 })
  @ApiBody({ type: StartWidgetSessionDto })
  @ApiErrors(
    400,
    [403, "The page's Origin does not match the site's allowedDomain"],
    [404, 'Unknown site key (or one that was rotated, or a deleted site)'],
    [409, 'The site has no agent to talk to'],
    413,
    415,
    [429, WIDGET_START_429],
  )
  async start(
    @Body() body: unknown,
    @Headers('origin') origin: string | undefined,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<StartedConversation> {
    // The site first (404, then 403 for another page), the rest of the body then: the page may read its 400. (The
    // global pipe would check the body before the site; a guard would throw the 404 outside WidgetRateLimit's count.)
    const siteKey = (body as { siteKey?: unknown } | undefined)?.siteKey; // no body at all: undefined
    const site = typeof siteKey === 'string' ? await this.sites.findSessionSiteBySiteKey(siteKey) : undefined;
    if (site) allowSiteOrigin(site.allowedDomain, origin, response);
    const dto = await validatedBody(body, StartWidgetSessionDto);
    const { accountId, agent, allowedDomain, widgetGreeting, agentVersion } = site!; // found: a valid body has a string siteKey
    if (!agent) throw new ConflictException('This widget site has no agent to talk to');
    return this.starts.startOnSite(
      { id: site!.id, accountId, agent, allowedDomain, greeting: widgetGreeting, agentVersion },
      origin,
      { name: dto.name!, phone: dto.phone! },
      clientAddressKey(request),
    );
  }

  @Options('sessions')
  @HttpCode(204)
  @ApiOperation({
    summary:
      'CORS preflight of starting a session: the site key is in the body, so any page may ask; the POST itself refuses pages the site does not allow',
  })
  @ApiHeader(ORIGIN_HEADER)
  @ApiNoContentResponse({ description: 'The CORS headers' })
  preflight(@Headers('origin') origin: string | undefined, @Res({ passthrough: true }) response: Response): void {
    allowSessionPreflight(origin, response);
  }
}
