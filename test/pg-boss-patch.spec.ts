import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Pool } from 'pg';
import PgBoss from 'pg-boss';

const ROOT = path.resolve(__dirname, '..');
const PATCH = 'patches/pg-boss+10.4.2.patch';

/** Whether `git apply` (with these options) accepts the patch against the installed node_modules. */
function gitApplies(...options: string[]): boolean {
  try {
    execFileSync('git', ['apply', '--check', ...options, PATCH], { cwd: ROOT, stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

describe("pg-boss's patch (patches/, applied by npm ci through patch-package --error-on-fail)", () => {
  it('is applied to the installed pg-boss: it reverses cleanly, and cannot be applied a second time', () => {
    expect(gitApplies('--reverse')).toBe(true);
    expect(gitApplies()).toBe(false);
  });

  it("reports a connection lost while a worker completes its job as the worker's error, not an unhandled rejection", async () => {
    const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
    let lost = false;
    // The connection is lost as the handler returns: pg-boss's complete, then its fail, meet the outage.
    const db: PgBoss.Db = {
      executeSql: async (text, values) => {
        if (lost) throw new Error('Connection terminated unexpectedly');
        return pool.query(text, values);
      },
    };
    const boss = new PgBoss({ db, schema: `patch_${randomBytes(6).toString('hex')}`, schedule: false, supervise: false });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await boss.start();
      await boss.createQueue('patch.test');
      await boss.send('patch.test', {});
      const reported = new Promise<{ queue?: string; message?: string }>((resolve) => boss.on('error', resolve));
      await boss.work('patch.test', { pollingIntervalSeconds: 0.5 }, async () => {
        lost = true;
      });
      // Unpatched, complete's rejection is not awaited: no error is reported, and this waits until the test times out.
      expect(await reported).toMatchObject({ queue: 'patch.test', message: expect.stringContaining('Connection terminated') });
      await nextTurn();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      lost = false;
      // At the start of a turn, the worker waits on its polling timer (each statement failed at once), which stop aborts.
      await nextTurn();
      await boss.stop({ graceful: false });
      await pool.end();
    }
  }, 10_000);
});
