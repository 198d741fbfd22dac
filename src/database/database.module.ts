import { Global, Module } from '@nestjs/common';
import { Database } from './database';

/** Provides the Database to every module's repositories. */
@Global()
@Module({ providers: [Database], exports: [Database] })
export class DatabaseModule {}
