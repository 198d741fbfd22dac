import { randomBytes } from 'node:crypto';
import { ProviderHttp } from '../conversations/answering/provider-http';
import { SpeechProviderFailure } from './provider-failure';

/** A request to a speech provider under way: its answer, and the signal that ends it (the caller's, or the timeout). */
export interface SpeechExchange {
  response: Response;
  signal: AbortSignal;
}

/**
 * Requests to the speech providers through ProviderHttp (the chat provider's `fetch`), each bounded by
 * STT_TIMEOUT_MS or TTS_TIMEOUT_MS. Failures become SpeechProviderFailure kinds (never the provider's text); an
 * abort by the caller (the visitor interrupted, the socket closed) stays the AbortError it is.
 */
export class SpeechHttp {
  constructor(
    private readonly http: ProviderHttp,
    private readonly timeoutMs: number,
  ) {}

  async post(url: string, headers: Record<string, string>, body: string | Buffer, caller: AbortSignal): Promise<SpeechExchange> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = AbortSignal.any([caller, timeout]);
    let response: Response;
    try {
      response = await this.http.fetch(url, { method: 'POST', headers, body, signal });
    } catch (error) {
      throw failure(error, caller, timeout);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new SpeechProviderFailure('http-status', response.status);
    }
    return { response, signal };
  }

  /** The whole answer, read within the same bounds. */
  async bytes({ response }: SpeechExchange, caller: AbortSignal): Promise<Buffer> {
    try {
      return Buffer.from(await response.arrayBuffer());
    } catch (error) {
      throw failure(error, caller, undefined);
    }
  }
}

/** What went wrong, as a kind: the caller's abort as it is, the deadline as `timeout`, anything else `connection`. */
export function failure(error: unknown, caller: AbortSignal, timeout: AbortSignal | undefined): unknown {
  if (error instanceof SpeechProviderFailure) return error;
  if (caller.aborted) return caller.reason ?? error;
  if (timeout?.aborted || (error as Error)?.name === 'TimeoutError') return new SpeechProviderFailure('timeout');
  return new SpeechProviderFailure('connection');
}

/** A multipart/form-data body (RFC 7578) of text fields and one file, as the transcription APIs take it. */
export function multipart(
  fields: Record<string, string>,
  file: { field: string; filename: string; type: string; data: Buffer },
): { body: Buffer; contentType: string } {
  const boundary = `----voice-agent-${randomBytes(12).toString('hex')}`;
  const parts = Object.entries(fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\nContent-Type: ${file.type}\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(parts.join('') + head), file.data, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
