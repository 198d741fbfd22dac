import { loadConfig } from '../src/config/config';
import { pendingSchemaChanges } from '../src/database/migrate';

describe('entities and migrations', () => {
  it('agree: generating a migration against the migrated test database gives nothing', async () => {
    const { up } = await pendingSchemaChanges(process.env.DATABASE_URL!, loadConfig());
    expect(up).toEqual([]);
  });
});
