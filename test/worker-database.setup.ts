/** Jest `setupFiles`: points this worker's tests (and the processes they start) at the worker's own database. */
import { BASE_DATABASE_URL, workerDatabaseUrl } from './worker-databases';

const base = process.env[BASE_DATABASE_URL];
if (base) process.env.DATABASE_URL = workerDatabaseUrl(base, process.env.JEST_WORKER_ID ?? '1');
