import { upgradeSchemasTo31 } from '../src/openapi-31';

/** A document with each thing 3.0 says differently, in each place a Schema Object can be. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads the rewritten document freely
function document30(): any {
  return {
    openapi: '3.1.0',
    components: {
      schemas: {
        Agent: {
          type: 'object',
          properties: {
            agentId: { type: 'integer', nullable: true, example: 42 },
            tier: { type: 'string', enum: ['stable', 'preview'], nullable: true },
            knowledgeBase: { allOf: [{ $ref: '#/components/schemas/KnowledgeBase' }], nullable: true },
            owner: { $ref: '#/components/schemas/Account', nullable: true },
            score: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: false },
            tags: { type: 'array', items: { type: 'string', nullable: true, example: 'vip' } },
            audio: { type: 'string', format: 'byte' },
            name: { type: 'string', nullable: false },
            // Properties named like keywords are properties, not keywords.
            example: { type: 'string', example: 'an example' },
            nullable: { type: 'boolean' },
          },
          additionalProperties: { type: 'string', nullable: true },
          example: { agentId: 42, nullable: true },
        },
      },
      headers: { RateLimit: { schema: { type: 'string', example: 'limit=600' } } },
      parameters: { Key: { name: 'Key', in: 'header', example: 'k-1', schema: { type: 'string', nullable: true } } },
    },
    paths: {
      '/agents': {
        get: {
          parameters: [{ name: 'limit', in: 'query', example: 10, schema: { type: 'integer', exclusiveMinimum: true, minimum: 0 } }],
          responses: {
            '200': {
              description: 'ok',
              content: {
                'application/json': { schema: { type: 'array', items: { oneOf: [{ type: 'string' }], nullable: true } }, example: [] },
              },
            },
          },
        },
      },
    },
    webhooks: {
      'call.created': {
        post: {
          requestBody: { content: { 'application/json': { schema: { type: 'object', nullable: true, example: {} } } } },
          responses: {},
        },
      },
    },
    'x-extension': { schema: { nullable: true } },
  };
}

describe('upgradeSchemasTo31: what an OpenAPI 3.0 document says differently in 3.1', () => {
  const upgraded = () => {
    const document = document30();
    upgradeSchemasTo31(document);
    return document;
  };

  it('turns nullable into a null type, a null in the enum, or anyOf with null around a $ref or a combinator', () => {
    const { properties, additionalProperties } = upgraded().components.schemas.Agent;
    expect(properties.agentId).toEqual({ type: ['integer', 'null'], examples: [42] });
    expect(properties.tier).toEqual({ type: ['string', 'null'], enum: ['stable', 'preview', null] });
    expect(properties.knowledgeBase).toEqual({ anyOf: [{ allOf: [{ $ref: '#/components/schemas/KnowledgeBase' }] }, { type: 'null' }] });
    expect(properties.owner).toEqual({ anyOf: [{ $ref: '#/components/schemas/Account' }, { type: 'null' }] });
    expect(properties.tags.items).toEqual({ type: ['string', 'null'], examples: ['vip'] });
    expect(properties.name).toEqual({ type: 'string' });
    expect(additionalProperties).toEqual({ type: ['string', 'null'] });
  });

  it('makes exclusive bounds numbers, examples arrays and base64 a content encoding', () => {
    const { components, paths } = upgraded();
    expect(components.schemas.Agent.properties.score).toEqual({ type: 'number', exclusiveMinimum: 0, maximum: 1 });
    expect(components.schemas.Agent.properties.audio).toEqual({ type: 'string', contentEncoding: 'base64' });
    expect(components.schemas.Agent.example).toBeUndefined();
    expect(components.schemas.Agent.examples).toEqual([{ agentId: 42, nullable: true }]); // an example is data: left as it is
    expect(paths['/agents'].get.parameters[0].schema).toEqual({ type: 'integer', exclusiveMinimum: 0 });
  });

  it('rewrites the schemas of parameters, headers, media types and webhooks, and leaves their own example alone', () => {
    const { components, paths, webhooks } = upgraded();
    expect(components.headers.RateLimit.schema).toEqual({ type: 'string', examples: ['limit=600'] });
    expect(components.parameters.Key).toEqual({ name: 'Key', in: 'header', example: 'k-1', schema: { type: ['string', 'null'] } });
    expect(paths['/agents'].get.parameters[0].example).toBe(10);
    const media = paths['/agents'].get.responses['200'].content['application/json'];
    expect(media).toEqual({
      schema: { type: 'array', items: { anyOf: [{ oneOf: [{ type: 'string' }] }, { type: 'null' }] } },
      example: [],
    });
    expect(webhooks['call.created'].post.requestBody.content['application/json'].schema).toEqual({
      type: ['object', 'null'],
      examples: [{}],
    });
  });

  it('leaves properties named like keywords, and extensions, as they are', () => {
    const { components, ...rest } = upgraded();
    expect(components.schemas.Agent.properties.example).toEqual({ type: 'string', examples: ['an example'] });
    expect(components.schemas.Agent.properties.nullable).toEqual({ type: 'boolean' });
    expect(rest['x-extension']).toEqual({ schema: { nullable: true } });
  });

  it('changes nothing in a document that already speaks 3.1', () => {
    const once = upgraded();
    const twice = structuredClone(once);
    upgradeSchemasTo31(twice);
    expect(twice).toEqual(once);
  });
});
