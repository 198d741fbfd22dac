/**
 * A widget site's `allowedDomain`, and whether a page's `Origin` matches it. Pure functions, no I/O.
 *
 * Stored form: "" (any site), a host name (`example.com`), a host with a port (`localhost:5173`), or
 * `*.` + a host name (`*.example.com`). Always lowercase, IDN host names in their punycode (xn--) form,
 * the form browsers put in the `Origin` header.
 *
 * Matching rules:
 * - "" matches every origin (and a request without `Origin`).
 * - `example.com` matches exactly that host: not `www.example.com`.
 * - `*.example.com` matches every subdomain at any depth AND the apex `example.com` itself (a site has one
 *   allowedDomain, and "my site and its subdomains" is what people mean by it).
 * - The port is ignored unless the allowedDomain names one: `localhost` matches `http://localhost:5173`,
 *   `localhost:5173` matches only that port. The scheme is never compared (http and https alike).
 */

export type DomainResult = { ok: true; domain: string } | { ok: false; problem: string };

export const MAX_HOST_LENGTH = 253;
const WILDCARD = '*.';
/** The longest stored form, `*.` + a 253-character host + `:65535`: the size of the column. */
export const MAX_ALLOWED_DOMAIN_LENGTH = WILDCARD.length + MAX_HOST_LENGTH + ':65535'.length;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

const invalid = (problem: string): DomainResult => ({ ok: false, problem });

/** Parses `host[:port]` the way a browser would, with any path, query or fragment dropped. */
function parseHost(text: string): URL | undefined {
  const candidate = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  try {
    return new URL(candidate);
  } catch {
    return undefined;
  }
}

/** The host as typed: after any scheme and `*.`, before any port, path, query or fragment; lowercase, no trailing dot. */
function writtenHost(text: string): string {
  const authority = text.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split(/[/?#]/, 1)[0];
  const host = authority.startsWith('[') ? authority : authority.replace(/:[^:]*$/, '');
  return host.replace(/^\*\./, '').replace(/\.$/, '').toLowerCase();
}

function hostProblem(hostname: string, wildcard: boolean): string | undefined {
  if (hostname.length === 0 || hostname.length > MAX_HOST_LENGTH) return 'must name a host of 1–253 characters';
  if (hostname.startsWith('[')) return wildcard ? 'cannot put *. before an IP address' : undefined; // IPv6 literal, checked by URL
  if (IPV4.test(hostname)) return wildcard ? 'cannot put *. before an IP address' : undefined;
  const labels = hostname.split('.');
  if (!labels.every((label) => LABEL.test(label))) return 'is not a valid host name';
  if (/^\d+$/.test(labels[labels.length - 1])) return 'is not a valid host name';
  if (hostname === 'localhost') return wildcard ? 'cannot put *. before localhost' : undefined;
  if (labels.length < 2) return 'must be a full host name such as example.com (or localhost)';
  return undefined;
}

/**
 * Normalises what a customer typed or pasted: "" stays "" (any site); a URL is reduced to its host and
 * port; the result is lowercase, without a trailing dot. Refuses anything that is not a host name, an IP
 * address, `localhost` or `*.` + a host name, with the problem in words.
 */
export function normaliseAllowedDomain(input: string): DomainResult {
  const text = input.trim();
  if (text === '') return { ok: true, domain: '' };
  const leadingWildcard = text.startsWith(WILDCARD);
  const url = parseHost(leadingWildcard ? text.slice(WILDCARD.length) : text);
  if (!url || url.hostname === '') return invalid('must be a host name such as example.com, *.example.com or localhost:5173');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return invalid('must be a host name or an http(s) address');
  if (url.username || url.password) return invalid('must not contain a user name or password');
  // `https://*.example.com/` pasted whole: the wildcard comes after the scheme.
  const wildcard = leadingWildcard || url.hostname.startsWith(WILDCARD);
  const hostname = (wildcard && !leadingWildcard ? url.hostname.slice(WILDCARD.length) : url.hostname).replace(/\.$/, '');
  if (hostname.includes('*')) return invalid('may only use * as a leading "*." (any subdomain)');
  const problem = hostProblem(hostname, wildcard);
  if (problem) return invalid(problem);
  // The URL parser reads `1.2.3` as 1.2.0.3 and `0x7f.1` as 127.0.0.1: an address is kept only as it was written.
  if (IPV4.test(hostname) && writtenHost(text) !== hostname)
    return invalid('must write an IPv4 address as four numbers, such as 192.0.2.10');
  if (url.port === '0') return invalid('must have a port from 1 to 65535');
  return { ok: true, domain: `${wildcard ? WILDCARD : ''}${hostname}${url.port ? `:${url.port}` : ''}` };
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** The host and the effective port of an `Origin` header value; undefined for `null` or anything else. */
function parseOrigin(origin: string): { hostname: string; port: string } | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  if (!(url.protocol in DEFAULT_PORTS) || url.hostname === '') return undefined;
  return { hostname: url.hostname.replace(/\.$/, ''), port: url.port || DEFAULT_PORTS[url.protocol] };
}

/** Splits a stored allowedDomain into its host pattern and its port ('' when none is named). */
function splitPort(allowedDomain: string): { pattern: string; port: string } {
  const match = /^(.*?)(?::(\d+))?$/.exec(allowedDomain)!;
  return { pattern: match[1], port: match[2] ?? '' };
}

/** Whether a page whose `Origin` header is `origin` (undefined: none sent) may use a site with this allowedDomain. */
export function originMatches(allowedDomain: string, origin: string | undefined): boolean {
  if (allowedDomain === '') return true;
  if (origin === undefined) return false;
  const page = parseOrigin(origin);
  if (!page) return false;
  const { pattern, port } = splitPort(allowedDomain);
  if (port !== '' && port !== page.port) return false;
  if (pattern.startsWith(WILDCARD)) {
    const apex = pattern.slice(WILDCARD.length);
    return page.hostname === apex || page.hostname.endsWith(`.${apex}`);
  }
  return page.hostname === pattern;
}
