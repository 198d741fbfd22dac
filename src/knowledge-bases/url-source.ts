import { AddressPolicy } from '../outbound/address-policy';
import { OutboundError, outboundRequest, Resolver } from '../outbound/outbound-http';
import { readableTextInWorker, ReadableTextTimeout } from './readable-text-in-worker';

/** The limits of fetching a url source (contract section 10). */
export const URL_FETCH_LIMITS = {
  timeoutMs: 15_000,
  maxBodyBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
  /** Reducing a page's HTML to text, in its worker thread. */
  extractTimeoutMs: 20_000,
};

/** A fetch that failed for a reason the customer should read (it becomes the source's `error`). */
export class UrlSourceError extends Error {}

export interface UrlFetchOptions {
  policy: AddressPolicy;
  /** Tests only: how names are resolved (the system resolver otherwise). */
  resolver?: Resolver;
  limits?: typeof URL_FETCH_LIMITS;
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const KEPT_TYPES = new Set(['text/plain', 'text/markdown', 'text/x-markdown']);

/**
 * The text of a url source: fetched through the SSRF-safe client (src/outbound), then HTML reduced to its
 * readable text, `text/plain` and `text/markdown` kept as they are. Anything else, an HTTP error status, or an
 * outbound refusal is a UrlSourceError with the reason.
 */
export async function fetchUrlSourceText(url: string, options: UrlFetchOptions): Promise<string> {
  const limits = options.limits ?? URL_FETCH_LIMITS;
  let response;
  try {
    response = await outboundRequest(url, {
      policy: options.policy,
      resolver: options.resolver,
      timeoutMs: limits.timeoutMs,
      maxBodyBytes: limits.maxBodyBytes,
      maxRedirects: limits.maxRedirects,
      headers: { accept: 'text/html, application/xhtml+xml, text/plain, text/markdown;q=0.9, */*;q=0.1' },
    });
  } catch (error) {
    if (error instanceof OutboundError) throw new UrlSourceError(`Could not fetch the URL: ${error.message}`);
    throw error;
  }
  if (response.status < 200 || response.status > 299) throw new UrlSourceError(`The URL answered HTTP ${response.status}`);
  const { mediaType, charset } = contentType(response.headers['content-type']);
  if (!HTML_TYPES.has(mediaType) && !KEPT_TYPES.has(mediaType)) {
    throw new UrlSourceError(
      mediaType
        ? `Unsupported content type ${mediaType.slice(0, 100)}: only HTML, plain text and Markdown are read`
        : 'The URL sent no content type',
    );
  }
  const isHtml = HTML_TYPES.has(mediaType);
  const body = decode(response.body, charset ?? (isHtml ? metaCharset(response.body) : undefined));
  const text = isHtml ? await htmlToText(body, limits.extractTimeoutMs) : body;
  // eslint-disable-next-line no-control-regex -- NUL is what this removes (PostgreSQL text cannot hold it)
  return text.replace(/\u0000/g, '');
}

function contentType(header: string | undefined): { mediaType: string; charset: string | undefined } {
  const [type = '', ...parameters] = (header ?? '').split(';');
  const charset = parameters
    .map((parameter) => parameter.trim().match(/^charset\s*=\s*"?([^";\s]+)"?$/i)?.[1])
    .find((value) => value !== undefined);
  return { mediaType: type.trim().toLowerCase(), charset };
}

/** The charset an HTML page declares in its first bytes (`<meta charset>` or http-equiv), as browsers look for it. */
function metaCharset(body: Buffer): string | undefined {
  const head = body.subarray(0, 1024).toString('latin1');
  return /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1];
}

function decode(body: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    throw new UrlSourceError(`Unsupported character encoding ${String(charset).slice(0, 40)}`);
  }
}

async function htmlToText(html: string, timeoutMs: number): Promise<string> {
  try {
    return await readableTextInWorker(html, timeoutMs);
  } catch (error) {
    if (error instanceof ReadableTextTimeout) throw new UrlSourceError('The page took too long to read');
    throw new UrlSourceError('The page could not be read as HTML');
  }
}
