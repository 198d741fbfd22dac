import { BadRequestException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { createTestContext, TestAccount, TestContext } from './helpers';

describe('errors: one shape for every failure', () => {
  let context: TestContext;
  let account: TestAccount;
  beforeAll(async () => {
    context = await createTestContext();
    account = await context.createAccount();
  });
  afterAll(() => context.close());

  it('404 for an unknown route, with or without a key', async () => {
    expect((await context.as(account).get('/nowhere').expect(404)).body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      message: 'Cannot GET /nowhere',
    });
    await context.as(account).delete('/agents').expect(404);
  });

  it.each(['/calls/%E0%A4x', '/agents/%E0%A4', '/webhooks/%FF/deliveries', '/widget/config/%C0%AF'])(
    '404 in the error shape for a path id that is not even valid percent-encoding: %s',
    async (path) => {
      const response = await context.as(account).get(path).expect(404);
      expect(response.body).toEqual({
        statusCode: 404,
        error: 'Not Found',
        message: 'Resource not found: the path is not valid percent-encoding',
      });
    },
  );

  it('400 for malformed JSON', async () => {
    const response = await context
      .as(account)
      .post('/agents')
      .set('Content-Type', 'application/json')
      .send('{"name": "unterminated')
      .expect(400);
    expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'Malformed JSON in request body' });
  });

  it.each([['[]'], ['"a string"'], ['null'], ['42']])('400 for a JSON body that is not an object: %s', async (body) => {
    const response = await context.as(account).post('/agents').set('Content-Type', 'application/json').send(body).expect(400);
    expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  });

  it('400 for a body nested deeper than 32 levels', async () => {
    let name: unknown = 'x';
    for (let i = 0; i < 100; i++) name = { nested: name };
    const response = await context.as(account).post('/agents').send({ name }).expect(400);
    expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'Request body nests deeper than 32 levels' });
  });

  it.each([
    ['/agents', { name: 'a\u0000b' }, 'name'],
    ['/agents', { systemPrompt: 'broken \uD800 surrogate' }, 'systemPrompt'],
    ['/knowledge-bases', { name: '\uDC00' }, 'name'],
  ])('400 naming the field for text PostgreSQL cannot store, on %s (every module, no decorator needed)', async (path, body, field) => {
    const response = await context.as(account).post(path).set('Content-Type', 'application/json').send(JSON.stringify(body)).expect(400);
    expect(response.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: `${field} must not contain NUL characters (\\u0000) or unpaired surrogates`,
      details: [{ field, message: `${field} must not contain NUL characters (\\u0000) or unpaired surrogates` }],
    });
  });

  it.each([
    ['feedback', '{"feedback": 1e400}'],
    ['extractedData.score', '{"extractedData": {"score": -1e400}}'],
    ['feedback.0', '{"feedback": [1e309]}'],
    ['durationSeconds', '{"durationSeconds": 1e400}'],
  ])('400 naming %s for a number too large for a double (it parses as Infinity), and nothing is stored', async (field, body) => {
    const before = (await context.as(account).get('/calls?days=3650').expect(200)).body;
    const response = await context.as(account).post('/calls').set('Content-Type', 'application/json').send(body).expect(400);
    expect(response.body.details).toEqual([{ field, message: `${field} is a number too large to represent (at most about 1.8e308)` }]);
    expect((await context.as(account).get('/calls?days=3650').expect(200)).body).toEqual(before);
  });

  it('takes the largest and smallest doubles in a JSON field as they are', async () => {
    const body = '{"feedback": [1.7976931348623157e308, -1.7976931348623157e308, 5e-324], "extractedData": {"tiny": 1e-400}}';
    const call = (await context.as(account).post('/calls').set('Content-Type', 'application/json').send(body).expect(201)).body;
    expect(call.feedback).toEqual([Number.MAX_VALUE, -Number.MAX_VALUE, 5e-324]);
    expect(call.extractedData).toEqual({ tiny: 0 });
  });

  it('400 with details for validation failures', async () => {
    const response = await context.as(account).post('/agents').send({ name: '', extra: true }).expect(400);
    expect(response.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringContaining('name'),
      details: expect.arrayContaining([
        { field: 'name', message: expect.any(String) },
        { field: 'extra', message: 'property extra should not exist' },
      ]),
    });
  });

  it('413 for a JSON body over 2 MiB, and nothing is stored', async () => {
    const before = (await context.as(account).get('/agents').expect(200)).body.length;
    const response = await context
      .as(account)
      .post('/agents')
      .send({ systemPrompt: 'x'.repeat(2 * 1024 * 1024) })
      .expect(413);
    expect(response.body).toEqual({ statusCode: 413, error: 'Payload Too Large', message: 'Request body is too large' });
    expect((await context.as(account).get('/agents').expect(200)).body.length).toBe(before);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    '415 for a %s body on POST and PATCH',
    async (type) => {
      const created = (await context.as(account).post('/agents').send({}).expect(201)).body;
      const post = await context.as(account).post('/agents').set('Content-Type', type).send('name=x').expect(415);
      expect(post.body).toEqual({ statusCode: 415, error: 'Unsupported Media Type', message: 'Content-Type must be application/json' });
      await context.as(account).patch(`/agents/${created.id}`).set('Content-Type', type).send('name=x').expect(415);
    },
  );

  it('accepts application/json with a charset, and an empty body', async () => {
    await context.as(account).post('/agents').set('Content-Type', 'application/json; charset=utf-8').send('{"name":"A"}').expect(201);
    await context.as(account).post('/agents').set('Content-Type', 'application/json').send('').expect(201);
  });

  it('echoes a request id in X-Request-Id', async () => {
    const response = await context.as(account).get('/agents').set('X-Request-Id', 'trace-123');
    expect(response.headers['x-request-id']).toBe('trace-123');
    const generated = await context.as(account).get('/agents');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('does not advertise the framework', async () => {
    const response = await context.http.get('/health');
    expect(response.headers['x-powered-by']).toBeUndefined();
  });

  describe('exception filter', () => {
    const filter = new AllExceptionsFilter();
    const request = { id: 'req-1' } as never;

    it('turns an unexpected error into a generic 500 without stack or SQL', () => {
      const error = new QueryFailedError('SELECT secret FROM accounts', [], new Error('syntax error at or near "secret"'));
      const body = filter.toErrorResponse(error, request);
      expect(body).toEqual({ statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' });
    });

    it.each([
      ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
      ['admin shutdown', new QueryFailedError('SELECT 1', [], Object.assign(new Error('terminating connection'), { code: '57P01' }))],
      ['statement timeout', new QueryFailedError('SELECT 1', [], Object.assign(new Error('canceling statement'), { code: '57014' }))],
      ['pool timeout', new Error('timeout exceeded when trying to connect')],
      ['terminated', new Error('Connection terminated unexpectedly')],
    ])('turns a database outage (%s) into a 503', (_, error) => {
      expect(filter.toErrorResponse(error, request)).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The database is unavailable; try again shortly',
      });
    });

    it('keeps the message of HTTP exceptions', () => {
      expect(filter.toErrorResponse(new BadRequestException('limit must be at most 1000'), request)).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: 'limit must be at most 1000',
      });
    });
  });
});
