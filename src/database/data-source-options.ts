import { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { AppConfig } from '../config/config';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

export type DatabaseSettings = Pick<AppConfig, 'dbPoolSize' | 'dbStatementTimeoutMs' | 'dbConnectionTimeoutMs'>;

export function dataSourceOptions(url: string, settings: DatabaseSettings): PostgresDataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'all',
    synchronize: false,
    migrationsRun: false,
    namingStrategy: new SnakeNamingStrategy(),
    applicationName: 'voice-agent-api',
    poolSize: settings.dbPoolSize,
    connectTimeoutMS: settings.dbConnectionTimeoutMs,
    extra: {
      statement_timeout: settings.dbStatementTimeoutMs,
      idleTimeoutMillis: 30_000,
    },
  };
}
