import { createTestContext, TestContext } from './helpers';

/**
 * Secure by default: every route of the HTTP server answers 401 without a key, unless it is on this list.
 * Adding a public route means adding it here, on purpose.
 */
const PUBLIC_ROUTES = [
  'GET /health',
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
];

/** Middleware applied to every path (JSON body parsing) registers a catch-all layer: not a route. */
const isMiddlewareLayer = (path: string) => path.includes('*');

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
}

function registeredRoutes(context: TestContext): string[] {
  const express = context.app.getHttpAdapter().getInstance();
  const stack: Layer[] = express.router.stack;
  return stack
    .filter((layer) => layer.route && !isMiddlewareLayer(layer.route.path))
    .flatMap((layer) => Object.keys(layer.route!.methods).map((method) => `${method.toUpperCase()} ${layer.route!.path}`));
}

/** A concrete path for a route pattern: every parameter gets a plausible id. */
const concretePath = (pattern: string) =>
  pattern.replace(/:(\w+)/g, (_, name: string) => (/^call/i.test(name) ? '00000000-0000-4000-8000-000000000001' : '1'));

describe('route walk', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext()));
  afterAll(() => context.close());

  it('finds the application routes', () => {
    expect(registeredRoutes(context)).toEqual(expect.arrayContaining(['GET /health', 'GET /openapi.json']));
  });

  it('refuses every non-public route without an API key', async () => {
    const routes = registeredRoutes(context);
    const unprotected: string[] = [];
    for (const route of routes) {
      if (PUBLIC_ROUTES.includes(route)) continue;
      const [method, pattern] = route.split(' ');
      const response = await context.http[method.toLowerCase() as 'get'](concretePath(pattern));
      if (response.status !== 401) unprotected.push(`${route} answered ${response.status}`);
    }
    expect(unprotected).toEqual([]);
  });

  it('lists only routes that exist as public', () => {
    const routes = registeredRoutes(context);
    expect(PUBLIC_ROUTES.filter((route) => !routes.includes(route))).toEqual([]);
  });
});
