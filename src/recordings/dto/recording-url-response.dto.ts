import { ApiDateTime } from '../../common/api-formats';
import type { RecordingUrl } from '../recordings.service';

/** A short-lived URL that plays the recording, without an API key. */
export class RecordingUrlResponse {
  /**
   * Plays the MP3 inline (`audio/mpeg`, Range requests honoured). Fresh on every request; it works without
   * an API key until `expiresAt`, so treat it as a secret.
   * @example "http://localhost:3000/recordings/q0kH3Jx0…?expires=1795000000&signature=6JvA…"
   */
  url: string;
  /**
   * When the URL stops working (`RECORDING_URL_TTL_SECONDS` after the request).
   * @example "2026-11-22T09:20:02.000Z"
   */
  @ApiDateTime()
  expiresAt: string;
}

export const toRecordingUrlResponse = ({ url, expiresAt }: RecordingUrl): RecordingUrlResponse => ({
  url,
  expiresAt: expiresAt.toISOString(),
});
