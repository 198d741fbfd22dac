import * as fs from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Browser, chromium, ConsoleMessage, Locator, Page } from 'playwright-core';
import { freePort } from '../../scripts/throwaway-postgres';
import { AppConfig } from '../../src/config/config';
import { createTestContext, TestAccount, TestContext } from '../helpers';

/**
 * The embeddable widget in a real browser: the API listens on 127.0.0.1, a plain host page server on another
 * port serves pages that paste each site's embedSnippet. A page is opened as http://localhost:<port> (the
 * sites' allowed domain) or as http://127.0.0.1:<port> (not allowed).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const VIEWPORT = { width: 1000, height: 680 };

/**
 * Where a test saves the documentation's screenshot `docs/<name>`: there only on request (`UPDATE_SCREENSHOT=1`)
 * or when it is missing, so that runs leave the tree clean; otherwise in the temporary directory.
 */
export function screenshotPath(name: string): string {
  const documented = path.join(__dirname, '..', '..', 'docs', name);
  return process.env.UPDATE_SCREENSHOT === '1' || !fs.existsSync(documented) ? documented : path.join(os.tmpdir(), name);
}

/** The host page's own styles, deliberately aggressive: none may reach the widget, and the widget may change none. */
const HOST_CSS = `
  * { text-transform: uppercase; letter-spacing: 2px; }
  body { margin: 0; padding: 40px 56px; font-family: Georgia, serif; color: rgb(20, 30, 40); background: rgb(250, 246, 238); }
  h1 { color: rgb(160, 20, 20); font-size: 44px; margin: 0 0 12px; }
  p { font-size: 18px; line-height: 1.6; max-width: 560px; }
  div { border: 3px dotted rgb(255, 0, 255) !important; }
  button { background: rgb(146, 64, 14) !important; color: rgb(255, 247, 237); font-size: 20px; border: 3px solid rgb(120, 53, 15); border-radius: 4px; padding: 12px 26px; }
  input, textarea { border: 6px solid rgb(255, 0, 255); font-size: 30px; }
  ol, li { margin: 40px; padding: 40px; list-style: upper-roman; background: rgb(255, 255, 0); }
`;

function hostPage(snippet: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme Saree House</title><style>${HOST_CSS}</style></head>
<body><h1>Acme Saree House</h1><p>Handwoven silk and cotton sarees, shipped across India. Free returns within 30 days.</p>
<button id="host-button" type="button">Shop the collection</button>
${snippet}
</body></html>`;
}

/** Serves /site/<name> with that site's snippet pasted in, and /plain without any. */
async function startHostServer(snippets: Map<string, string>): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const name = /^\/site\/(\w+)$/.exec(request.url ?? '')?.[1];
    const snippet = name === undefined ? '' : snippets.get(name);
    if (request.url !== '/plain' && snippet === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(hostPage(snippet ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

export interface OpenedPage {
  page: Page;
  /** Uncaught exceptions in the page. */
  errors: string[];
  warnings: string[];
}

export interface WidgetHarness {
  context: TestContext;
  /** The API's address (`http://127.0.0.1:<port>`). */
  apiUrl: string;
  hostPort: number;
  browser: Browser;
  /** Creates a widget site of the account and serves its page at /site/<name>. */
  createSite(owner: TestAccount, name: string, body: object): Promise<{ id: number; siteKey: string; embedSnippet: string }>;
  /** Opens a host page; `host` picks the host name the sites allow (localhost) or one they do not (127.0.0.1). */
  open(pathname: string, options?: { host?: 'localhost' | '127.0.0.1'; init?: InitScript }): Promise<OpenedPage>;
  close(): Promise<void>;
}

/** A script run in the page before its own (page.addInitScript): a function of one serialisable argument. */
export interface InitScript {
  script: (argument: never) => void;
  argument?: unknown;
}

/** The API (on the test database, with these configuration overrides), a host page server and Chromium (with these extra flags). */
export async function startWidgetHarness(overrides: Partial<AppConfig> = {}, chromiumArgs: string[] = []): Promise<WidgetHarness> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} not found: install it with apt-get install -y chromium (or set CHROMIUM_PATH)`);
  const apiPort = await freePort();
  const context = await createTestContext({ port: apiPort, publicBaseUrl: `http://127.0.0.1:${apiPort}`, ...overrides });
  await context.app.listen(apiPort, '127.0.0.1');
  const snippets = new Map<string, string>();
  const hostServer = await startHostServer(snippets);
  const hostPort = (hostServer.address() as AddressInfo).port;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...chromiumArgs] });
  return {
    context,
    apiUrl: `http://127.0.0.1:${apiPort}`,
    hostPort,
    browser,
    async createSite(owner, name, body) {
      const site = (await context.as(owner).post('/widget/sites').send(body).expect(201)).body;
      snippets.set(name, site.embedSnippet);
      return site;
    },
    async open(pathname, { host = 'localhost', init } = {}) {
      const page = await browser.newPage({ viewport: VIEWPORT });
      const errors: string[] = [];
      const warnings: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (message: ConsoleMessage) => message.type() === 'warning' && warnings.push(message.text()));
      if (init) await page.addInitScript(init.script, init.argument as never);
      await page.goto(`http://${host}:${hostPort}${pathname}`);
      return { page, errors, warnings };
    },
    async close() {
      await browser.close();
      await new Promise<void>((resolve) => hostServer.close(() => resolve()));
      await context.close();
    },
  };
}

/** Chromium's fake microphone, granted without asking, playing this WAV file once (then silence). */
export const fakeMicrophone = (wav: string): string[] => [
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
  `--use-file-for-fake-audio-capture=${wav}%noloop`,
  '--autoplay-policy=no-user-gesture-required',
];

/** The parts of the widget, by the selectors of its shadow tree (Playwright's CSS locators pierce open shadow roots). */
export const widget = (page: Page) => {
  const part = (selector: string): Locator => page.locator(`voice-agent-widget ${selector}`);
  return {
    launcher: part('.launcher'),
    panel: part('.panel'),
    start: part('.start'),
    status: part('.status'),
    messages: part('.messages .message'),
    agentMessages: part('.messages .message.agent .text'),
    input: part('textarea'),
    send: part('.send'),
    end: part('.end'),
    mute: part('.mute'),
    listening: part('.listening'),
    notice: part('.notice'),
    error: part('.error'),
    ended: part('.ended'),
    restart: part('.restart'),
    announcer: part('.announcer'),
  };
};

/** What the shop's knowledge base says: one source each, so that each question's best passage is one of these. */
export const KNOWLEDGE = {
  delivery:
    'Delivery: we ship every order across India within 3 to 5 working days, by courier with tracking. Orders above 2,000 rupees ship free; smaller orders pay 99 rupees for shipping.',
  returns:
    'Returns: an unworn saree may be returned within 30 days for a full refund. Our courier collects the returned saree from your door, and the refund reaches your account within a week.',
};

/** An agent (language en-IN) that answers from a knowledge base with the KNOWLEDGE sources, with the built-in answerer. */
export async function createShopAgent(context: TestContext, owner: TestAccount): Promise<{ id: number; name: string; language: string }> {
  const kb = (await context.as(owner).post('/knowledge-bases').send({ name: 'Shop policies' }).expect(201)).body;
  for (const [name, content] of Object.entries(KNOWLEDGE)) {
    await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name, type: 'text', content }).expect(201);
  }
  return (
    await context
      .as(owner)
      .post('/agents')
      .send({ name: 'Asha', language: 'en-IN', knowledgeBaseIds: [kb.id] })
      .expect(201)
  ).body;
}
