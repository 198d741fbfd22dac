import { Injectable, Module, OnModuleInit } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import PgBoss from 'pg-boss';
import { loadConfig } from '../src/config/config';
import { ConfigModule } from '../src/config/config.module';
import { Database } from '../src/database/database';
import { DatabaseModule } from '../src/database/database.module';
import { dataSourceOptions } from '../src/database/data-source-options';
import { JobDefinition, Jobs } from '../src/jobs/jobs.service';
import { JobsModule } from '../src/jobs/jobs.module';

/** What the test jobs did, by instance. */
const done: { instance: string; value: number }[] = [];
const attempts = new Map<number, number>();

@Injectable()
class TestJobs implements OnModuleInit {
  constructor(private readonly jobs: Jobs) {}
  onModuleInit(): void {
    const instance = (this.jobs as unknown as { instanceName: string }).instanceName;
    const record: JobDefinition<{ value: number }>['handler'] = async ({ value }) => {
      done.push({ instance, value });
    };
    this.jobs.define({ name: 'test.record', handler: record, concurrency: 8, expireInSeconds: 30 });
    this.jobs.define<{ value: number }>({
      name: 'test.flaky',
      expireInSeconds: 30,
      retryLimit: 2,
      retryDelay: 1,
      handler: async ({ value }) => {
        attempts.set(value, (attempts.get(value) ?? 0) + 1);
        if (attempts.get(value)! < 2) throw new Error('first attempt fails');
        done.push({ instance, value });
      },
    });
    this.jobs.define({ name: 'test.expiring', handler: record, retryLimit: 1, retryDelay: 0, expireInSeconds: 1 });
  }
}

/** One service instance's job queue (its own pool and workers) on the schema given. */
async function instance(name: string, schema: string) {
  const config = { ...loadConfig({ ...process.env, LOG_LEVEL: 'silent' }), jobQueueSchema: schema, jobMaintenanceIntervalSeconds: 1 };
  @Module({ providers: [TestJobs] })
  class TestModule {}
  const module = await Test.createTestingModule({
    imports: [ConfigModule.forRoot(config), TypeOrmModule.forRoot(dataSourceOptions(process.env.DATABASE_URL!, config)), DatabaseModule, JobsModule, TestModule],
  }).compile();
  Object.assign(module.get(Jobs), { instanceName: name });
  const app = await module.createNestApplication({ logger: false }).init();
  return { app, jobs: app.get(Jobs), database: app.get(Database) };
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}

const valuesDone = (from: number, to: number) => done.filter(({ value }) => value >= from && value < to);

describe('the job queue (pg-boss)', () => {
  const schema = `jobs_${randomBytes(6).toString('hex')}`;
  let a: Awaited<ReturnType<typeof instance>>;
  let b: Awaited<ReturnType<typeof instance>>;

  beforeAll(async () => {
    a = await instance('a', schema);
    b = await instance('b', schema);
  }, 60_000);
  afterAll(async () => {
    await a?.app.close();
    await b?.app.close();
  });

  it('runs a job sent by any instance, once', async () => {
    await a.jobs.send('test.record', { value: 1 });
    await until(() => valuesDone(1, 2).length === 1);
    await sleep(300);
    expect(valuesDone(1, 2)).toHaveLength(1);
  });

  it('enqueues inside a transaction: a rolled-back transaction leaves no job, a committed one does', async () => {
    await expect(
      a.database.transaction(async (sql) => {
        await a.jobs.send('test.record', { value: 10 }, { sql });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await a.database.transaction((sql) => a.jobs.send('test.record', { value: 11 }, { sql }));
    await until(() => valuesDone(11, 12).length === 1);
    await sleep(300);
    expect(valuesDone(10, 12).map(({ value }) => value)).toEqual([11]);
  });

  it('does each of 200 jobs exactly once with two instances working the queue', async () => {
    await Promise.all(Array.from({ length: 200 }, (_, index) => (index % 2 ? a : b).jobs.send('test.record', { value: 1000 + index })));
    await until(() => valuesDone(1000, 1200).length >= 200);
    await sleep(500);
    const values = valuesDone(1000, 1200).map(({ value }) => value);
    expect(values).toHaveLength(200);
    expect(new Set(values).size).toBe(200);
  }, 30_000);

  it('retries a job whose handler failed', async () => {
    await a.jobs.send('test.flaky', { value: 2000 });
    await until(() => valuesDone(2000, 2001).length === 1);
    expect(attempts.get(2000)).toBe(2);
  });

  it('retries, on a live instance, a job that an instance took and never finished (it died mid-job)', async () => {
    // A third "instance" takes the job straight from the queue and then never completes it, as a killed process would.
    const dead = new PgBoss({ connectionString: process.env.DATABASE_URL!, schema, supervise: false, schedule: false, migrate: false });
    await dead.start();
    try {
      // Queued for later, so that the live workers cannot take it first; the dead instance takes it anyway.
      await dead.send('test.expiring', { value: 3000 }, { startAfter: new Date(Date.now() + 3_600_000) });
      const [taken] = await dead.fetch('test.expiring', { ignoreStartAfter: true });
      expect(taken.data).toEqual({ value: 3000 });
      // Expires after 1 s; maintenance (every second here) fails it; its retry runs on a or b.
      await until(() => valuesDone(3000, 3001).length === 1);
    } finally {
      await dead.stop({ graceful: false, wait: true });
    }
  });

  it('refuses to send to a queue no module defined', async () => {
    await expect(a.jobs.send('test.unknown', {})).rejects.toThrow('not defined');
  });
});
