import { Controller, Get, Headers, HttpCode, Options, Param, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { Responds, WritesOwnResponse } from '../common/responds';
import { WidgetRateLimit } from '../rate-limit/widget-rate-limit';
import { toWidgetConfigResponse, WidgetConfigResponse } from './dto/widget-config-response.dto';
import { EMBED_SCRIPT, EMBED_SCRIPT_ETAG } from './embed-script';
import { WidgetConfigRow } from './widget-sites.repository';
import { WidgetSitesService } from './widget-sites.service';
import { allowSiteOrigin } from './widget-cors';

/** Cached for an hour, then revalidated cheaply (ETag); pasted snippets never change, so no longer. */
const EMBED_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';
const PREFLIGHT_MAX_AGE_SECONDS = 600;
const ORIGIN_HEADER = {
  name: 'Origin',
  required: false,
  description: 'Sent by the browser; must match the site\'s allowedDomain unless that is ""',
};
const NOT_ALLOWED_403 = [403, "The page's Origin does not match the site's allowedDomain"] as [number, string];
const UNKNOWN_KEY_404 = [404, 'Unknown site key (or one that was rotated, or a deleted site)'] as [number, string];

/** What a customer's web page calls: no API key, identified by the site key, rate limited per key and IP. */
@ApiTags('widget (public)')
@Public()
@WidgetRateLimit()
@Controller('widget')
export class WidgetPublicController {
  constructor(private readonly sites: WidgetSitesService) {}

  @Get('embed.js')
  @WritesOwnResponse()
  @ApiOperation({ summary: 'The widget script the embed snippet loads (public, cacheable, versioned)' })
  @ApiOkResponse({ description: 'JavaScript', content: { 'application/javascript': { schema: { type: 'string' } } } })
  @ApiResponse({
    status: 304,
    description: "Not modified: the `If-None-Match` names the script's `ETag` (weak or strong, alone or in a list, or `*`)",
  })
  embedScript(@Req() request: Request, @Res() response: Response): void {
    response.set({
      'Content-Type': 'application/javascript; charset=utf-8',
      'Cache-Control': EMBED_CACHE_CONTROL,
      ETag: EMBED_SCRIPT_ETAG,
      'X-Content-Type-Options': 'nosniff',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    });
    if (request.fresh) {
      // Express's freshness check (the `fresh` package) against the ETag just set: RFC 9110's If-None-Match.
      response.status(304).end();
      return;
    }
    response.send(EMBED_SCRIPT);
  }

  @Get('config/:siteKey')
  @ApiOperation({ summary: "What the widget needs to render, for pages on the site's allowed domain (CORS)" })
  @ApiHeader(ORIGIN_HEADER)
  @Responds(WidgetConfigResponse, toWidgetConfigResponse)
  @ApiErrors(NOT_ALLOWED_403, UNKNOWN_KEY_404)
  async config(
    @Param('siteKey') siteKey: string,
    @Headers('origin') origin: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<WidgetConfigRow> {
    const config = await this.configForOrigin(siteKey, origin, response);
    response.set('Cache-Control', 'no-store');
    return config;
  }

  @Options('config/:siteKey')
  @HttpCode(204)
  @ApiOperation({ summary: 'CORS preflight of the widget configuration' })
  @ApiHeader(ORIGIN_HEADER)
  @ApiNoContentResponse({ description: 'Allowed: the CORS headers' })
  @ApiErrors(NOT_ALLOWED_403, UNKNOWN_KEY_404)
  async preflight(
    @Param('siteKey') siteKey: string,
    @Headers('origin') origin: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<void> {
    await this.configForOrigin(siteKey, origin, response);
    response.set({
      'Access-Control-Allow-Methods': 'GET, OPTIONS',
      'Access-Control-Allow-Headers': 'Content-Type',
      'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_SECONDS),
    });
  }

  /**
   * What the widget of the key needs (404), if the page's origin may use it (403); sets the CORS headers. Any
   * origin is allowed (`*`) when allowedDomain is "", otherwise the matching origin is echoed.
   */
  private async configForOrigin(siteKey: string, origin: string | undefined, response: Response): Promise<WidgetConfigRow> {
    response.vary('Origin');
    const config = await this.sites.findConfigBySiteKey(siteKey);
    allowSiteOrigin(config.allowedDomain, origin, response);
    return config;
  }
}
