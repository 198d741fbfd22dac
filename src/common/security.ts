import { INestApplication } from '@nestjs/common';
import cors from 'cors';
import type { NextFunction, Request, Response } from 'express';
import helmet, { HelmetOptions } from 'helmet';
import { AppConfig } from '../config/config';

/** Headers a browser client of the management API may send, and may read back. */
const ALLOWED_HEADERS = ['X-Api-Key', 'Content-Type', 'X-Request-Id', 'Idempotency-Key'];
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'Content-Disposition',
  'Content-Length',
  'Link',
  'RateLimit',
  'RateLimit-Policy',
  'Idempotent-Replayed',
];

/** Resources may be loaded cross-origin, as the widget script is. */
export const HELMET_OPTIONS: HelmetOptions = { crossOriginResourcePolicy: { policy: 'cross-origin' } };

/** What helmet does to every response: the headers it sets, in its order, and those it removes. */
export interface SecurityHeaders {
  set: [name: string, value: string][];
  removed: string[];
}

/**
 * Helmet's headers, recorded once by running its middleware against a stand-in response. With these options
 * every header is a constant (no CSP nonce, nothing read from the request), so applying the recorded list
 * gives each response what helmet would, without thirteen nested middleware calls per request
 * (test/security.spec.ts compares the two on real responses).
 */
export function recordHelmetHeaders(options: HelmetOptions = HELMET_OPTIONS): SecurityHeaders {
  const headers: SecurityHeaders = { set: [], removed: [] };
  const recorder = {
    setHeader: (name: string, value: unknown) => {
      if (typeof value !== 'string') throw new Error(`helmet set ${name} to a ${typeof value}: its headers can no longer be recorded once`);
      headers.set.push([name, value]);
    },
    removeHeader: (name: string) => headers.removed.push(name),
  };
  let finished = false;
  helmet(options)({ headers: {} } as Request, recorder as unknown as Response, (error?: unknown) => {
    if (error) throw error instanceof Error ? error : new Error('helmet failed', { cause: error });
    finished = true;
  });
  if (!finished) throw new Error('helmet did not finish synchronously: its headers can no longer be recorded once');
  return headers;
}

/**
 * The public widget routes answer CORS themselves (per site, from its allowed domain), and so do the conversation
 * routes (per conversation: its site's domain, or CORS_ORIGINS for an API conversation).
 */
const OWN_CORS_PREFIXES = ['/widget/embed.js', '/widget/config/', '/widget/sessions', '/conversations/'];
const ownsItsCors = (path: string) => OWN_CORS_PREFIXES.some((prefix) => path.startsWith(prefix));

/**
 * Security headers on every response (helmet's, see recordHelmetHeaders), and CORS for the management API
 * limited to CORS_ORIGINS (none by default: the API is for servers and the dashboard's own origin). One
 * middleware. A request without an Origin header skips the cors library: it adds nothing to such a response
 * (its origin check refuses a missing origin before writing any header).
 */
export function applySecurity(app: INestApplication, config: Pick<AppConfig, 'corsOrigins'>): void {
  const { set, removed } = recordHelmetHeaders();
  const managementCors = cors({
    origin: (origin, callback) => callback(null, !!origin && config.corsOrigins.includes(origin)),
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    methods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
    maxAge: 600,
  });
  app.use((request: Request, response: Response, next: NextFunction) => {
    for (const [name, value] of set) response.setHeader(name, value);
    for (const name of removed) response.removeHeader(name);
    if (request.headers.origin === undefined || ownsItsCors(request.path)) return next();
    managementCors(request, response, next);
  });
}
