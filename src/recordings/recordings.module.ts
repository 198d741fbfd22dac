import { forwardRef, Inject, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { CallsModule } from '../calls/calls.module';
import { AppConfig } from '../config/config';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { APP_CONFIG } from '../config/config.module';
import { LocalRecordingStorage } from './local-recording-storage';
import { PLAYBACK_SIGNER, PlaybackController } from './playback.controller';
import { RecordingStorage } from './recording-storage';
import { RecordingsController } from './recordings.controller';
import { RecordingsRepository } from './recordings.repository';
import { RecordingsService } from './recordings.service';
import type * as S3Driver from './s3-recording-storage';
import { PlaybackUrlSigner } from './signed-url';
import { loadSigningSecret } from './signing-secret';

/** The storage driver chosen by STORAGE_DRIVER. */
export function createRecordingStorage(config: AppConfig, signer: PlaybackUrlSigner | null): RecordingStorage {
  if (config.storage.driver === 's3') {
    // Loaded only when chosen: the AWS SDK's memory is wasted on a service that stores recordings locally.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- that lazy load, synchronous (this factory is)
    const { createS3Client, S3RecordingStorage } = require('./s3-recording-storage') as typeof S3Driver;
    const s3 = config.storage.s3!;
    const client = createS3Client(s3);
    return new S3RecordingStorage(client, s3.bucket, s3.publicEndpoint ? createS3Client({ ...s3, endpoint: s3.publicEndpoint }) : client);
  }
  return new LocalRecordingStorage(config.dataDir, config.publicBaseUrl, signer!);
}

/** Owns the /calls/{callId}/recording* routes and the local driver's signed playback route. */
@Module({
  imports: [WebhooksModule, forwardRef(() => CallsModule)],
  controllers: [RecordingsController, PlaybackController],
  providers: [
    RecordingsService,
    RecordingsRepository,
    {
      provide: PLAYBACK_SIGNER,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) =>
        config.storage.driver === 'local'
          ? new PlaybackUrlSigner(await loadSigningSecret(config.storage.signingSecret, config.dataDir))
          : null,
    },
    { provide: RecordingStorage, inject: [APP_CONFIG, PLAYBACK_SIGNER], useFactory: createRecordingStorage },
  ],
  exports: [RecordingsService, RecordingStorage],
})
export class RecordingsModule implements OnModuleInit, OnModuleDestroy {
  constructor(@Inject(RecordingStorage) private readonly storage: RecordingStorage) {}

  async onModuleInit(): Promise<void> {
    if (this.storage instanceof LocalRecordingStorage) await this.storage.removeStaleUploads();
  }

  onModuleDestroy(): void {
    this.storage.close();
  }
}
