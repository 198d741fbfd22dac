import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import { AppConfig } from '../config/config';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Reuses a well-formed incoming X-Request-Id, otherwise makes one; echoes it in the response. */
function requestId(request: IncomingMessage, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * Structured request logs. Only the method and the path are logged, never the query string (it can carry
 * search terms and signed-URL signatures) and never a header (the API key travels in one).
 */
export function loggerOptions(config: Pick<AppConfig, 'logLevel'>): Params {
  return {
    pinoHttp: {
      level: config.logLevel,
      genReqId: requestId,
      customLogLevel: (_request, response, error) => (error || response.statusCode >= 500 ? 'error' : 'info'),
      serializers: {
        req: (request: { id: string; method: string; url: string }) => ({
          id: request.id,
          method: request.method,
          path: request.url.split('?')[0],
        }),
        res: (response: { statusCode: number }) => ({ statusCode: response.statusCode }),
      },
      redact: { paths: ['req.headers', 'res.headers'], remove: true },
    },
  };
}
