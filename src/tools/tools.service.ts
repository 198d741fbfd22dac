import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { definedFields } from '../common/defined-fields';
import { RequestValidationException } from '../common/validation';
import { SECRET_OVERLAP_HOURS } from '../webhooks/signing-secrets';
import { generateWebhookSecret } from '../webhooks/webhook-signature';
import { WebhookTargets } from '../webhooks/webhook-targets';
import { CreateToolDto } from './dto/create-tool.dto';
import { CreatedTool } from './dto/tool-response.dto';
import { UpdateToolDto } from './dto/update-tool.dto';
import { parametersProblem } from './parameter-schemas';
import {
  DEFAULT_END_CALL_NAME,
  DEFAULT_TIMEOUT_SECONDS,
  NO_PARAMETERS,
  REQUIRED_FIELDS,
  TOOL_TYPES,
  ToolType,
  TYPE_FIELDS,
} from './tool-rules';
import { ToolFields, ToolRow, ToolsRepository, UNIQUE_VIOLATION } from './tools.repository';

const notFound = (id: number) => new NotFoundException(`Tool ${id} not found`);

/** The fields that only some types take. */
const TYPED_FIELDS = ['parameters', 'url', 'timeoutSeconds', 'speakWhileRunning', 'number'] as const;

/** A 400 naming each field given that the type does not take. */
function refuseForeignFields(type: ToolType, fields: Partial<UpdateToolDto>): void {
  const foreign = TYPED_FIELDS.filter((field) => fields[field] !== undefined && !TYPE_FIELDS[type].includes(field));
  if (foreign.length === 0) return;
  throw new RequestValidationException(
    foreign.map((field) => {
      const takers = TOOL_TYPES.filter((candidate) => TYPE_FIELDS[candidate].includes(field)).join(' and ');
      return { field, message: `${field} applies only to ${takers} tools, not to ${type} ones` };
    }),
  );
}

function checkParameters(parameters: unknown): void {
  const problem = parametersProblem(parameters);
  if (problem) throw new RequestValidationException([{ field: 'parameters', message: problem }]);
}

/** The tools' rules (the fields of each type, their schema, their URL, unique names, secrets); the SQL is ToolsRepository's. */
@Injectable()
export class ToolsService {
  constructor(
    private readonly tools: ToolsRepository,
    private readonly targets: WebhookTargets,
  ) {}

  list(accountId: number): Promise<ToolRow[]> {
    return this.tools.list(accountId);
  }

  async get(accountId: number, id: number): Promise<ToolRow> {
    return (await this.tools.get(accountId, id)) ?? Promise.reject(notFound(id));
  }

  /** The tool with its type's defaults, and (a webhook tool's) its signing secret, returned this once. */
  async create(accountId: number, dto: CreateToolDto): Promise<CreatedTool> {
    const { type } = dto;
    refuseForeignFields(type, dto);
    const missing = REQUIRED_FIELDS[type].filter((field) => dto[field as keyof CreateToolDto] === undefined);
    if (missing.length) {
      throw new RequestValidationException(missing.map((field) => ({ field, message: `${field} is required for a ${type} tool` })));
    }
    if (dto.parameters !== undefined) checkParameters(dto.parameters);
    const webhook = type === 'webhook';
    const fields: ToolFields = {
      type,
      name: dto.name ?? DEFAULT_END_CALL_NAME,
      description: dto.description ?? '',
      parameters: webhook ? (dto.parameters ?? NO_PARAMETERS) : null,
      url: webhook ? await this.targets.checkUrl(dto.url!) : null,
      timeoutSeconds: webhook ? (dto.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) : null,
      speakWhileRunning: webhook ? (dto.speakWhileRunning ?? '') : null,
      number: dto.number ?? null,
    };
    const secret = webhook ? generateWebhookSecret() : null;
    const tool = await uniquelyNamed(fields.name, () => this.tools.insert(accountId, fields, secret));
    return { tool, secret };
  }

  /** Changes the fields given; each must be one the tool's type takes (another account's tool is a 404 first). */
  async update(accountId: number, id: number, dto: UpdateToolDto): Promise<ToolRow> {
    const fields = definedFields(dto);
    const current = await this.get(accountId, id);
    if (Object.keys(fields).length === 0) return current;
    refuseForeignFields(current.type, fields);
    if (fields.parameters !== undefined) checkParameters(fields.parameters);
    if (fields.url !== undefined) fields.url = await this.targets.checkUrl(fields.url);
    const name = fields.name ?? current.name;
    return (await uniquelyNamed(name, () => this.tools.update(accountId, id, fields))) ?? Promise.reject(notFound(id));
  }

  /** Its agents lose it. */
  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.tools.delete(accountId, id))) throw notFound(id);
  }

  /** A webhook tool's new secret, returned this once; the previous one keeps signing (beside it) for 24 hours. */
  async rotateSecret(accountId: number, id: number): Promise<string> {
    const tool = await this.get(accountId, id);
    if (tool.type !== 'webhook') {
      throw new ConflictException(`Tool ${id} is a ${tool.type} tool: it sends no requests, so it has no signing secret`);
    }
    const secret = generateWebhookSecret();
    if (!(await this.tools.rotateSecret(accountId, id, secret, SECRET_OVERLAP_HOURS))) throw notFound(id);
    return secret;
  }
}

/** `write`, with a name another tool of the account has already turned into a 409. */
async function uniquelyNamed<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) {
      throw new ConflictException(`This account already has a tool named ${name}: tool names are unique within an account`);
    }
    throw error;
  }
}
