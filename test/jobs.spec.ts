import { Injectable, Module, OnModuleInit } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { createHook } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import PgBoss from 'pg-boss';
import { loadConfig } from '../src/config/config';
import { ConfigModule } from '../src/config/config.module';
import { Database } from '../src/database/database';
import { DatabaseModule } from '../src/database/database.module';
import { dataSourceOptions } from '../src/database/data-source-options';
import { JobDefinition, Jobs, NotYet } from '../src/jobs/jobs.service';
import { JobsModule } from '../src/jobs/jobs.module';

/** What the test jobs did, by instance. */
const done: { instance: string; value: number }[] = [];
const attempts = new Map<number, number>();
/** Jobs of test.gated wait for their value's gate to open; `started` records that they began. */
const gates = new Map<number, () => void>();
const started: number[] = [];
/** The values of each batch test.batch got. */
const batches: number[][] = [];

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
    this.jobs.define<{ value: number }>({
      name: 'test.not-yet',
      expireInSeconds: 30,
      retryLimit: 2,
      retryDelay: 1,
      handler: async ({ value }) => {
        attempts.set(value, (attempts.get(value) ?? 0) + 1);
        if (attempts.get(value)! < 2) throw new NotYet('what it waits for is under way');
        done.push({ instance, value });
      },
    });
    this.jobs.define({ name: 'test.expiring', handler: record, retryLimit: 1, retryDelay: 0, expireInSeconds: 1 });
    this.jobs.define<{ value: number }>({
      name: 'test.batch',
      concurrency: 50,
      expireInSeconds: 30,
      retryLimit: 2,
      retryDelay: 1,
      batchHandler: async (jobs) => {
        batches.push(jobs.map(({ data }) => data.value));
        for (const { data } of jobs) attempts.set(data.value, (attempts.get(data.value) ?? 0) + 1);
        // A batch holding a job's first attempt at a value of 5000 or more fails whole.
        if (jobs.some(({ data }) => data.value >= 5000 && attempts.get(data.value) === 1)) throw new Error('the batch fails');
        for (const { data } of jobs) done.push({ instance, value: data.value });
      },
    });
    this.jobs.define<{ value: number }>({
      name: 'test.gated',
      workers: 2,
      expireInSeconds: 30,
      handler: async ({ value }) => {
        started.push(value);
        await new Promise<void>((open) => gates.set(value, open));
        done.push({ instance, value });
      },
    });
  }
}

/** One service instance's job queue (its own pool and workers) on the schema given. */
async function instance(name: string, schema: string, jobWorkers = true) {
  const config = {
    ...loadConfig({ ...process.env, LOG_LEVEL: 'silent' }),
    jobQueueSchema: schema,
    jobMaintenanceIntervalSeconds: 1,
    jobWorkers,
  };
  @Module({ providers: [TestJobs] })
  class TestModule {}
  const module = await Test.createTestingModule({
    imports: [
      ConfigModule.forRoot(config),
      TypeOrmModule.forRoot(dataSourceOptions(process.env.DATABASE_URL!, config)),
      DatabaseModule,
      JobsModule,
      TestModule,
    ],
  }).compile();
  Object.assign(module.get(Jobs), { instanceName: name });
  const app = await module.createNestApplication({ logger: false }).init();
  return { app, jobs: app.get(Jobs), database: app.get(Database) };
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}

/**
 * The fence of "exactly once": every job of the queue in the schema has completed. A job runs its handler before
 * pg-boss completes it, and a completed job is never fetched again, so from here on no run can be added.
 */
async function queueSettled(database: Database, schema: string, queue: string): Promise<void> {
  await until(async () => {
    const [{ unsettled }] = await database.query<{ unsettled: number }>(
      `SELECT count(*)::int AS unsettled FROM ${schema}.job WHERE name = $1 AND state <> 'completed'`,
      [queue],
    );
    return unsettled === 0;
  });
}

/** The values of the jobs of the queue that exist in the schema, whatever their state. */
async function jobValues(database: Database, schema: string, queue: string, from: number, to: number): Promise<number[]> {
  const rows = await database.query<{ value: number }>(
    `SELECT (data->>'value')::int AS value FROM ${schema}.job WHERE name = $1 AND (data->>'value')::int >= $2 AND (data->>'value')::int < $3`,
    [queue, from, to],
  );
  return rows.map(({ value }) => value).sort();
}

/**
 * Timers pg-boss's manager creates from now on (its worker-stop loop's, among others): how many are neither
 * cleared nor fired yet.
 */
function pgBossManagerTimers() {
  const timers = new Map<number, { _destroyed?: boolean }>();
  const hook = createHook({
    init(asyncId, type, _triggerId, resource) {
      if (type !== 'Timeout') return;
      const { stackTraceLimit } = Error;
      Error.stackTraceLimit = 50;
      const stack = new Error().stack ?? '';
      Error.stackTraceLimit = stackTraceLimit;
      if (/pg-boss\/src\/manager\.js/.test(stack)) timers.set(asyncId, resource);
    },
  }).enable();
  return {
    alive: () => [...timers.values()].filter((timer) => !timer._destroyed).length,
    disable: () => hook.disable(),
  };
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
    await queueSettled(a.database, schema, 'test.record');
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
    // The rolled-back job does not exist, in any state, so it can never run.
    expect(await jobValues(a.database, schema, 'test.record', 10, 12)).toEqual([11]);
    await queueSettled(a.database, schema, 'test.record');
    expect(valuesDone(10, 12).map(({ value }) => value)).toEqual([11]);
  });

  it('does each of 200 jobs exactly once with two instances working the queue', async () => {
    await Promise.all(Array.from({ length: 200 }, (_, index) => (index % 2 ? a : b).jobs.send('test.record', { value: 1000 + index })));
    await until(() => valuesDone(1000, 1200).length >= 200);
    await queueSettled(a.database, schema, 'test.record');
    const values = valuesDone(1000, 1200).map(({ value }) => value);
    expect(values).toHaveLength(200);
    expect(new Set(values).size).toBe(200);
  }, 30_000);

  it('retries a job whose handler failed', async () => {
    await a.jobs.send('test.flaky', { value: 2000 });
    await until(() => valuesDone(2000, 2001).length === 1);
    expect(attempts.get(2000)).toBe(2);
  });

  it('retries a job whose handler said it was not due yet, without a warning in the logs', async () => {
    const warnings = [a, b].map(({ jobs }) => jest.spyOn((jobs as unknown as { logger: { warn: () => void } }).logger, 'warn'));
    try {
      await a.jobs.send('test.not-yet', { value: 2100 });
      await until(() => valuesDone(2100, 2101).length === 1);
      expect(attempts.get(2100)).toBe(2);
      for (const warning of warnings) expect(warning).not.toHaveBeenCalled();
    } finally {
      for (const warning of warnings) warning.mockRestore();
    }
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

  it('sends many jobs in one statement, inside a transaction: none if it rolls back, each once if it commits', async () => {
    const values = Array.from({ length: 100 }, (_, index) => 4000 + index);
    await expect(
      a.database.transaction(async (sql) => {
        await a.jobs.sendMany(
          'test.batch',
          values.map((value) => ({ data: { value } })),
          { sql },
        );
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await a.database.transaction((sql) =>
      a.jobs.sendMany(
        'test.batch',
        values.slice(0, 50).map((value) => ({ data: { value } })),
        { sql },
      ),
    );
    await b.jobs.sendMany(
      'test.batch',
      values.slice(50).map((value) => ({ data: { value } })),
    );
    expect(await jobValues(a.database, schema, 'test.batch', 4000, 4100)).toEqual(values);
    await until(() => valuesDone(4000, 4100).length >= 100);
    await queueSettled(a.database, schema, 'test.batch');
    expect(
      valuesDone(4000, 4100)
        .map(({ value }) => value)
        .sort(),
    ).toEqual(values);
  });

  it('hands a batch handler its jobs together, and retries every job of a batch that failed', async () => {
    await a.jobs.sendMany('test.batch', [{ data: { value: 5000 } }, { data: { value: 5001 } }]);
    await until(() => valuesDone(5000, 5002).length >= 2);
    expect(
      valuesDone(5000, 5002)
        .map(({ value }) => value)
        .sort(),
    ).toEqual([5000, 5001]);
    // Sent in one statement, fetched in one batch, which failed: both jobs were attempted twice.
    expect(batches.some((batch) => batch.includes(5000) && batch.includes(5001))).toBe(true);
    expect([attempts.get(5000), attempts.get(5001)]).toEqual([2, 2]);
  });

  it('starts a job sent for later only when it is due', async () => {
    const startAfter = new Date(Date.now() + 2_000);
    await a.jobs.sendMany('test.batch', [{ data: { value: 6000 }, startAfter }]);
    await until(() => valuesDone(6000, 6001).length === 1);
    expect(Date.now()).toBeGreaterThanOrEqual(startAfter.getTime());
  });

  it('keeps working a queue with several workers while one job is held up', async () => {
    await a.jobs.send('test.gated', { value: 7000 });
    await until(() => started.includes(7000));
    // Instance a's first worker is held by job 7000; b's workers and a's second one take the next.
    await a.jobs.send('test.gated', { value: 7001 });
    await until(() => started.includes(7001));
    gates.get(7001)!();
    await until(() => valuesDone(7001, 7002).length === 1);
    expect(valuesDone(7000, 7001)).toEqual([]);
    gates.get(7000)!();
    await until(() => valuesDone(7000, 7001).length === 1);
  });

  it('stops after the job in flight, leaving no loop of pg-boss polling behind it', async () => {
    const timers = pgBossManagerTimers();
    const stopping = await instance('stopping', `jobs_${randomBytes(6).toString('hex')}`);
    try {
      await stopping.jobs.send('test.gated', { value: 7100 });
      await until(() => started.includes(7100));
      // Stopped with a job in flight: pg-boss's own `work` would stop it in a loop it leaves polling every second.
      const closed = stopping.app.close();
      await until(() => (stopping.jobs as unknown as { stopped: boolean }).stopped);
      gates.get(7100)!();
      await closed;
      expect(valuesDone(7100, 7101)).toHaveLength(1);
      expect(timers.alive()).toBe(0);
    } finally {
      timers.disable();
    }
  });

  it('refuses a definition with both kinds of handler, or neither', () => {
    expect(() =>
      a.jobs.define({ name: 'test.both', expireInSeconds: 1, handler: async () => undefined, batchHandler: async () => undefined }),
    ).toThrow('not both');
    expect(() => a.jobs.define({ name: 'test.neither', expireInSeconds: 1 })).toThrow('not both');
  });

  it('leaves the jobs an instance without workers (JOB_WORKERS=false) queues to the instances with workers', async () => {
    const otherSchema = `jobs_${randomBytes(6).toString('hex')}`;
    const queuing = await instance('queuing', otherSchema, false);
    try {
      await queuing.jobs.send('test.record', { value: 9000 });
      const working = await instance('working', otherSchema);
      try {
        await until(() => valuesDone(9000, 9001).length === 1);
        expect(valuesDone(9000, 9001)).toEqual([{ instance: 'working', value: 9000 }]);
      } finally {
        await working.app.close();
      }
    } finally {
      await queuing.app.close();
    }
  });

  it('refuses to send to a queue no module defined', async () => {
    await expect(a.jobs.send('test.unknown', {})).rejects.toThrow('not defined');
  });
});
