import { INestApplication } from '@nestjs/common';
import cors from 'cors';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { AppConfig } from '../config/config';

/** Headers a browser client of the management API may send, and may read back. */
const ALLOWED_HEADERS = ['X-Api-Key', 'Content-Type', 'X-Request-Id', 'Idempotency-Key'];
const EXPOSED_HEADERS = ['X-Request-Id', 'Retry-After', 'Content-Disposition', 'Content-Length', 'Link', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed'];

/**
 * The public widget routes answer CORS themselves (per site, from its allowed domain), and so do the conversation
 * routes (per conversation: its site's domain, or CORS_ORIGINS for an API conversation).
 */
const OWN_CORS_PREFIXES = ['/widget/embed.js', '/widget/config/', '/widget/sessions', '/conversations/'];
const ownsItsCors = (path: string) => OWN_CORS_PREFIXES.some((prefix) => path.startsWith(prefix));

/**
 * Security headers on every response (helmet; resources may be loaded cross-origin, as the widget script is),
 * and CORS for the management API limited to CORS_ORIGINS (none by default: the API is for servers and the
 * dashboard's own origin).
 */
export function applySecurity(app: INestApplication, config: Pick<AppConfig, 'corsOrigins'>): void {
  app.use(helmet({ crossOriginResourcePolicy: { policy: 'cross-origin' } }));
  const managementCors = cors({
    origin: (origin, callback) => callback(null, !!origin && config.corsOrigins.includes(origin)),
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    methods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
    maxAge: 600,
  });
  app.use((request: Request, response: Response, next: NextFunction) =>
    ownsItsCors(request.path) ? next() : managementCors(request, response, next),
  );
}
