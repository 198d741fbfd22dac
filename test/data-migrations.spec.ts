import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { MIGRATIONS } from '../src/database/migrations';
import { queryOnce as query } from './helpers';

/**
 * Migrations that change rows, each checked on a database of its own: migrated up to the one before it, given the
 * rows it is for, then migrated to the end.
 */

/**
 * Runs `work` on a database of its own migrated up to (not including) `migration` (`sql` runs one statement on
 * it; `migrateToTheEnd` applies the rest), then drops the database.
 */
async function withDatabaseBefore(migration: string, work: (database: MigratingDatabase) => Promise<void>): Promise<void> {
  const name = `data_${randomBytes(6).toString('hex')}`;
  const server = process.env.DATABASE_URL!;
  await query(server, `CREATE DATABASE ${name}`);
  try {
    const url = new URL(server);
    url.pathname = `/${name}`;
    const settings = loadConfig({});
    const index = MIGRATIONS.findIndex((candidate) => candidate.name === migration);
    expect(index).toBeGreaterThan(0);
    await runMigrations(url.toString(), settings, { migrations: MIGRATIONS.slice(0, index) });
    await work({
      sql: (text, params = []) => query(url.toString(), text, params),
      migrateToTheEnd: () => runMigrations(url.toString(), settings),
    });
  } finally {
    await query(server, `DROP DATABASE ${name} WITH (FORCE)`);
  }
}

interface MigratingDatabase {
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  migrateToTheEnd(): Promise<unknown>;
}

describe('data migrations', () => {
  it('ApiKeysThroughTheApi names the keys made before "CLI key" with both scopes, and leaves new keys to state theirs', async () => {
    await withDatabaseBefore('ApiKeysThroughTheApi1795433608172', async (database) => {
      const [account] = await database.sql<{ id: number }>(`INSERT INTO accounts (name) VALUES ('Old') RETURNING id`);
      await database.sql(`INSERT INTO api_keys (account_id, prefix, key_hash) VALUES ($1, 'vak_oldoldol', $2)`, [
        account.id,
        'b'.repeat(64),
      ]);
      await database.migrateToTheEnd();
      expect(await database.sql(`SELECT name, scopes, expires_at AS "expiresAt", last_used_at AS "lastUsedAt" FROM api_keys`)).toEqual([
        { name: 'CLI key', scopes: ['read', 'write'], expiresAt: null, lastUsedAt: null },
      ]);
      await expect(
        database.sql(`INSERT INTO api_keys (account_id, prefix, key_hash, scopes) VALUES ($1, 'p', $2, '{read}')`, [
          account.id,
          'c'.repeat(64),
        ]),
      ).rejects.toThrow(/name/);
      await expect(
        database.sql(`INSERT INTO api_keys (account_id, name, prefix, key_hash, scopes) VALUES ($1, 'n', 'p', $2, '{admin}')`, [
          account.id,
          'c'.repeat(64),
        ]),
      ).rejects.toThrow(/CHK_api_keys_scopes/);
    });
  });

  it('ErasedCallsConversations deletes the conversations of calls erased before, and nothing else', async () => {
    await withDatabaseBefore('ErasedCallsConversations1795435000000', async (database) => {
      const [account] = await database.sql<{ id: number }>(`INSERT INTO accounts (name) VALUES ('Old') RETURNING id`);
      const conversation = async (status: string, speakers: string[]) => {
        const id = randomUUID();
        await database.sql(
          `INSERT INTO conversations (account_id, id, token_hash, agent_id, agent_name, reply_language, channel, status)
           VALUES ($1, $2, $3, 1, 'Asha', 'en-IN', 'api', $4)`,
          [account.id, id, randomBytes(32).toString('hex'), status],
        );
        for (const [seq, speaker] of speakers.entries()) {
          await database.sql(
            `INSERT INTO conversation_messages (account_id, conversation_id, seq, speaker, text) VALUES ($1, $2, $3, $4, 'Hello')`,
            [account.id, id, seq + 1, speaker],
          );
        }
        return id;
      };
      const withCall = async (id: string) => {
        await database.sql(`INSERT INTO calls (account_id, id, name, transcript) VALUES ($1, $2, 'Priya', '[]')`, [account.id, id]);
        return id;
      };
      const erased = await conversation('ended', ['agent', 'user', 'agent']);
      const kept = [
        await withCall(await conversation('ended', ['user', 'agent'])), // its call is there
        await conversation('ended', ['agent']), // the visitor said nothing: never a call
        await conversation('active', ['user', 'agent']), // still going on
      ];
      await database.migrateToTheEnd();
      const left = await database.sql<{ id: string }>(`SELECT id FROM conversations WHERE account_id = $1`, [account.id]);
      expect(left.map(({ id }) => id).sort()).toEqual([...kept].sort());
      expect(await database.sql(`SELECT count(*)::int AS n FROM conversation_messages WHERE conversation_id = $1`, [erased])).toEqual([
        { n: 0 },
      ]);
    });
  });

  it("BlankWidgetGreetings trims the greetings as the API now does (JavaScript's trim)", async () => {
    await withDatabaseBefore('BlankWidgetGreetings1795435000001', async (database) => {
      const [account] = await database.sql<{ id: number }>(`INSERT INTO accounts (name) VALUES ('Old') RETURNING id`);
      const greetings = ['   ', ' \t\n\u00a0\u3000\u2028\ufeff ', '  Namaste!  ', 'Namaste!', '', 'a  b', '\u200bzero-width stays\u200b'];
      for (const greeting of greetings) {
        await database.sql(
          `INSERT INTO widget_sites (account_id, name, site_key, allowed_domain, widget_position, widget_label, widget_avatar, widget_greeting, widget_mode, widget_ask_name, widget_ask_phone)
           VALUES ($1, 'Shop', $2, '', 'bottom-right', 'Talk to us', 'default', $3, 'chat', false, false)`,
          [account.id, `ws_${randomBytes(24).toString('base64url')}`, greeting],
        );
      }
      await database.migrateToTheEnd();
      const rows = await database.sql<{ greeting: string }>(
        `SELECT widget_greeting AS greeting FROM widget_sites WHERE account_id = $1 ORDER BY id`,
        [account.id],
      );
      expect(rows.map(({ greeting }) => greeting)).toEqual(greetings.map((greeting) => greeting.trim()));
    });
  });
});
