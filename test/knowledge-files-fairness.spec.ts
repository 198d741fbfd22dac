import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { READ_FILE_JOB } from '../src/knowledge-bases/source-indexing';
import { createTestContext, eventually, TestAccount, TestContext } from './helpers';
import { settledSource, SourceView } from './knowledge-helpers';

/**
 * The reading queue is shared fairly between accounts: files are read by round (every account's first waiting file
 * before any account's second), so an account that uploads many slow files holds another's up only by the file being
 * read when that one's arrives. One reading at a time here, each slow file using its whole deadline.
 */

const LABORIOUS = readFileSync(path.join(__dirname, 'fixtures', 'knowledge', 'laborious.pdf'));
const LIMITS = { maxFileBytes: 1024 * 1024, extractionWorkers: 1, extractionTimeoutMs: 10_000, extractionMemoryMb: 512 };

describe('the reading queue, shared between accounts', () => {
  let context: TestContext;
  let dataSource: DataSource;
  beforeAll(async () => {
    context = await createTestContext({ knowledgeFiles: LIMITS });
    dataSource = context.app.get(DataSource);
  });
  afterAll(() => context.close());

  const knowledgeBase = async (account: TestAccount) =>
    (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
  const upload = async (account: TestAccount, kbId: number, file: Buffer, name: string) =>
    ((await context.as(account).post(`/knowledge-bases/${kbId}/sources`).attach('file', file, name).expect(201)).body as SourceView).id;
  /** The reading jobs of these sources: their state, and when they started (null until they do). */
  const readings = async (sourceIds: number[]) =>
    new Map(
      (
        await dataSource.query<{ key: string; state: string; startedOn: Date | null }[]>(
          `SELECT singleton_key AS key, state, started_on AS "startedOn" FROM ${context.config.jobQueueSchema}.job WHERE name = $1 AND singleton_key = ANY($2)`,
          [READ_FILE_JOB, sourceIds.map(String)],
        )
      ).map((job) => [Number(job.key), job]),
    );

  it("reads account B's small file while account A's slow files wait, after the one being read", async () => {
    const [a, b] = [await context.createAccount(), await context.createAccount()];
    const [kbA, kbB] = [await knowledgeBase(a), await knowledgeBase(b)];
    const first = await upload(a, kbA, LABORIOUS, 'first.pdf');
    // Once A's first file is being read, A's two others, then B's file, wait for the one reader.
    await eventually(async () => ((await readings([first])).get(first)?.state === 'active' ? true : undefined));
    const waiting = [await upload(a, kbA, LABORIOUS, 'second.pdf'), await upload(a, kbA, LABORIOUS, 'third.pdf')];
    const small = await upload(b, kbB, Buffer.from('Deliveries leave the store at noon.'), 'deliveries.txt');

    expect(await settledSource(context, b, kbB, small)).toMatchObject({ status: 'ready', content: 'Deliveries leave the store at noon.' });
    // B's file was read before either of A's waiting files started (they start only after it, if at all yet).
    const jobs = await readings([small, ...waiting]);
    const smallStarted = jobs.get(small)!.startedOn!;
    for (const id of waiting) {
      const { startedOn } = jobs.get(id)!;
      expect({ id, startedBeforeB: startedOn !== null && startedOn < smallStarted }).toEqual({ id, startedBeforeB: false });
    }
  }, 60_000);
});
