import { createTestContext, TestContext } from './helpers';
// The public list lives in ./routes.ts (shared with the cross-account matrix).
import { PUBLIC_ROUTES, registeredRoutes } from './routes';

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
