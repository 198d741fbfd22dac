import type { Response } from 'express';
import { originMatches } from '../widget-sites/allowed-domain';
import type { ConversationCorsRule } from './conversations.repository';

/** What a browser page may send to a conversation's routes, and for how long it may cache that. */
export const CONVERSATION_PREFLIGHT = {
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, X-Request-Id',
  'Access-Control-Max-Age': '600',
};

/**
 * CORS for a conversation's routes, which answer CORS themselves (like the public widget routes): a widget
 * conversation answers the pages its site allowed when it started (`*` when the site allows every page); an API
 * conversation (the dashboard's) answers CORS_ORIGINS, like the management API. Returns whether `origin` may
 * read the answer; the header is set only then.
 */
export function allowConversationOrigin(
  rule: ConversationCorsRule,
  origin: string | undefined,
  corsOrigins: string[],
  response: Response,
): boolean {
  response.vary('Origin');
  const allowed = rule.allowedDomain === null ? !!origin && corsOrigins.includes(origin) : originMatches(rule.allowedDomain, origin);
  if (allowed) response.set('Access-Control-Allow-Origin', rule.allowedDomain === '' ? '*' : origin!);
  return allowed;
}
