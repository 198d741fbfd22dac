import { AgentVersionsService } from '../agent-versions/agent-versions.service';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { AgentsService, unknownAgentField } from '../agents/agents.service';
import { definedFields } from '../common/defined-fields';
import { UnprocessableFieldsException } from '../common/validation';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { AuthTokenBox } from './auth-token-box';
import { numberSetupFailure } from './carrier-failures';
import { CreatePhoneNumberDto } from './dto/create-phone-number.dto';
import { UpdatePhoneNumberDto } from './dto/update-phone-number.dto';
import { PhoneNumberFields, PhoneNumberRow, PhoneNumbersRepository, PhoneNumberWithToken } from './phone-numbers.repository';
import { webhookUrlsOf } from './twiml';
import { CarrierCredentials, TwilioRest } from './twilio-rest';

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

const notFound = (id: number) => new NotFoundException(`Phone number ${id} not found`);
const taken = (number: string) => new ConflictException(`The number ${number} is already on this account`);

/**
 * The account's phone numbers: the rules (the agent of the account, one number once per account), and the
 * carrier's part: on create, and on a change of the number or of the credentials, the carrier must know the
 * number on that account and is told to send its calls here (inboundUrl, statusUrl) before anything is saved.
 * The auth token is sealed (AuthTokenBox) before it is stored and opened only to speak to the carrier.
 */
@Injectable()
export class PhoneNumbersService {
  private readonly publicBaseUrl: string;

  constructor(
    private readonly versions: AgentVersionsService,
    private readonly numbers: PhoneNumbersRepository,
    private readonly agents: AgentsService,
    private readonly carrier: TwilioRest,
    private readonly box: AuthTokenBox,
    @InjectConfig() config: AppConfig,
  ) {
    this.publicBaseUrl = config.publicBaseUrl;
  }

  list(accountId: number): Promise<PhoneNumberRow[]> {
    return this.numbers.list(accountId);
  }

  async get(accountId: number, id: number): Promise<PhoneNumberRow> {
    return (await this.numbers.get(accountId, id)) ?? Promise.reject(notFound(id));
  }

  /** The number with its sealed token (404), for a call placed from it. */
  async getWithToken(accountId: number, id: number): Promise<PhoneNumberWithToken> {
    return (await this.numbers.getWithToken(accountId, id)) ?? Promise.reject(notFound(id));
  }

  /** 400 for another account's agent, 409 for a number the account has, 422 or 502 from the carrier; then saved. */
  async create(accountId: number, dto: CreatePhoneNumberDto): Promise<PhoneNumberRow> {
    if (dto.agentId != null) await this.agents.getReferenced(accountId, dto.agentId);
    const agentVersion = (await this.versions.pin(accountId, dto.agentId ?? null, dto.agentVersion, false)) ?? null;
    if ((await this.numbers.idOf(accountId, dto.number)) !== undefined) throw taken(dto.number);
    const id = await this.numbers.reserveId();
    await this.pointAtService(id, { accountSid: dto.twilioAccountSid, authToken: dto.twilioAuthToken }, dto.number);
    const fields: PhoneNumberFields = {
      number: dto.number,
      provider: dto.provider!,
      agentId: dto.agentId ?? null,
      agentVersion,
      label: dto.label!,
      greeting: dto.greeting!,
      twilioAccountSid: dto.twilioAccountSid,
    };
    return this.write(fields, () => this.numbers.insert(accountId, id, fields, this.box.seal(accountId, dto.twilioAuthToken)));
  }

  /** The fields given; a change of the number or of the credentials is checked with the carrier first. */
  async update(accountId: number, id: number, dto: UpdatePhoneNumberDto): Promise<PhoneNumberRow> {
    const { twilioAuthToken, ...fields } = definedFields(dto);
    if (Object.keys(fields).length === 0 && twilioAuthToken === undefined) return this.get(accountId, id);
    const current = await this.getWithToken(accountId, id); // another account's number is a 404 before anything else is said
    if (fields.agentId != null) await this.agents.getReferenced(accountId, fields.agentId);
    const agentId = fields.agentId !== undefined ? fields.agentId : current.agentId;
    const pinned = await this.versions.pin(accountId, agentId, fields.agentVersion, agentId !== current.agentId);
    if (pinned === undefined) delete fields.agentVersion;
    else fields.agentVersion = pinned;
    const number = fields.number ?? current.number;
    if (number !== current.number && (await this.numbers.idOf(accountId, number)) !== undefined) throw taken(number);
    if (fields.number !== undefined || fields.twilioAccountSid !== undefined || twilioAuthToken !== undefined) {
      const accountSid = fields.twilioAccountSid ?? current.twilioAccountSid;
      await this.pointAtService(id, { accountSid, authToken: twilioAuthToken ?? this.storedToken(accountId, current) }, number);
    }
    const sealed = twilioAuthToken === undefined ? undefined : this.box.seal(accountId, twilioAuthToken);
    return (await this.write(fields, () => this.numbers.update(accountId, id, fields, sealed))) ?? Promise.reject(notFound(id));
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.numbers.delete(accountId, id))) throw notFound(id);
  }

  /** The credentials the carrier is spoken to with for this number (a 422 when its stored token no longer opens). */
  credentialsOf(accountId: number, number: Pick<PhoneNumberWithToken, 'twilioAccountSid' | 'twilioAuthTokenSealed'>): CarrierCredentials {
    return { accountSid: number.twilioAccountSid, authToken: this.storedToken(accountId, number) };
  }

  /** The stored auth token; a 422 when it does not open (TELEPHONY_SECRET changed since): it must be sent again. */
  private storedToken(accountId: number, number: Pick<PhoneNumberWithToken, 'twilioAuthTokenSealed'>): string {
    const token = this.box.open(accountId, number.twilioAuthTokenSealed);
    if (token === undefined) {
      throw new UnprocessableFieldsException([
        {
          field: 'twilioAuthToken',
          message: "The number's stored auth token cannot be read (the service's TELEPHONY_SECRET changed): send twilioAuthToken again",
        },
      ]);
    }
    return token;
  }

  /**
   * Asks the carrier for the number on the account (422 naming `number` when it has none, `twilioAuthToken` when it
   * refuses the credentials) and points the number's calls and statuses at the service (502 when it fails).
   */
  private async pointAtService(id: number, credentials: CarrierCredentials, number: string): Promise<void> {
    let numberSid: string | undefined;
    try {
      numberSid = await this.carrier.findNumber(credentials, number);
      if (numberSid === undefined) {
        throw new UnprocessableFieldsException([
          { field: 'number', message: `${number} is not a phone number of the Twilio account ${credentials.accountSid}` },
        ]);
      }
      const { inboundUrl, statusUrl } = webhookUrlsOf(this.publicBaseUrl, id);
      await this.carrier.pointNumber(credentials, numberSid, { voiceUrl: inboundUrl, statusCallback: statusUrl });
    } catch (error) {
      throw numberSetupFailure(error);
    }
  }

  /** The write, with the database's refusals as the API's: the number taken meanwhile (409), the agent deleted meanwhile (400). */
  private async write<T>(fields: Partial<PhoneNumberFields>, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code === UNIQUE_VIOLATION && fields.number !== undefined) throw taken(fields.number);
      if (code === FOREIGN_KEY_VIOLATION && fields.agentId != null) throw unknownAgentField(fields.agentId);
      throw error;
    }
  }
}
