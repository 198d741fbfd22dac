import { ForbiddenException } from '@nestjs/common';
import type { ApiHeaderOptions } from '@nestjs/swagger';
import type { Response } from 'express';
import { originMatches } from '../widget-sites/allowed-domain';
import type { ConversationCorsRule } from './conversations.repository';

/** What a browser page may send to a conversation's routes, and for how long it may cache that. */
export const CONVERSATION_PREFLIGHT = {
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, X-Request-Id',
  'Access-Control-Max-Age': '600',
};

/** The Origin header of the routes a widget's page calls, as documented. */
export const ORIGIN_HEADER: ApiHeaderOptions = {
  name: 'Origin',
  required: false,
  description: 'Sent by the browser; must match the site\'s allowedDomain unless that is ""',
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
  const allowed = conversationOriginAllowed(rule, origin, corsOrigins);
  if (allowed) response.set('Access-Control-Allow-Origin', rule.allowedDomain === '' ? '*' : origin!);
  return allowed;
}

/**
 * Whether a page at `origin` may call the conversation: its site's allowed domain for a widget conversation,
 * CORS_ORIGINS for an API conversation (the voice socket's handshake, which has no CORS, adds: or no Origin).
 */
export function conversationOriginAllowed(rule: ConversationCorsRule, origin: string | undefined, corsOrigins: string[]): boolean {
  return rule.allowedDomain === null ? !!origin && corsOrigins.includes(origin) : originMatches(rule.allowedDomain, origin);
}

/** A preflight of a conversation's routes: its CORS headers for a page that may call it, else a 403. */
export function allowConversationPreflight(
  rule: ConversationCorsRule,
  origin: string | undefined,
  corsOrigins: string[],
  response: Response,
): void {
  if (!allowConversationOrigin(rule, origin, corsOrigins, response))
    throw new ForbiddenException('This page may not call this conversation');
  response.set(CONVERSATION_PREFLIGHT);
}

/**
 * A preflight of starting a widget session: the site key is in the body, so any page may ask (the POST itself
 * refuses pages the site does not allow); no headers without an Origin.
 */
export function allowSessionPreflight(origin: string | undefined, response: Response): void {
  response.vary('Origin');
  if (!origin) return;
  response.set({
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
    'Access-Control-Allow-Headers': 'Content-Type',
    'Access-Control-Max-Age': CONVERSATION_PREFLIGHT['Access-Control-Max-Age'],
  });
}
