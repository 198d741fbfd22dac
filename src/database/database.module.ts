import { Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Database } from './database';

/** Provides the Database (on TypeORM's pool) to every module's repositories. */
@Global()
@Module({
  providers: [{ provide: Database, inject: [DataSource], useFactory: (dataSource: DataSource) => Database.of(dataSource) }],
  exports: [Database],
})
export class DatabaseModule {}
