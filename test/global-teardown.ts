import { rmSync } from 'node:fs';
import { ThrowawayPostgres } from '../scripts/throwaway-postgres';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { testPostgres?: ThrowawayPostgres }).testPostgres?.destroy();
  const dataDir = (globalThis as { testDataDir?: string }).testDataDir;
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
