import { TestContext } from './helpers';

/**
 * Secure by default: every route of the HTTP server answers 401 without a key, unless it is on this list.
 * Adding a public route means adding it here, on purpose.
 */
export const PUBLIC_ROUTES = [
  'GET /health',
  'GET /health/live',
  'GET /health/ready',
  'GET /openapi.json',
  // Swagger UI
  'GET /docs',
  'GET /docs/',
  'GET /docs/index.html',
  'GET /docs/LICENSE',
  'GET /docs/swagger-ui-init.js',
  'GET /docs/docs/swagger-ui-init.js',
  // The embeddable website widget: identified by its site key, rate limited, CORS for the allowed domain
  'GET /widget/embed.js',
  'GET /widget/config/:siteKey',
  'OPTIONS /widget/config/:siteKey',
  // Starting a widget conversation: the site key (in the body) and the page's Origin, like the config
  'POST /widget/sessions',
  'OPTIONS /widget/sessions',
  // A conversation's routes: its bearer token is the credential (a wrong one is a 404); CORS per conversation
  'POST /conversations/:conversationId/messages',
  'GET /conversations/:conversationId',
  'POST /conversations/:conversationId/end',
  'OPTIONS /conversations/:conversationId',
  'OPTIONS /conversations/:conversationId/messages',
  'OPTIONS /conversations/:conversationId/end',
  // The voice socket: its token comes in the first frame; a plain GET is a 426 that looks nothing up
  'GET /conversations/:conversationId/voice',
  // Recording playback through a signed, expiring URL (local storage driver): the URL is the credential
  'GET /recordings/:token',
  // The carrier's webhooks (Twilio): signed with the number's auth token (403 otherwise), rate limited per number and address
  'POST /telephony/twilio/:phoneNumberId/incoming',
  'POST /telephony/twilio/:phoneNumberId/status',
  // The carrier's media stream: its one-time token comes in the `start` message; a plain GET is a 426 that looks nothing up
  'GET /telephony/twilio/stream',
];

/** Routes that read an `application/x-www-form-urlencoded` body (the carrier's webhooks), not JSON. */
export const FORM_BODY_ROUTES = ['POST /telephony/twilio/:phoneNumberId/incoming', 'POST /telephony/twilio/:phoneNumberId/status'];

/** Middleware applied to every path (JSON body parsing) registers a catch-all layer: not a route. */
const isMiddlewareLayer = (path: string) => path.includes('*');

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
}

export function registeredRoutes(context: TestContext): string[] {
  const express = context.app.getHttpAdapter().getInstance();
  const stack: Layer[] = express.router.stack;
  return stack
    .filter((layer) => layer.route && !isMiddlewareLayer(layer.route.path))
    .flatMap((layer) => Object.keys(layer.route!.methods).map((method) => `${method.toUpperCase()} ${layer.route!.path}`));
}
