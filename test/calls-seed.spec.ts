import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { callsPerAccount } from '../scripts/seed';
import { createTestContext, TestContext } from './helpers';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..');

describe('npm run seed', () => {
  it('splits the calls: the hot account first, the rest evenly', () => {
    expect(callsPerAccount(1, 500, 0.1)).toEqual([500]);
    expect(callsPerAccount(3, 10, 1 / 3)).toEqual([3, 4, 3]);
    const benchmark = callsPerAccount(100, 1_000_000, 0.1);
    expect(benchmark[0]).toBe(100_000);
    expect(benchmark.reduce((a, b) => a + b, 0)).toBe(1_000_000);
    expect(new Set(benchmark.slice(1))).toEqual(new Set([9_091, 9_090]));
  });

  describe('on the test database', () => {
    let context: TestContext;
    let output: { randomSeed: number; accounts: { accountId: number; apiKey: string; calls: number; agents: number }[] };
    let stderr: string;

    beforeAll(async () => {
      context = await createTestContext();
      const result = await run(
        process.execPath,
        ['-r', './scripts/register.js', 'scripts/seed.ts', '--accounts', '2', '--calls', '3000', '--random-seed', '7'],
        {
          cwd: ROOT,
          env: { ...process.env, LOG_LEVEL: 'silent' },
        },
      );
      stderr = result.stderr;
      output = JSON.parse(result.stdout.trim().split('\n').pop()!);
    }, 60_000);
    afterAll(() => context.close());

    it('prints the API keys and a progress bar', () => {
      expect(output.randomSeed).toBe(7);
      expect(output.accounts).toEqual([
        expect.objectContaining({ calls: 1500, apiKey: expect.stringMatching(/^vak_/) }),
        expect.objectContaining({ calls: 1500, apiKey: expect.stringMatching(/^vak_/) }),
      ]);
      expect(stderr).toContain('100%');
      expect(stderr).toContain(output.accounts[0].apiKey);
    });

    it('creates calls that the API lists, searches and reads, with a few test calls left out', async () => {
      const [first] = output.accounts;
      const account = { id: first.accountId, apiKey: first.apiKey };
      const [{ total, tests, scripts }] = await context.app.get(DataSource).query(
        `SELECT count(*)::int AS total, count(*) FILTER (WHERE is_test)::int AS tests,
                count(*) FILTER (WHERE name ~ '[ऀ-ॿ]' OR name ~ '[ঀ-৿]' OR name ~ '[஀-௿]')::int AS scripts
           FROM calls WHERE account_id = $1`,
        [first.accountId],
      );
      expect(total).toBe(1500);
      expect(tests).toBeGreaterThan(0);
      expect(scripts).toBeGreaterThan(100);
      const listed = (await context.as(account).get('/calls').query({ limit: 1000 }).expect(200)).body;
      expect(listed).toHaveLength(1000);
      const completed = listed.find((call: { callStatus: string }) => call.callStatus === 'completed');
      const detail = (await context.as(account).get(`/calls/${completed.id}`).expect(200)).body;
      expect(detail.transcript.length).toBeGreaterThanOrEqual(4);
      expect(detail.transcript.length).toBeLessThanOrEqual(30);
      expect(detail.agent).not.toBe('');
      const dates = listed.map((call: { callDate: string }) => Date.parse(call.callDate));
      expect(Math.max(...dates) - Math.min(...dates)).toBeGreaterThan(200 * 24 * 3600 * 1000);
      const sharma = (await context.as(account).get('/calls').query({ search: 'sharma' }).expect(200)).body;
      expect(sharma.length).toBeGreaterThan(0);
      const other = { id: output.accounts[1].accountId, apiKey: output.accounts[1].apiKey };
      const otherIds = new Set(
        (await context.as(other).get('/calls').query({ limit: 1000 }).expect(200)).body.map((call: { id: string }) => call.id),
      );
      expect(listed.some((call: { id: string }) => otherIds.has(call.id))).toBe(false);
    });

    it('refuses bad options with a usage message', async () => {
      await expect(
        run(process.execPath, ['-r', './scripts/register.js', 'scripts/seed.ts', '--calls', 'many'], { cwd: ROOT }),
      ).rejects.toMatchObject({
        code: 2,
        stderr: expect.stringContaining('--calls must be an integer'),
      });
      await expect(
        run(process.execPath, ['-r', './scripts/register.js', 'scripts/seed.ts', '--call', '5'], { cwd: ROOT }),
      ).rejects.toMatchObject({
        code: 2,
        stderr: expect.stringContaining("seed: Unknown option '--call'"),
      });
    });
  });
});
