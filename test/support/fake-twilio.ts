import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks';
import { MediaStreamCall, parseTwiml, TwimlPlan } from './fake-twilio-media';

/**
 * A stand-in for Twilio on loopback, speaking its protocols as Twilio does, for the telephony tests:
 *
 * - its REST API (`/2010-04-01/Accounts/{AccountSid}/…`), HTTP Basic with the account SID and auth token (Twilio's
 *   401 JSON otherwise): `IncomingPhoneNumbers.json` (a page in Twilio's envelope, `incoming_phone_numbers`, filtered
 *   by `PhoneNumber`), `IncomingPhoneNumbers/{PN…}.json` (POST: VoiceUrl, VoiceMethod, StatusCallback…),
 *   `Calls.json` (POST, a form: To, From, Twiml or Url, StatusCallback, StatusCallbackEvent repeated, Timeout; a
 *   201 with Twilio's call JSON, status `queued`) and `Calls/{CA…}.json` (POST: Status=completed|canceled, Twiml);
 *   Twilio's error JSON (`code`, `message`, `more_info`, `status`) for what it refuses;
 * - the carrier's side of the webhooks: a call to a number (`dialIn`: the voice webhook posted to the number's
 *   VoiceUrl) and the status callbacks of a call (`report`, `progress`: in Twilio's order, with its parameters
 *   CallSid, AccountSid, From, To, CallStatus, Direction, ApiVersion, Timestamp, CallbackSource, SequenceNumber,
 *   CallDuration…), each signed as Twilio signs (`X-Twilio-Signature`: the `twilio` package's
 *   getExpectedTwilioSignature over the URL and the sorted form parameters);
 * - `mode`: `up`, `failing` (every REST request a 500) or `down` (every connection reset).
 *
 * The TwiML a call is given is kept on it (`FakeCall.twiml`). `connect` runs it once the call is answered:
 * `<Connect><Stream>` opens the media stream (fake-twilio-media.ts) against the service's WebSocket; when the
 * stream ends (the caller hangs up, the service closes it, or a REST `Status=completed` stops it) the call's
 * `completed` status callback is posted. `<Say>`…`<Hangup/>` is only recorded (`plan`).
 */

export interface FakeAccount {
  sid: string;
  authToken: string;
}

export interface FakeNumber {
  sid: string;
  accountSid: string;
  phoneNumber: string;
  voiceUrl: string;
  voiceMethod: string;
  statusCallback: string;
  statusCallbackMethod: string;
  dateCreated: Date;
  dateUpdated: Date;
}

export type CallStatus = 'queued' | 'initiated' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled';

export interface FakeCall {
  sid: string;
  accountSid: string;
  direction: 'inbound' | 'outbound-api';
  from: string;
  to: string;
  /** The TwiML it runs once answered (a placed call's `Twiml`, or what the voice webhook answered for an inbound one). */
  twiml: string;
  statusCallback: string;
  statusCallbackEvents: string[];
  timeout: number;
  status: CallStatus;
  /** The next status callback's SequenceNumber. */
  sequence: number;
  answeredAt?: Date;
  dateCreated: Date;
  /** Every parameter of the request that placed it (a placed call). */
  params?: URLSearchParams;
  /** Its `completed` callback has been posted. */
  completedReported?: boolean;
}

/** A REST request the stand-in received (its credentials aside). */
export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
}

/** What the service answered a webhook. */
export interface WebhookAnswer {
  status: number;
  contentType: string;
  body: string;
}

export type Mode = 'up' | 'failing' | 'down';

const API = '/2010-04-01/Accounts/';
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** RFC 2822, as Twilio writes its dates. */
const rfc2822 = (date: Date) => date.toUTCString().replace('GMT', '+0000');
const E164 = /^\+[1-9][0-9]{7,14}$/;

/** Twilio's error JSON. */
const twilioError = (status: number, code: number, message: string) => ({
  code,
  message,
  more_info: `https://www.twilio.com/docs/errors/${code}`,
  status,
});

export class FakeTwilio {
  private currentMode: Mode = 'up';
  readonly requests: FakeRequest[] = [];
  readonly calls = new Map<string, FakeCall>();
  /** The media stream of each answered call, by CallSid. */
  readonly streams = new Map<string, MediaStreamCall>();
  /** The `completed` callbacks posted when streams ended (a test may await them). */
  private readonly endings = new Map<string, Promise<WebhookAnswer | undefined>>();
  private readonly accounts = new Map<string, FakeAccount>();
  private readonly numbers = new Map<string, FakeNumber>();
  /** `To` numbers a placed call is refused for, with Twilio's code and message. */
  private readonly refusals = new Map<string, { code: number; message: string }>();
  private readonly sockets = new Set<Socket>();
  /** While set, the answer to a request that places a call waits for it (the call is placed meanwhile). */
  private held?: Promise<void>;
  private waiting: { to: string; resolve: (call: FakeCall) => void }[] = [];
  private nextNumber = 1;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      if (this.mode === 'down') socket.destroy();
    });
  }

  get mode(): Mode {
    return this.currentMode;
  }

  /** `down` resets every connection, the open ones (kept alive by the service) at once. */
  set mode(mode: Mode) {
    this.currentMode = mode;
    if (mode === 'down') for (const socket of this.sockets) socket.destroy();
  }

  static async start(): Promise<FakeTwilio> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeTwilio(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => void fake.handle(request, response));
    return fake;
  }

  /** A new carrier account. */
  addAccount(): FakeAccount {
    const account = { sid: `AC${hex(16)}`, authToken: hex(16) };
    this.accounts.set(account.sid, account);
    return account;
  }

  /** A number of `account` (the stand-in's next +1 555 number unless given: never the same twice), pointed nowhere yet. */
  addNumber(account: FakeAccount, phoneNumber = `+1555${String(this.nextNumber++).padStart(7, '0')}`): FakeNumber {
    const now = new Date();
    const number: FakeNumber = {
      sid: `PN${hex(16)}`,
      accountSid: account.sid,
      phoneNumber,
      voiceUrl: '',
      voiceMethod: 'POST',
      statusCallback: '',
      statusCallbackMethod: 'POST',
      dateCreated: now,
      dateUpdated: now,
    };
    this.numbers.set(number.sid, number);
    return number;
  }

  /** The account's number `phoneNumber`, as the service configured it. */
  number(phoneNumber: string): FakeNumber | undefined {
    return [...this.numbers.values()].find((number) => number.phoneNumber === phoneNumber);
  }

  /** Placed calls to `to` are refused (a 400 with Twilio's code and message), as Twilio refuses an invalid or blocked number. */
  refuseCallsTo(
    to: string,
    code = 21215,
    message = `Account not authorized to call ${to}. Perhaps you need to enable some international permissions.`,
  ): void {
    this.refusals.set(to, { code, message });
  }

  /**
   * Until the function returned is called, a call placed through the REST API is placed (its status callbacks can
   * be posted) but the answer to the request waits: Twilio's callbacks may reach the service before that answer.
   */
  holdCallAnswers(): () => void {
    let release!: () => void;
    this.held = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.held = undefined;
      release();
    };
  }

  /** Resolves once a call to `to` has been placed (while its answer is held, say). */
  placed(to: string): Promise<FakeCall> {
    const call = this.lastCallTo(to);
    if (call) return Promise.resolve(call);
    return new Promise((resolve) => this.waiting.push({ to, resolve }));
  }

  /** The last call placed to `to` through the REST API. */
  lastCallTo(to: string): FakeCall | undefined {
    return [...this.calls.values()].filter((call) => call.direction === 'outbound-api' && call.to === to).at(-1);
  }

  /** Every REST request of a kind so far (`POST Calls.json`, `GET IncomingPhoneNumbers.json`…), by its path's last part. */
  requestsTo(method: string, resource: RegExp): FakeRequest[] {
    return this.requests.filter((request) => request.method === method && resource.test(request.path));
  }

  /**
   * A call to `number` from `from`, as Twilio makes it: the voice webhook posted to the number's VoiceUrl (as
   * configured by the service), signed with its account's token; the call (`ringing`) and the answer.
   */
  async dialIn(
    number: FakeNumber,
    from: string,
    options: { callSid?: string; sign?: (url: string, params: Record<string, string>) => string | undefined } = {},
  ): Promise<{ call: FakeCall; answer: WebhookAnswer }> {
    const call: FakeCall = {
      sid: options.callSid ?? `CA${hex(16)}`,
      accountSid: number.accountSid,
      direction: 'inbound',
      from,
      to: number.phoneNumber,
      twiml: '',
      statusCallback: number.statusCallback,
      statusCallbackEvents: ['completed'], // a number's status callback: only the end of the call
      timeout: 0,
      status: 'ringing',
      sequence: 0,
      dateCreated: new Date(),
    };
    this.calls.set(call.sid, call);
    const answer = await this.post(number.voiceUrl, this.callParams(call), this.account(call.accountSid), options.sign);
    if (answer.status === 200) call.twiml = answer.body;
    return { call, answer };
  }

  /**
   * One status callback of `call`, as Twilio posts it to the call's StatusCallback: CallStatus `status`, the next
   * SequenceNumber, CallDuration and Duration once the call is over. `sign` replaces the signature (a test's forgery).
   */
  async report(
    call: FakeCall,
    status: CallStatus,
    options: { sign?: (url: string, params: Record<string, string>) => string | undefined; params?: Record<string, string> } = {},
  ): Promise<WebhookAnswer> {
    call.status = status;
    if (status === 'in-progress') call.answeredAt ??= new Date();
    const params: Record<string, string> = {
      ...this.callParams(call),
      CallbackSource: 'call-progress-events',
      SequenceNumber: String(call.sequence++),
      Timestamp: rfc2822(new Date()),
    };
    if (['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(status)) {
      const seconds = call.answeredAt ? Math.round((Date.now() - call.answeredAt.getTime()) / 1000) : 0;
      params.CallDuration = String(seconds);
      params.Duration = String(Math.ceil(seconds / 60));
    }
    return this.post(call.statusCallback, { ...params, ...options.params }, this.account(call.accountSid), options.sign);
  }

  /**
   * The status callbacks of a placed call in Twilio's order, for the events it subscribed to: `initiated`,
   * `ringing`, then `in-progress` and `completed` when answered, or the final status it ended in unanswered
   * (`busy`, `no-answer`, `failed`: a final status is always reported, as the `completed` event).
   */
  async progress(call: FakeCall, outcome: 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled'): Promise<WebhookAnswer[]> {
    const events = new Set(call.statusCallbackEvents);
    const statuses: CallStatus[] = [];
    if (events.has('initiated')) statuses.push('initiated');
    if (events.has('ringing') && outcome !== 'failed') statuses.push('ringing');
    if (outcome === 'completed' && events.has('answered')) statuses.push('in-progress');
    statuses.push(outcome);
    const answers: WebhookAnswer[] = [];
    for (const status of statuses) answers.push(await this.report(call, status));
    return answers;
  }

  /** What the carrier does with the call's TwiML (a stream, or sentences said before hanging up). */
  plan(call: FakeCall): TwimlPlan {
    return parseTwiml(call.twiml);
  }

  /**
   * The call is answered: a placed call's `initiated`, `ringing` and `in-progress` callbacks are posted first (those it
   * subscribed to), then its TwiML's `<Connect><Stream>` is connected. When the stream ends, `completed` is posted
   * with CallDuration (`ended` resolves to its answer).
   */
  async connect(call: FakeCall): Promise<MediaStreamCall> {
    if (call.direction === 'outbound-api') {
      const events = new Set(call.statusCallbackEvents);
      if (events.has('initiated')) await this.report(call, 'initiated');
      if (events.has('ringing')) await this.report(call, 'ringing');
      if (events.has('answered')) await this.report(call, 'in-progress');
      else call.status = 'in-progress';
    } else call.status = 'in-progress';
    call.answeredAt ??= new Date();
    const plan = this.plan(call);
    if (plan.kind !== 'stream') throw new Error(`the call's TwiML connects no stream: ${call.twiml}`);
    const stream = await MediaStreamCall.connect(plan.stream, { accountSid: call.accountSid, callSid: call.sid });
    this.streams.set(call.sid, stream);
    this.endings.set(call.sid, new Promise((resolve) => stream.once('end', () => resolve(this.complete(call)))));
    return stream;
  }

  /** Resolves once the call's stream has ended and its `completed` callback has been answered. */
  ended(call: FakeCall): Promise<WebhookAnswer | undefined> {
    const ending = this.endings.get(call.sid);
    if (!ending) throw new Error('the call has no stream');
    return ending;
  }

  /** Posts `completed` once (a call already in a final status is left alone, and one moved on to other TwiML). */
  private async complete(call: FakeCall): Promise<WebhookAnswer | undefined> {
    if (call.completedReported || this.plan(call).kind !== 'stream') return undefined;
    call.completedReported = true;
    if (!call.statusCallback) return undefined;
    return this.report(call, 'completed');
  }

  async close(): Promise<void> {
    for (const stream of this.streams.values()) stream.stop();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The parameters Twilio sends with every request about a call (geographic ones empty, as when unknown). */
  private callParams(call: FakeCall): Record<string, string> {
    return {
      AccountSid: call.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: call.sid,
      CallStatus: call.status,
      Called: call.to,
      CalledCity: '',
      CalledCountry: 'US',
      CalledState: '',
      CalledZip: '',
      Caller: call.from,
      CallerCity: '',
      CallerCountry: '',
      CallerState: '',
      CallerZip: '',
      Direction: call.direction,
      From: call.from,
      FromCity: '',
      FromCountry: '',
      FromState: '',
      FromZip: '',
      To: call.to,
      ToCity: '',
      ToCountry: 'US',
      ToState: '',
      ToZip: '',
    };
  }

  private account(sid: string): FakeAccount {
    return this.accounts.get(sid)!;
  }

  /** A webhook posted as Twilio posts it: a form, signed with the account's auth token over the URL and the parameters. */
  private async post(
    url: string,
    params: Record<string, string>,
    account: FakeAccount,
    sign?: (url: string, params: Record<string, string>) => string | undefined,
  ): Promise<WebhookAnswer> {
    if (!url) throw new Error('the service has not configured this URL on the stand-in carrier');
    const signature = sign ? sign(url, params) : getExpectedTwilioSignature(account.authToken, url, params);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      'user-agent': 'TwilioProxy/1.1',
      'i-twilio-idempotency-token': randomBytes(16).toString('hex'),
    };
    if (signature !== undefined) headers['x-twilio-signature'] = signature;
    const response = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: await response.text() };
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    if (this.mode === 'down') return void request.socket.destroy();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? '/', this.url);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    this.requests.push({ method: request.method ?? '', path: url.pathname, query: url.searchParams, form });
    const send = (status: number, body: object, headers: Record<string, string> = {}): void => {
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
    };
    if (this.mode === 'failing') return send(500, twilioError(500, 20500, 'Internal Server Error'));
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/(.+)$/.exec(url.pathname);
    const account = match && this.authenticated(request.headers.authorization, match[1]);
    if (!match || !account) {
      const refusal = { ...twilioError(401, 20003, 'Authenticate'), detail: 'Your AccountSid or AuthToken was incorrect.' };
      return send(401, refusal, { 'www-authenticate': 'Basic realm="Twilio API"' });
    }
    const resource = match[2];
    const route = `${request.method} ${resource.replace(/PN[0-9a-f]{32}/, '{PN}').replace(/CA[0-9a-f]{32}/, '{CA}')}`;
    switch (route) {
      case 'GET IncomingPhoneNumbers.json':
        return send(200, this.numbersPage(account, url));
      case 'POST IncomingPhoneNumbers/{PN}.json':
        return this.updateNumber(account, resource.slice('IncomingPhoneNumbers/'.length, -'.json'.length), form, send);
      case 'POST Calls.json':
        return await this.placeCall(account, form, send);
      case 'POST Calls/{CA}.json':
        return this.updateCall(account, resource.slice('Calls/'.length, -'.json'.length), form, send);
      default:
        return send(404, twilioError(404, 20404, `The requested resource ${url.pathname} was not found`));
    }
  }

  private authenticated(authorization: string | undefined, pathSid: string): FakeAccount | undefined {
    const [scheme, encoded] = (authorization ?? '').split(' ');
    if (scheme !== 'Basic' || !encoded) return undefined;
    const [sid, token] = Buffer.from(encoded, 'base64').toString('utf8').split(':');
    const account = this.accounts.get(sid);
    return account && account.authToken === token && sid === pathSid ? account : undefined;
  }

  private numberJson(number: FakeNumber) {
    return {
      account_sid: number.accountSid,
      api_version: '2010-04-01',
      capabilities: { voice: true, sms: true, mms: true, fax: false },
      date_created: rfc2822(number.dateCreated),
      date_updated: rfc2822(number.dateUpdated),
      friendly_name: number.phoneNumber,
      phone_number: number.phoneNumber,
      origin: 'twilio',
      sid: number.sid,
      status: 'in-use',
      status_callback: number.statusCallback,
      status_callback_method: number.statusCallbackMethod,
      voice_method: number.voiceMethod,
      voice_url: number.voiceUrl,
      voice_fallback_url: null,
      voice_fallback_method: 'POST',
      uri: `${API}${number.accountSid}/IncomingPhoneNumbers/${number.sid}.json`,
    };
  }

  private numbersPage(account: FakeAccount, url: URL) {
    const wanted = url.searchParams.get('PhoneNumber');
    const pageSize = Number(url.searchParams.get('PageSize') ?? 50);
    const numbers = [...this.numbers.values()].filter(
      (number) => number.accountSid === account.sid && (wanted === null || number.phoneNumber === wanted),
    );
    const uri = `${API}${account.sid}/IncomingPhoneNumbers.json?${url.searchParams.toString()}`;
    return {
      first_page_uri: uri,
      end: Math.max(0, Math.min(numbers.length, pageSize) - 1),
      previous_page_uri: null,
      incoming_phone_numbers: numbers.slice(0, pageSize).map((number) => this.numberJson(number)),
      uri,
      page_size: pageSize,
      start: 0,
      next_page_uri: null,
      page: 0,
    };
  }

  private updateNumber(account: FakeAccount, sid: string, form: URLSearchParams, send: (status: number, body: object) => void): void {
    const number = this.numbers.get(sid);
    if (!number || number.accountSid !== account.sid) return send(404, twilioError(404, 20404, `The requested resource was not found`));
    number.voiceUrl = form.get('VoiceUrl') ?? number.voiceUrl;
    number.voiceMethod = form.get('VoiceMethod') ?? number.voiceMethod;
    number.statusCallback = form.get('StatusCallback') ?? number.statusCallback;
    number.statusCallbackMethod = form.get('StatusCallbackMethod') ?? number.statusCallbackMethod;
    number.dateUpdated = new Date();
    send(200, this.numberJson(number));
  }

  private callJson(call: FakeCall) {
    return {
      account_sid: call.accountSid,
      annotation: null,
      answered_by: null,
      api_version: '2010-04-01',
      caller_name: null,
      date_created: rfc2822(call.dateCreated),
      date_updated: rfc2822(new Date()),
      direction: call.direction,
      duration: null,
      end_time: null,
      forwarded_from: null,
      from: call.from,
      from_formatted: call.from,
      group_sid: null,
      parent_call_sid: null,
      phone_number_sid: this.number(call.from)?.sid ?? null,
      price: null,
      price_unit: 'USD',
      queue_time: '0',
      sid: call.sid,
      start_time: null,
      status: call.status,
      to: call.to,
      to_formatted: call.to,
      trunk_sid: null,
      uri: `${API}${call.accountSid}/Calls/${call.sid}.json`,
    };
  }

  private async placeCall(account: FakeAccount, form: URLSearchParams, send: (status: number, body: object) => void): Promise<void> {
    const [to, from, twiml] = [form.get('To') ?? '', form.get('From') ?? '', form.get('Twiml') ?? ''];
    if (!E164.test(to)) return send(400, twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`));
    const own = this.number(from);
    if (!own || own.accountSid !== account.sid) {
      return send(400, twilioError(400, 21210, `The source phone number provided, ${from}, is not yet verified for your account.`));
    }
    if (!twiml && !form.get('Url')) return send(400, twilioError(400, 21205, 'A Url or Twiml parameter is required'));
    const refusal = this.refusals.get(to);
    if (refusal) return send(400, twilioError(400, refusal.code, refusal.message));
    const call: FakeCall = {
      sid: `CA${hex(16)}`,
      accountSid: account.sid,
      direction: 'outbound-api',
      from,
      to,
      twiml,
      statusCallback: form.get('StatusCallback') ?? '',
      statusCallbackEvents: form.getAll('StatusCallbackEvent').flatMap((events) => events.split(' ')),
      timeout: Number(form.get('Timeout') ?? 60),
      status: 'queued',
      sequence: 0,
      dateCreated: new Date(),
      params: form,
    };
    this.calls.set(call.sid, call);
    for (const waiter of this.waiting.filter((entry) => entry.to === to)) waiter.resolve(call);
    this.waiting = this.waiting.filter((entry) => entry.to !== to);
    await this.held;
    send(201, this.callJson(call));
  }

  private updateCall(account: FakeAccount, sid: string, form: URLSearchParams, send: (status: number, body: object) => void): void {
    const call = this.calls.get(sid);
    if (!call || call.accountSid !== account.sid) return send(404, twilioError(404, 20404, 'The requested resource was not found'));
    const status = form.get('Status');
    const twiml = form.get('Twiml');
    if (twiml) call.twiml = twiml;
    send(200, this.callJson(call));
    // Ending a call in progress stops its stream (`stop`, closed); `completed` is posted then, after this answer. New
    // TwiML (a `<Dial>`) leaves the stream too, and the call goes on with the dialled party: no `completed` yet.
    const stream = this.streams.get(call.sid);
    if ((status === 'completed' || status === 'canceled') && stream) stream.stop();
    else if (status === 'completed' || status === 'canceled') call.status = status;
    else if (twiml && stream) stream.stop();
  }
}
