import { ThrowawayPostgres } from '../src/database/throwaway-postgres';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { testPostgres?: ThrowawayPostgres }).testPostgres?.destroy();
}
