import { isUuid } from '../common/id.pipes';

/**
 * The paging cursor of `GET /calls?before=`: the position of the last call of a page in the list's order,
 * (callDate, id). Clients treat it as opaque; it is base64url of the JSON `[1, "<callDate ISO>", "<id>"]`,
 * the version first so that the format can change without old cursors being misread. It holds only what the
 * client was just shown (that call's callDate and id): no account, no filter, nothing secret. It is not signed,
 * so a client can write a well-formed cursor itself; that is harmless: it only says where a page starts among
 * the caller's own calls, as filtered by the request (the account and filters are never the cursor's).
 */
export interface ListCursor {
  callDate: Date;
  id: string;
}

const VERSION = 1;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** What Date#toISOString writes: four-digit years, or six with a sign. */
const ISO_TIMESTAMP = /^(\d{4}|[+-]\d{6})-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** The range of PostgreSQL's timestamptz (from 24 November 4714 BC) that a Date can hold (to 275760 AD). */
const MIN_TIME = Date.UTC(-4713, 10, 24);
const MAX_TIME = 8.64e15;
/** Far longer than any cursor this writes (about 90 characters): refused before decoding. */
const MAX_LENGTH = 200;

export function encodeListCursor({ callDate, id }: ListCursor): string {
  return Buffer.from(JSON.stringify([VERSION, callDate.toISOString(), id])).toString('base64url');
}

/** The cursor's position, or undefined when the text is not exactly what this service writes for one (the caller's 400). */
export function decodeListCursor(text: string): ListCursor | undefined {
  if (text.length > MAX_LENGTH || !BASE64URL.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [version, date, id] = value as unknown[];
  if (version !== VERSION || typeof date !== 'string' || typeof id !== 'string') return undefined;
  if (!ISO_TIMESTAMP.test(date) || !isUuid(id) || id !== id.toLowerCase()) return undefined;
  const callDate = new Date(date);
  const time = callDate.getTime();
  if (!(time >= MIN_TIME && time <= MAX_TIME)) return undefined;
  const cursor = { callDate, id };
  // Only the exact text this service writes: no other spelling of the JSON or of its base64url (stray bits,
  // which Buffer ignores), no date that does not exist (2026-02-30 would roll over).
  return encodeListCursor(cursor) === text ? cursor : undefined;
}
