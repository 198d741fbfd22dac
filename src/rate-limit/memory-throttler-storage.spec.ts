import { MemoryThrottlerStorage } from './memory-throttler-storage';

describe('MemoryThrottlerStorage', () => {
  let storage: MemoryThrottlerStorage;
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    storage = new MemoryThrottlerStorage();
  });
  afterEach(() => {
    storage.onApplicationShutdown();
    jest.useRealTimers();
  });

  it('counts hits in a fixed window and blocks once over the limit, until the block ends', async () => {
    for (let i = 1; i <= 3; i++)
      expect(await storage.increment('k', 60_000, 3, 60_000, 'api-key')).toMatchObject({ totalHits: i, isBlocked: false });
    expect(await storage.increment('k', 60_000, 3, 60_000, 'api-key')).toMatchObject({
      totalHits: 4,
      isBlocked: true,
      timeToBlockExpire: 60,
    });
    jest.advanceTimersByTime(30_000);
    expect(await storage.increment('k', 60_000, 3, 60_000, 'api-key')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 30,
      timeToExpire: 30,
    });
    jest.advanceTimersByTime(30_001);
    expect(await storage.increment('k', 60_000, 3, 60_000, 'api-key')).toMatchObject({ totalHits: 1, isBlocked: false });
  });

  it('tells how long a key stays blocked, without counting a hit', async () => {
    expect(await storage.blockedFor('k', 'unauthenticated')).toBe(0);
    for (let i = 0; i < 3; i++) await storage.increment('k', 60_000, 2, 60_000, 'unauthenticated');
    jest.advanceTimersByTime(20_000);
    expect(await storage.blockedFor('k', 'unauthenticated')).toBe(40);
    expect(await storage.increment('k', 60_000, 2, 60_000, 'unauthenticated')).toMatchObject({ totalHits: 4 });
    expect(await storage.blockedFor('k', 'other')).toBe(0);
  });

  it('keeps keys and throttlers apart', async () => {
    await storage.increment('a', 60_000, 1, 60_000, 'api-key');
    expect(await storage.increment('b', 60_000, 1, 60_000, 'api-key')).toMatchObject({ totalHits: 1 });
    expect(await storage.increment('a', 60_000, 1, 60_000, 'widget')).toMatchObject({ totalHits: 1 });
  });

  it('keeps one counter per key, not one entry per hit, whatever the limit', async () => {
    for (let i = 0; i < 10_000; i++) await storage.increment('hot', 60_000, 100_000_000, 60_000, 'api-key');
    const windows = (storage as unknown as { windows: Map<string, { hits: number }> }).windows;
    expect([...windows.values()]).toEqual([expect.objectContaining({ hits: 10_000 })]);
  });

  it('forgets windows that have ended', async () => {
    await storage.increment('old', 1_000, 10, 1_000, 'api-key');
    jest.advanceTimersByTime(61_000);
    expect((storage as unknown as { windows: Map<string, unknown> }).windows.size).toBe(0);
  });
});
