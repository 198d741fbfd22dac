import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';
import { MIGRATIONS } from '../src/database/migrations';
import { KnowledgeRetrieval1795429671494 } from '../src/database/migrations/1795429671494-KnowledgeRetrieval';

/** Migration KnowledgeRetrieval on a database that already holds knowledge bases, sources and agents. */
describe('the knowledge migration on existing data', () => {
  const name = `migration_${process.pid}_${Date.now()}`;
  let admin: Client;
  let url: string;

  beforeAll(async () => {
    admin = new Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const parsed = new URL(process.env.DATABASE_URL!);
    parsed.pathname = `/${name}`;
    url = parsed.toString();
  });
  afterAll(async () => {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  });

  const migrate = async (migrations: unknown[]) => {
    const dataSource = new DataSource({ ...dataSourceOptions(url, loadConfig({})), migrations: migrations as never });
    await dataSource.initialize();
    try {
      await dataSource.runMigrations({ transaction: 'each' }); // as runMigrations (src/database/migrate.ts) runs them
    } finally {
      await dataSource.destroy();
    }
  };

  it('leaves the sources that existed pending (the sweep indexes them), without error, at revision 0; agents without knowledge bases', async () => {
    const index = MIGRATIONS.indexOf(KnowledgeRetrieval1795429671494);
    await migrate(MIGRATIONS.slice(0, index));
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const [{ id: accountId }] = (await client.query(`INSERT INTO accounts (name) VALUES ('Before') RETURNING id`)).rows;
      const [{ id: kbId }] = (
        await client.query(`INSERT INTO knowledge_bases (account_id, name) VALUES ($1, 'FAQ') RETURNING id`, [accountId])
      ).rows;
      await client.query(
        `INSERT INTO knowledge_base_sources (account_id, knowledge_base_id, name, type, content) VALUES ($1, $2, 'Text', 'text', 'Open at nine.'), ($1, $2, 'Page', 'url', 'https://example.com/')`,
        [accountId, kbId],
      );
      const [{ id: agentId }] = (
        await client.query(
          `INSERT INTO agents (account_id, name, description, model, voice, language, system_prompt) VALUES ($1, 'A', '', 'gpt-4.1', 'shubh', 'hi-IN', '') RETURNING id`,
          [accountId],
        )
      ).rows;

      await migrate(MIGRATIONS);

      const sources = (await client.query(`SELECT type, status, error, revision FROM knowledge_base_sources ORDER BY id`)).rows;
      expect(sources).toEqual([
        { type: 'text', status: 'pending', error: '', revision: 0 },
        { type: 'url', status: 'pending', error: '', revision: 0 },
      ]);
      expect(
        (await client.query(`SELECT count(*)::int AS count FROM agent_knowledge_bases WHERE agent_id = $1`, [agentId])).rows[0].count,
      ).toBe(0);
      // New sources must say their status: the column has no default.
      await expect(
        client.query(
          `INSERT INTO knowledge_base_sources (account_id, knowledge_base_id, name, type, content) VALUES ($1, $2, 'x', 'text', '')`,
          [accountId, kbId],
        ),
      ).rejects.toMatchObject({ code: '23502' });
    } finally {
      await client.end();
    }
  });
});
