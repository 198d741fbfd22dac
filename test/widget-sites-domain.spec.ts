import { Script } from 'node:vm';
import { loadConfig } from '../src/config/config';
import { MAX_ALLOWED_DOMAIN_LENGTH, normaliseAllowedDomain, originMatches } from '../src/widget-sites/allowed-domain';
import { embedSnippet } from '../src/widget-sites/embed-snippet';
import { EMBED_SCRIPT } from '../src/widget-sites/embed-script';
import { generateSiteKey, isSiteKeyShaped } from '../src/widget-sites/site-key';

describe('normaliseAllowedDomain', () => {
  it.each([
    ['', ''],
    ['   ', ''],
    ['example.com', 'example.com'],
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['https://www.example.com/pricing?utm=x#top', 'www.example.com'],
    ['http://example.com:80/', 'example.com'],
    ['https://example.com:443', 'example.com'],
    ['https://example.com:8443/a', 'example.com:8443'],
    ['example.com/some/path', 'example.com'],
    ['*.example.com', '*.example.com'],
    ['*.Example.com/', '*.example.com'],
    ['https://*.example.com/', '*.example.com'],
    ['localhost', 'localhost'],
    ['localhost:5173', 'localhost:5173'],
    ['http://localhost:5173/app', 'localhost:5173'],
    ['127.0.0.1:8080', '127.0.0.1:8080'],
    ['https://192.0.2.10:1/', '192.0.2.10:1'],
    ['HTTP://192.0.2.10./x?y#z', '192.0.2.10'],
    ['localhost:65535', 'localhost:65535'],
    ['http://[::1]:3000/', '[::1]:3000'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['shop.example.co.uk', 'shop.example.co.uk'],
    ['a-b.example.com', 'a-b.example.com'],
  ])('%j → %j', (input, expected) => {
    expect(normaliseAllowedDomain(input)).toEqual({ ok: true, domain: expected });
  });

  it.each([
    ['*', /\*\./],
    ['*.', /host/],
    ['*.*.example.com', /\*\./],
    ['shop.*.example.com', /\*\./],
    ['ex*ample.com', /\*\./],
    ['*.localhost', /localhost/],
    ['*.127.0.0.1', /IP address/],
    ['intranet', /full host name/],
    ['*.com', /full host name/],
    ['exa mple.com', /host/],
    ['-example.com', /valid host name/],
    ['example-.com', /valid host name/],
    ['under_score.example.com', /valid host name/],
    ['example.123', /host name/],
    ['ftp://files.example.com', /http/],
    ['javascript:alert(1)', /host/],
    ['https://user:secret@example.com', /user name or password/],
    ['example.com:99999', /host/],
    ['localhost:0', /port from 1 to 65535/],
    ['example.com:0', /port from 1 to 65535/],
    ['1.2.3', /four numbers/],
    ['0x7f.1', /four numbers/],
    ['http://2130706433/', /four numbers/],
    ['127.000.000.001', /four numbers/],
    ['01.2.3.4', /four numbers/],
    ['http://0x7f.1/127.0.0.1', /four numbers/],
    ['1.2.3/1.2.0.3', /four numbers/],
    ['http://1.2.3/?1.2.0.3', /four numbers/],
    ['https://*.1.2.3#1.2.0.3', /host name/],
    [`${'a'.repeat(64)}.com`, /valid host name/],
    [`${'a'.repeat(60)}.`.repeat(5) + 'com', /1–253/],
  ])('refuses %j', (input, problem) => {
    const result = normaliseAllowedDomain(input);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problem).toMatch(problem);
  });

  it('never returns more than MAX_ALLOWED_DOMAIN_LENGTH characters (the column size): the longest is *. + 253 + :65535', () => {
    const host = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
    const longest = normaliseAllowedDomain(`HTTPS://*.${host}.:65535/path`);
    expect(longest).toEqual({ ok: true, domain: `*.${host}:65535` });
    expect(longest.ok && longest.domain.length).toBe(MAX_ALLOWED_DOMAIN_LENGTH);
    expect(normaliseAllowedDomain(`*.x${host}:65535`).ok).toBe(false);
  });

  it('is idempotent on what it returns', () => {
    for (const input of ['HTTPS://A.Example.com:8443/x', '*.example.com', 'localhost:5173', '[::1]:3000']) {
      const first = normaliseAllowedDomain(input);
      expect(first.ok && normaliseAllowedDomain(first.domain)).toEqual(first);
    }
  });
});

describe('originMatches', () => {
  it.each([
    // allowedDomain "" allows every origin, and requests without one
    ['', 'https://anything.example', true],
    ['', 'null', true],
    ['', undefined, true],
    // exact host, any scheme, any port when none is named
    ['example.com', 'https://example.com', true],
    ['example.com', 'http://example.com:8080', true],
    ['example.com', 'https://EXAMPLE.com', true],
    ['example.com', 'https://www.example.com', false],
    ['example.com', 'https://example.com.evil.net', false],
    ['example.com', 'https://notexample.com', false],
    ['example.com', 'https://example.co', false],
    // wildcard: the apex and every subdomain at any depth
    ['*.example.com', 'https://example.com', true],
    ['*.example.com', 'https://shop.example.com', true],
    ['*.example.com', 'https://a.b.example.com', true],
    ['*.example.com', 'https://badexample.com', false],
    ['*.example.com', 'https://example.com.evil.net', false],
    // a named port must match (default ports count)
    ['localhost:5173', 'http://localhost:5173', true],
    ['localhost:5173', 'http://localhost:5174', false],
    ['localhost:5173', 'http://localhost', false],
    ['example.com:443', 'https://example.com', true],
    ['example.com:443', 'http://example.com', false],
    ['localhost', 'http://localhost:3000', true],
    ['127.0.0.1:8080', 'http://127.0.0.1:8080', true],
    ['[::1]:3000', 'http://[::1]:3000', true],
    ['xn--bcher-kva.example', 'https://bücher.example', true],
    // no or unusable Origin
    ['example.com', undefined, false],
    ['example.com', 'null', false],
    ['example.com', '', false],
    ['example.com', 'file:///C:/page.html', false],
    ['example.com', 'chrome-extension://example.com', false],
    ['example.com', 'https://example.com, https://evil.net', false],
  ])('allowedDomain %j, Origin %j → %s', (allowedDomain, origin, expected) => {
    expect(originMatches(allowedDomain, origin)).toBe(expected);
  });
});

describe('site keys', () => {
  it('are ws_ + 192 random bits, URL-safe, and different every time', () => {
    const keys = Array.from({ length: 1000 }, generateSiteKey);
    expect(new Set(keys).size).toBe(1000);
    for (const key of keys) {
      expect(key).toMatch(/^ws_[A-Za-z0-9_-]{32}$/);
      expect(encodeURIComponent(key)).toBe(key);
      expect(isSiteKeyShaped(key)).toBe(true);
    }
  });

  it.each(['', 'ws_', 'vak_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'ws_AAAA', `ws_${'A'.repeat(33)}`, 'ws_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='])(
    '%j is not shaped like one',
    (value) => {
      expect(isSiteKeyShaped(value)).toBe(false);
    },
  );
});

describe('embed snippet and script', () => {
  it('is one async script tag with the key, from the public base URL', () => {
    expect(embedSnippet('https://api.example.com/voice/', 'ws_key')).toBe(
      '<script src="https://api.example.com/voice/widget/embed.js?v=2" data-site-key="ws_key" async></script>',
    );
  });

  it('escapes what could break out of the attributes', () => {
    expect(embedSnippet('https://x.example/"><b', 'ws_"k')).toBe(
      '<script src="https://x.example/&quot;&gt;&lt;b/widget/embed.js?v=2" data-site-key="ws_&quot;k" async></script>',
    );
  });

  it('ships a script that parses, with its version filled in', () => {
    expect(() => new Script(EMBED_SCRIPT)).not.toThrow(); // compiled as a page loads it, not run
    expect(EMBED_SCRIPT).toContain('__voiceAgentWidgets');
    expect(EMBED_SCRIPT).not.toContain('__VERSION__');
  });
});

describe('widget rate-limit configuration', () => {
  it('defaults to 60 requests per 60 seconds', () => {
    expect(loadConfig({})).toMatchObject({ widgetRateLimit: 60, widgetRateLimitWindowSeconds: 60 });
  });

  it('reads both variables', () => {
    expect(loadConfig({ WIDGET_RATE_LIMIT: '5', WIDGET_RATE_LIMIT_WINDOW_SECONDS: '10' })).toMatchObject({
      widgetRateLimit: 5,
      widgetRateLimitWindowSeconds: 10,
    });
  });

  it.each([
    ['WIDGET_RATE_LIMIT', '0'],
    ['WIDGET_RATE_LIMIT', 'lots'],
    ['WIDGET_RATE_LIMIT_WINDOW_SECONDS', '-1'],
    ['WIDGET_RATE_LIMIT_WINDOW_SECONDS', '86401'],
  ])('refuses %s=%s naming the variable', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^Invalid configuration: ${variable} `));
  });
});
