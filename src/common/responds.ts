/**
 * What a route answers, declared once on the handler; one global guard (ResponseMapping) applies it.
 *
 *   @Get() @Responds([AgentResponse], toAgentResponse)                 // 200, a list: each element mapped
 *   @Post() @Responds(AgentResponse, toAgentResponse, { status: 201 }) // 201 (HttpCode and OpenAPI both)
 *   @Delete(':id') @NoContent()                                        // 204: the handler returns nothing
 *   @Get('export') @WritesOwnResponse()                                // the handler writes through @Res()
 *
 * The handler returns what the mapper takes (a row, a service result; `tsc` refuses anything else), and what
 * is sent is what the mapper makes of it, so that no row leaves without its `toXResponse()`. A route that
 * declares none of these is refused (a logged 500) before its handler runs; a 204 route that returns a value
 * anyway, or a list route that returns something else than an array, is refused too (an own-response handler
 * that returns a value does not compile).
 */
import {
  applyDecorators,
  CanActivate,
  ExecutionContext,
  HttpCode,
  Injectable,
  Module,
  OnModuleInit,
  SetMetadata,
  Type,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { APP_GUARD, HttpAdapterHost } from '@nestjs/core';
import { ApiExtraModels, ApiResponse, ApiResponseOptions, getSchemaPath } from '@nestjs/swagger';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';

/** What a mapper may need besides its row: the deployment's values that responses carry (absolute URLs). */
export interface ResponseContext {
  readonly publicBaseUrl: string;
}

/** A row (or service result) to its response: a plain function that copies the response's fields one by one. */
export type ResponseMapper<Row, Dto> = (row: Row, context: ResponseContext) => Dto;

/** A method decorator that only accepts handlers returning `Result` (or a promise of it). */
export type HandlerDecorator<Result> = <Handler extends (...args: never[]) => Result | Promise<Result>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<Handler>,
) => void;

export interface RespondsOptions {
  /** The success status, answered and documented (200 by default). */
  status?: 200 | 201 | 202;
  description?: string;
  headers?: ApiResponseOptions['headers'];
}

/** How ResponseMapping treats a route's result, read once per handler. */
export type ResponseDeclaration =
  | { kind: 'one'; map: ResponseMapper<unknown, unknown> }
  | { kind: 'list'; map: ResponseMapper<unknown, unknown> }
  | { kind: 'no body' }
  | { kind: 'own response' };

const RESPONSE_DECLARATION = Symbol('response declaration');

/** The response is one object: `map` turns the handler's result into it. */
export function Responds<Row, Dto>(type: Type<Dto>, map: ResponseMapper<Row, Dto>, options?: RespondsOptions): HandlerDecorator<Row>;
/**
 * The response is a list: `map` turns each element of the handler's result into one. With several classes, the
 * list is of one of them (documented as one of those lists): `[UsageDayResponse, UsageAgentResponse]`.
 */
export function Responds<Row, Dto>(
  types: readonly [Type<Dto>, ...Type<Dto>[]],
  map: ResponseMapper<Row, Dto>,
  options?: RespondsOptions,
): HandlerDecorator<readonly Row[]>;
export function Responds(
  type: Type<unknown> | readonly Type<unknown>[],
  map: ResponseMapper<unknown, unknown>,
  options: RespondsOptions = {},
): HandlerDecorator<unknown> {
  const status = options.status ?? 200;
  const declaration: ResponseDeclaration = listOf(type) ? { kind: 'list', map } : { kind: 'one', map };
  return applyDecorators(HttpCode(status), SetMetadata(RESPONSE_DECLARATION, declaration), ...documentation(type, status, options));
}

/**
 * The handler writes the response itself (`@Res()`: a stream, a file, a script) and returns nothing (`tsc` refuses
 * a handler that returns a value: Nest would drop it unseen).
 */
export const WritesOwnResponse = (): HandlerDecorator<void> =>
  SetMetadata(RESPONSE_DECLARATION, { kind: 'own response' } satisfies ResponseDeclaration);

/** A list's element classes, or undefined for one object (Array.isArray alone would type them as any). */
const listOf = (type: Type<unknown> | readonly Type<unknown>[]): readonly Type<unknown>[] | undefined =>
  Array.isArray(type) ? (type as readonly Type<unknown>[]) : undefined;

function documentation(type: Type<unknown> | readonly Type<unknown>[], status: number, options: RespondsOptions): MethodDecorator[] {
  const common = {
    status,
    ...(options.description && { description: options.description }),
    ...(options.headers && { headers: options.headers }),
  };
  const types = listOf(type);
  if (!types) return [ApiResponse({ ...common, type: type as Type<unknown> })];
  if (types.length === 1) return [ApiResponse({ ...common, type: types[0], isArray: true })];
  return [
    ApiExtraModels(...types),
    ApiResponse({ ...common, schema: { oneOf: types.map((item) => ({ type: 'array', items: { $ref: getSchemaPath(item) } })) } }),
  ];
}

/**
 * What a route declares: `@Responds`, or no body (a 204: `@NoContent()`, `@HttpCode(204)`), or
 * `@WritesOwnResponse()`; undefined when it declares none (ResponseMapping refuses it, test/response-mapping.spec.ts lists it).
 */
export function responseDeclaration(handler: object): ResponseDeclaration | undefined {
  const declared = Reflect.getMetadata(RESPONSE_DECLARATION, handler) as ResponseDeclaration | undefined;
  if (declared) return declared;
  return Reflect.getMetadata(HTTP_CODE_METADATA, handler) === 204 ? { kind: 'no body' } : undefined;
}

/** A route that may not be answered as it is: the client gets the generic 500 and the log names the route, never a value. */
export class UnmappedResponseError extends Error {
  constructor(route: string, problem: string) {
    super(`${route} ${problem}: refused rather than sent`);
    this.name = 'UnmappedResponseError';
  }
}

/** What is sent for a route's result: the mapper's response, or a refusal (thrown); made once per handler. */
type Plan = (result: unknown) => unknown;

/** Where ResponseMapping leaves the plan of the route a request reached, for the reply (mappedReply). */
const PLAN = Symbol('responsePlan');
type PlannedResponse = object & { [PLAN]?: Plan };

/**
 * The body a route's result is sent as: its plan applied (the mapper's response, or a refusal thrown, which the
 * exception filter answers as a logged 500). Called by ApiExpressAdapter.reply, through which Nest sends every
 * handler's result (never an error: the exception filter writes those itself). A reply without a plan is none of
 * a route's results (ResponseMapping gives every request that reaches a handler one), and is sent as it is.
 */
export function mappedReply(response: object, result: unknown): unknown {
  const plan = (response as PlannedResponse)[PLAN];
  return plan ? plan(result) : result;
}

/** Marks an HTTP adapter whose reply sends mappedReply's body (ApiExpressAdapter): ResponseMapping starts on no other. */
export const SENDS_MAPPED_REPLIES = Symbol('sendsMappedReplies');

/**
 * Sends what each handler returns through the mapper its route declares (each element, for a list), and refuses
 * what a route returns without one. A guard, the last of the global ones, rather than an interceptor: Nest puts
 * the result of every route that has an interceptor through an rxjs pipeline of its own (defer, mergeAll, a
 * ReplaySubject, lastValueFrom), which with the garbage it kept alive was most of what the small reads lost when
 * ResponseMapping was one (docs/benchmarks.md, "The read path (issue 41)"); a guard is one synchronous call. It refuses a route that declares no
 * response before its handler runs, and leaves the others' plan on the request's response for the reply
 * (mappedReply). The declaration is read on a handler's first request and kept: per request the work is one map
 * lookup, one property set and the mapper's own call.
 */
@Injectable()
export class ResponseMapping implements CanActivate, OnModuleInit {
  private readonly plans = new WeakMap<object, Plan>();
  private readonly context: ResponseContext;

  constructor(
    @InjectConfig() config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.context = { publicBaseUrl: config.publicBaseUrl };
  }

  /** On another adapter than ApiExpressAdapter, the plans would never be applied: every row would be sent as it is. */
  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter as { [SENDS_MAPPED_REPLIES]?: true } | undefined;
    if (!adapter?.[SENDS_MAPPED_REPLIES]) {
      throw new Error(
        'ResponseMapping needs an HTTP adapter that sends mappedReply (ApiExpressAdapter): with this one, rows would be sent unmapped',
      );
    }
  }

  canActivate(execution: ExecutionContext): boolean {
    const handler = execution.getHandler();
    let plan = this.plans.get(handler);
    if (!plan) {
      const route = `${execution.getClass().name}.${handler.name}`;
      const declaration = responseDeclaration(handler);
      // Before the handler runs: what it would do (and return) without a declared response must not happen.
      if (!declaration) throw new UnmappedResponseError(route, 'declares no response (@Responds, @NoContent or @WritesOwnResponse)');
      plan = this.planFor(route, declaration);
      this.plans.set(handler, plan);
    }
    execution.switchToHttp().getResponse<PlannedResponse>()[PLAN] = plan;
    return true;
  }

  private planFor(route: string, declaration: ResponseDeclaration): Plan {
    const context = this.context;
    if (declaration.kind === 'one') {
      const mapOne = declaration.map;
      return (row) => mapOne(row, context);
    }
    if (declaration.kind === 'list') {
      const mapEach = declaration.map;
      return (rows) => {
        if (!Array.isArray(rows)) throw new UnmappedResponseError(route, 'is a list route that returned something else');
        const mapped = new Array<unknown>(rows.length);
        for (let index = 0; index < rows.length; index++) mapped[index] = mapEach(rows[index], context);
        return mapped;
      };
    }
    return (result) => {
      if (result !== undefined) throw new UnmappedResponseError(route, `returned a value, but declares ${declaration.kind}`);
      return result;
    };
  }
}

/** Registers ResponseMapping; imported by AppModule after every other guard's module, so that it runs last. */
@Module({ providers: [{ provide: APP_GUARD, useClass: ResponseMapping }] })
export class ResponseMappingModule {}
