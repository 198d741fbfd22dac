import { Global, Module } from '@nestjs/common';
import { Jobs } from './jobs.service';

/** The job queue, for every module that has background work (see Jobs). */
@Global()
@Module({ providers: [Jobs], exports: [Jobs] })
export class JobsModule {}
