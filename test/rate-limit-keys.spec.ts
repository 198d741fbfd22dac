import { RATE_LIMIT_STORAGE } from '../src/rate-limit/rate-limit-storage';
import { createTestContext, TestAccount, TestContext } from './helpers';

/** The counters of the in-memory storage, by key. */
const countersOf = (context: TestContext) => context.app.get<unknown, { windows: Map<string, unknown> }>(RATE_LIMIT_STORAGE).windows;

/** The longest key a counter may have: a throttler's name, a bounded credential or hash, an address. */
const MAX_KEY_LENGTH = 120;

describe('rate-limit keys made from what a client sends', () => {
  let context: TestContext;
  let owner: TestAccount;
  beforeAll(async () => {
    // One proxy in front: the client's address is the last X-Forwarded-For entry, which a client without the proxy writes itself.
    context = await createTestContext({ trustProxy: 1, widgetRateLimit: 1_000, unauthenticatedRateLimit: 1_000 });
    owner = await context.createAccount();
  });
  afterAll(() => context.close());

  it('are bounded whatever the site key, conversation id or address, and distinct huge ones do not grow the storage by their size', async () => {
    const counters = countersOf(context);
    const huge = (seed: number, length: number) => `${seed}`.padEnd(length, 'k');
    for (let seed = 0; seed < 3; seed++) {
      await context.http
        .post('/widget/sessions')
        .send({ siteKey: huge(seed, 1_000_000) })
        .expect(404);
      await context.http.get(`/widget/config/${huge(seed, 8_000)}`).expect(404);
      await context.http
        .get(`/conversations/${huge(seed, 8_000)}`)
        .set('Authorization', 'Bearer vac_x')
        .expect(404);
      await context.http.get('/agents').set('X-Forwarded-For', huge(seed, 8_000)).expect(401);
      await context.http
        .get('/widget/embed.js')
        .set('X-Forwarded-For', `${huge(seed, 8_000)}`)
        .expect(200);
    }
    const keys = [...counters.keys()];
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((key) => key.length > MAX_KEY_LENGTH)).toEqual([]);
    expect(keys.reduce((sum, key) => sum + key.length, 0)).toBeLessThan(30 * MAX_KEY_LENGTH);
  });

  it('still count a real site key per key and address, and different addresses apart', async () => {
    const site = (await context.as(owner).post('/widget/sites').send({ name: 'Counted' }).expect(201)).body;
    const counters = countersOf(context);
    await context.http.get(`/widget/config/${site.siteKey}`).set('X-Forwarded-For', '198.51.100.1').expect(200);
    await context.http.get(`/widget/config/${site.siteKey}`).set('X-Forwarded-For', '198.51.100.1').expect(200);
    await context.http.get(`/widget/config/${site.siteKey}`).set('X-Forwarded-For', '198.51.100.2').expect(200);
    const hits = [...counters.entries()]
      .filter(([key]) => key.includes(site.siteKey))
      .map(([key, window]) => [key, (window as { hits: number }).hits]);
    expect(hits).toEqual([
      [`widget:widget:${site.siteKey}|198.51.100.1`, 2],
      [`widget:widget:${site.siteKey}|198.51.100.2`, 1],
    ]);
  });

  it('fold the case of a conversation id (its path takes any case), so that case variants share one counter', async () => {
    const id = 'abcdef00-0000-4000-8000-00000000000a';
    const counters = countersOf(context);
    for (const variant of [id, id.toUpperCase(), 'ABCdef00-0000-4000-8000-00000000000A']) {
      await context.http
        .get(`/conversations/${variant}`)
        .set('Authorization', 'Bearer vac_x')
        .set('X-Forwarded-For', '198.51.100.3')
        .expect(404);
    }
    expect(
      [...counters.entries()].filter(([key]) => key.includes(id)).map(([key, window]) => [key, (window as { hits: number }).hits]),
    ).toEqual([[`widget:widget:${id}|198.51.100.3`, 3]]);
  });
});
