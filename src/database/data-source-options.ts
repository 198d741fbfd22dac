import { defaults } from 'pg';
import { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { AppConfig } from '../config/config';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

/**
 * Date parameters are sent in UTC (`…+00:00`). The driver's default writes them in the process's local time
 * with the offset in whole minutes, which moved instants from a time when the zone's offset had seconds
 * (local mean time: Africa/Monrovia −00:44:30 until 1972) by up to a minute. A setting of the driver
 * module, not of a connection: every pool of the process (TypeORM's, and raw pg) shares it.
 */
defaults.parseInputDatesAsUTC = true;

export type DatabaseSettings = Pick<AppConfig, 'dbPoolSize' | 'dbStatementTimeoutMs' | 'dbConnectionTimeoutMs'>;

export function dataSourceOptions(url: string, settings: DatabaseSettings): PostgresDataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each', // a migration may declare transaction = false (CREATE INDEX CONCURRENTLY)
    synchronize: false,
    migrationsRun: false,
    namingStrategy: new SnakeNamingStrategy(),
    applicationName: 'voice-agent-api',
    poolSize: settings.dbPoolSize,
    connectTimeoutMS: settings.dbConnectionTimeoutMs,
    extra: {
      // Server side: PostgreSQL cancels a query running longer than this.
      statement_timeout: settings.dbStatementTimeoutMs,
      // Client side: gives up on a server that stopped answering altogether (network, frozen host).
      query_timeout: settings.dbStatementTimeoutMs + 2_000,
      idleTimeoutMillis: 30_000,
    },
  };
}
