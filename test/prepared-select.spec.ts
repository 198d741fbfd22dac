import { DataSource } from 'typeorm';
import { Agent } from '../src/agents/agent.entity';
import { PreparedSelect } from '../src/database/prepared-select';
import { selectProperties } from '../src/database/select-properties';
import { createTestContext, TestAccount, TestContext } from './helpers';

describe('PreparedSelect', () => {
  let context: TestContext;
  let dataSource: DataSource;
  let first: TestAccount;
  let second: TestAccount;

  const builder = (parameters: { accountId: number; name: string }) =>
    selectProperties(dataSource.getRepository(Agent).createQueryBuilder('agent'), ['id', 'accountId', 'name', 'createdAt'])
      .where('agent.account_id = :accountId', parameters)
      .andWhere('(agent.name = :name OR agent.description = :name)', parameters)
      .orderBy('agent.id', 'ASC');

  beforeAll(async () => {
    context = await createTestContext();
    dataSource = context.app.get(DataSource);
    [first, second] = [await context.createAccount(), await context.createAccount()];
    for (const account of [first, second]) {
      for (const name of ['Asha', 'Asha', 'Ravi']) await context.as(account).post('/agents').send({ name }).expect(201);
    }
  });
  afterAll(() => context.close());

  it('gives the same rows as the QueryBuilder it was built from, for every call, in one account only', async () => {
    const prepared = new PreparedSelect<{ accountId: number; name: string }, Agent>(['accountId', 'name'], builder);
    for (const account of [first, second, first]) {
      const parameters = { accountId: account.id, name: 'Asha' };
      const rows = await prepared.many(parameters);
      expect(rows).toEqual(await builder(parameters).getRawMany());
      expect(rows).toHaveLength(2);
      expect(rows.every((row) => row.accountId === account.id && row.createdAt instanceof Date)).toBe(true);
    }
    expect(await prepared.one({ accountId: first.id, name: 'Nobody' })).toBeUndefined();
  });

  it('binds the row limit as a parameter: one query for every limit', async () => {
    const prepared = new PreparedSelect<{ accountId: number; name: string; limit: number }, Agent>(['accountId', 'name', 'limit'], builder, { limit: 'limit' });
    expect(await prepared.many({ accountId: first.id, name: 'Asha', limit: 1 })).toHaveLength(1);
    expect(await prepared.many({ accountId: first.id, name: 'Asha', limit: 5 })).toHaveLength(2);
    const [sql, values] = prepared.statement({ accountId: second.id, name: 'Ravi', limit: 7 });
    expect(sql).toMatch(/ORDER BY .* LIMIT \$3$/);
    expect(values).toEqual([second.id, 'Ravi', 7]);
  });

  it('refuses an undefined value instead of querying with NULL', async () => {
    const prepared = new PreparedSelect<{ accountId: number; name: string }, Agent>(['accountId', 'name'], builder);
    await expect(prepared.many({ accountId: undefined as unknown as number, name: 'Asha' })).rejects.toThrow('parameter accountId is undefined');
  });

  it('refuses a query that binds a value which is not one of its parameters', async () => {
    const prepared = new PreparedSelect<{ accountId: number }, Agent>(['accountId'], ({ accountId }) =>
      dataSource.getRepository(Agent).createQueryBuilder('agent').where('agent.account_id = :accountId AND agent.id = :fixed', { accountId, fixed: 1 }),
    );
    await expect(prepared.many({ accountId: first.id })).rejects.toThrow('not one of its parameters');
  });
});
