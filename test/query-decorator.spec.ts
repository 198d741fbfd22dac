import { AgentsRepository } from '../src/agents/agents.repository';
import { Database } from '../src/database/database';

describe('account-scoped repository methods', () => {
  const query = jest.fn(async () => []);
  const database = { query } as unknown as Database;
  const agents = new AgentsRepository(database);

  it.each([undefined, null, 0, -1, 1.5, '1', NaN])('refuse to run with %p as the account id, before any SQL', async (accountId) => {
    expect(() => agents.list(accountId as number)).toThrow('must be called with an account id first');
    expect(query).not.toHaveBeenCalled();
  });

  it('run with an account id', async () => {
    await agents.list(7);
    expect(query).toHaveBeenCalledWith(expect.stringContaining('account_id = $1'), [7]);
  });
});
