import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Browser, chromium, ConsoleMessage, Page } from 'playwright-core';
import { freePort } from '../../scripts/throwaway-postgres';
import { createTestContext, TestAccount, TestContext } from '../helpers';

// page.evaluate() callbacks run in the browser. The project compiles without the DOM library (it would
// let server code use browser globals), so the few browser globals used here are declared in this module only.
declare const document: { querySelector(selector: string): BrowserElement | null; addEventListener(type: string, listener: (event: { detail: unknown }) => void, options?: object): void };
declare function getComputedStyle(element: BrowserElement): Record<string, string>;
interface BrowserElement {
  shadowRoot: { querySelector(selector: string): BrowserElement | null } | null;
}

/**
 * The embeddable widget in a real browser: the API listens on 127.0.0.1, a plain host page server on
 * another port serves pages that paste each site's embedSnippet. The page is opened as
 * http://localhost:<port> (the sites' allowed domain) or as http://127.0.0.1:<port> (not allowed).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const VIEWPORT = { width: 1000, height: 680 };
const EDGE = 20; // px between the launcher and the viewport's corner
const DOCS_SCREENSHOT = path.join(__dirname, '..', '..', 'docs', 'widget-screenshot.png');
/** The README's screenshot is rewritten only on request (or when missing), so that runs leave the tree clean. */
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOT === '1' || !fs.existsSync(DOCS_SCREENSHOT) ? DOCS_SCREENSHOT : path.join(os.tmpdir(), 'widget-screenshot.png');
const NOT_SHOWN = '[voice-agent widget] not shown';

/** The host page's own styles, deliberately aggressive: none may reach the widget, and the widget may change none. */
const HOST_CSS = `
  * { text-transform: uppercase; letter-spacing: 2px; }
  body { margin: 0; padding: 40px 56px; font-family: Georgia, serif; color: rgb(20, 30, 40); background: rgb(250, 246, 238); }
  h1 { color: rgb(160, 20, 20); font-size: 44px; margin: 0 0 12px; }
  p { font-size: 18px; line-height: 1.6; max-width: 560px; }
  div { border: 3px dotted rgb(255, 0, 255) !important; }
  button { background: rgb(146, 64, 14) !important; color: rgb(255, 247, 237); font-size: 20px; border: 3px solid rgb(120, 53, 15); border-radius: 4px; padding: 12px 26px; }
  input { border: 6px solid rgb(255, 0, 255); font-size: 30px; }
`;

function hostPage(snippet: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme Saree House</title><style>${HOST_CSS}</style></head>
<body><h1>Acme Saree House</h1><p>Handwoven silk and cotton sarees, shipped across India. Free returns within 30 days.</p>
<button id="host-button" type="button">Shop the collection</button>
${snippet}
</body></html>`;
}

/** Serves /site/<id> with that site's snippet pasted in, and /plain without any. */
async function startHostServer(snippets: Map<string, string>): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const id = /^\/site\/(\w+)$/.exec(request.url ?? '')?.[1];
    const snippet = id === undefined ? '' : snippets.get(id);
    if (request.url !== '/plain' && snippet === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(hostPage(snippet ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Computed styles of the host page's own elements, to compare with and without the widget. */
const hostStyles = (page: Page) =>
  page.evaluate(() => {
    const pick = (selector: string) => {
      const style = getComputedStyle(document.querySelector(selector)!);
      return [style.color, style.backgroundColor, style.fontFamily, style.fontSize, style.margin, style.padding, style.border, style.textTransform];
    };
    return { body: pick('body'), h1: pick('h1'), p: pick('p'), button: pick('#host-button') };
  });

describe('embeddable widget in Chromium', () => {
  let context: TestContext;
  let owner: TestAccount;
  let hostServer: http.Server;
  let hostPort: number;
  let browser: Browser;
  const snippets = new Map<string, string>();
  const sites: Record<string, { id: number; embedSnippet: string }> = {};

  beforeAll(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install it with apt-get install -y chromium (or set CHROMIUM_PATH)`);
    const apiPort = await freePort();
    context = await createTestContext({ port: apiPort, publicBaseUrl: `http://127.0.0.1:${apiPort}` });
    await context.app.listen(apiPort, '127.0.0.1');
    hostServer = await startHostServer(snippets);
    hostPort = (hostServer.address() as AddressInfo).port;
    owner = await context.createAccount({ name: 'Acme Saree House' });
    const agent = (await context.as(owner).post('/agents').send({ name: 'Asha', systemPrompt: 'Internal: never shown' }).expect(201)).body;
    const create = async (key: string, body: object) => {
      sites[key] = (await context.as(owner).post('/widget/sites').send(body).expect(201)).body;
      snippets.set(key, sites[key].embedSnippet);
    };
    await create('voice', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `http://localhost:${hostPort}/`,
      widgetPosition: 'bottom-right',
      widgetLabel: 'Talk to Asha',
      widgetAvatar: 'female',
      widgetGreeting: 'Namaste! Questions about sizes or delivery? Ask me.',
      widgetMode: 'voice',
    });
    await create('chat', {
      name: 'Support chat',
      allowedDomain: `localhost:${hostPort}`,
      widgetPosition: 'bottom-left',
      widgetLabel: 'Chat with us',
      widgetAvatar: 'robot',
      widgetMode: 'chat',
      widgetAskName: false,
      widgetAskPhone: false,
    });
    await create('elsewhere', { name: 'Elsewhere', allowedDomain: '*.example.com' });
    await create('anywhere', { name: 'Anywhere', widgetAskName: false, widgetLabel: 'Help' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (hostServer ? hostServer.close(() => resolve()) : resolve()));
    await context?.close();
  });

  /** Opens a host page; `allowed` picks the host name the sites allow (localhost) or one they do not (127.0.0.1). */
  async function open(pathname: string, host: 'localhost' | '127.0.0.1' = 'localhost') {
    const page = await browser.newPage({ viewport: VIEWPORT });
    const errors: string[] = [];
    const warnings: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message: ConsoleMessage) => message.type() === 'warning' && warnings.push(message.text()));
    await page.goto(`http://${host}:${hostPort}${pathname}`);
    return { page, errors, warnings };
  }

  const launcher = (page: Page) => page.locator('voice-agent-widget .launcher');

  it('shows the launcher with the label and the greeting at the bottom-right corner', async () => {
    const { page, errors } = await open('/site/voice');
    await launcher(page).waitFor();
    expect(await launcher(page).innerText()).toBe('Talk to Asha');
    expect(await page.locator('voice-agent-widget .bubble').innerText()).toContain('Namaste! Questions about sizes or delivery? Ask me.');
    const box = (await launcher(page).boundingBox())!;
    expect(Math.round(VIEWPORT.width - (box.x + box.width))).toBe(EDGE);
    expect(Math.round(VIEWPORT.height - (box.y + box.height))).toBe(EDGE);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('opens the panel with the name and phone fields, and saves the screenshot', async () => {
    const { page } = await open('/site/voice');
    await launcher(page).click();
    const panel = page.locator('voice-agent-widget .panel');
    await panel.waitFor();
    expect(await launcher(page).getAttribute('aria-expanded')).toBe('true');
    expect(await panel.locator('.title').innerText()).toBe('Asha');
    await expect(panel.locator('input[name="name"]').isVisible()).resolves.toBe(true);
    await expect(panel.locator('input[name="phone"]').isVisible()).resolves.toBe(true);
    expect(await panel.locator('.start').innerText()).toBe('Start call');
    await panel.locator('input[name="name"]').fill('Priya Sharma');
    await panel.locator('input[name="phone"]').fill('+91 98765 43210');
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);

    const started = page.evaluate(
      () => new Promise((resolve) => document.addEventListener('voice-agent-widget:start', (event) => resolve(event.detail), { once: true })),
    );
    await panel.locator('.start').click();
    await expect(started).resolves.toEqual({ siteKey: expect.stringMatching(/^ws_/), mode: 'voice', name: 'Priya Sharma', phone: '+91 98765 43210' });

    await panel.locator('.close').click();
    await expect(panel.isVisible()).resolves.toBe(false);
    await page.close();
  });

  it('shows no fields when the site asks for neither name nor phone, at the bottom-left corner', async () => {
    const { page } = await open('/site/chat');
    await launcher(page).waitFor();
    const box = (await launcher(page).boundingBox())!;
    expect(Math.round(box.x)).toBe(EDGE);
    expect(Math.round(VIEWPORT.height - (box.y + box.height))).toBe(EDGE);
    expect(await page.locator('voice-agent-widget .bubble').count()).toBe(0);
    await launcher(page).click();
    const panel = page.locator('voice-agent-widget .panel');
    await panel.waitFor();
    expect(await panel.locator('input').count()).toBe(0);
    expect(await panel.locator('.start').innerText()).toBe('Start chat');
    await page.close();
  });

  it('shows only the fields the site asks for', async () => {
    const { page } = await open('/site/anywhere');
    await launcher(page).click();
    const panel = page.locator('voice-agent-widget .panel');
    await panel.waitFor();
    expect(await panel.locator('input[name="name"]').count()).toBe(0);
    await expect(panel.locator('input[name="phone"]').isVisible()).resolves.toBe(true);
    await page.close();
  });

  it('renders nothing on a page whose domain is not allowed', async () => {
    for (const [site, host] of [
      ['voice', '127.0.0.1'],
      ['elsewhere', 'localhost'],
    ] as const) {
      const { page, warnings } = await open(`/site/${site}`, host);
      await page.waitForEvent('console', { predicate: (message) => message.text().startsWith(NOT_SHOWN), timeout: 10_000 }).catch(() => undefined);
      expect(warnings.some((text) => text.startsWith(NOT_SHOWN))).toBe(true);
      expect(await page.locator('voice-agent-widget').count()).toBe(0);
      await page.close();
    }
  });

  it('renders on any domain when the site allows every domain', async () => {
    const { page } = await open('/site/anywhere', '127.0.0.1');
    await launcher(page).waitFor();
    expect(await launcher(page).innerText()).toBe('Help');
    await page.close();
  });

  it('leaves the host page\'s styles untouched, and is untouched by them', async () => {
    const plain = await open('/plain');
    const before = await hostStyles(plain.page);
    await plain.page.close();

    const { page } = await open('/site/voice');
    await launcher(page).click();
    await page.locator('voice-agent-widget .panel').waitFor();
    await page.mouse.move(0, 0); // no hover colour
    expect(await hostStyles(page)).toEqual(before);
    expect(before.h1[0]).toBe('rgb(160, 20, 20)');
    expect(before.button[1]).toBe('rgb(146, 64, 14)');

    const widget = await page.evaluate(() => {
      const root = document.querySelector('voice-agent-widget')!.shadowRoot!;
      const style = (selector: string) => getComputedStyle(root.querySelector(selector)!);
      const host = getComputedStyle(document.querySelector('voice-agent-widget')!);
      const [launcher, input, panel, head] = [style('.launcher'), style('input'), style('.panel'), style('.head')];
      return {
        hostBorder: host.borderStyle,
        headBorder: head.borderStyle,
        launcher: [launcher.backgroundColor, launcher.fontSize, launcher.textTransform, launcher.borderStyle, launcher.letterSpacing],
        input: [input.fontSize, input.borderTopWidth, input.borderTopColor],
        panelFont: panel.fontFamily,
      };
    });
    expect(widget).toEqual({
      hostBorder: 'none',
      headBorder: 'none',
      launcher: ['rgb(67, 56, 202)', '15px', 'none', 'none', 'normal'],
      input: ['15px', '1px', 'rgb(200, 204, 216)'],
      panelFont: expect.not.stringContaining('Georgia'),
    });
    await page.close();
  });
});
