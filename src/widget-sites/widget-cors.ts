import { ForbiddenException } from '@nestjs/common';
import type { Response } from 'express';
import { originMatches } from './allowed-domain';

/**
 * The CORS rule of the public widget routes that name a site: the page's origin must match the site's
 * allowedDomain (403 in the error shape, and no CORS header, otherwise). Any origin is allowed (`*`) when
 * allowedDomain is "", otherwise the matching origin is echoed.
 */
export function allowSiteOrigin(allowedDomain: string, origin: string | undefined, response: Response): void {
  response.vary('Origin');
  if (!originMatches(allowedDomain, origin)) {
    throw new ForbiddenException(
      origin ? `This widget is not enabled on ${origin.slice(0, 200)}` : 'This widget only answers pages that send an Origin header',
    );
  }
  response.set('Access-Control-Allow-Origin', allowedDomain === '' ? '*' : origin!);
}
