import { Page } from 'playwright-core';
import { TestAccount } from '../helpers';
import { startWidgetHarness, VIEWPORT, widget, WidgetHarness } from './harness';

// page.evaluate() callbacks run in the browser. The project compiles without the DOM library (it would
// let server code use browser globals), so the few browser globals used here are declared in this module only.
declare const document: {
  querySelector(selector: string): BrowserElement | null;
  addEventListener(type: string, listener: (event: { detail: unknown }) => void, options?: object): void;
};
declare function getComputedStyle(element: BrowserElement): Record<string, string>;
interface BrowserElement {
  shadowRoot: { querySelector(selector: string): BrowserElement | null } | null;
}

/** The widget's rendering in Chromium (see harness.ts): launcher, panel, domains, and the host page's styles. */
const EDGE = 20; // px between the launcher and the viewport's corner
const NOT_SHOWN = '[voice-agent widget] not shown';

/** Computed styles of the host page's own elements, to compare with and without the widget. */
const hostStyles = (page: Page) =>
  page.evaluate(() => {
    const pick = (selector: string) => {
      const style = getComputedStyle(document.querySelector(selector)!);
      return [
        style.color,
        style.backgroundColor,
        style.fontFamily,
        style.fontSize,
        style.margin,
        style.padding,
        style.border,
        style.textTransform,
      ];
    };
    return { body: pick('body'), h1: pick('h1'), p: pick('p'), button: pick('#host-button') };
  });

describe('embeddable widget in Chromium', () => {
  let harness: WidgetHarness;
  let owner: TestAccount;

  beforeAll(async () => {
    harness = await startWidgetHarness();
    const { context, hostPort } = harness;
    owner = await context.createAccount({ name: 'Acme Saree House' });
    const agent = (await context.as(owner).post('/agents').send({ name: 'Asha', systemPrompt: 'Internal: never shown' }).expect(201)).body;
    await harness.createSite(owner, 'voice', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `http://localhost:${hostPort}/`,
      widgetPosition: 'bottom-right',
      widgetLabel: 'Talk to Asha',
      widgetAvatar: 'female',
      widgetGreeting: 'Namaste! Questions about sizes or delivery? Ask me.',
      widgetMode: 'voice',
    });
    await harness.createSite(owner, 'chat', {
      name: 'Support chat',
      allowedDomain: `localhost:${hostPort}`,
      widgetPosition: 'bottom-left',
      widgetLabel: 'Chat with us',
      widgetAvatar: 'robot',
      widgetMode: 'chat',
      widgetAskName: false,
      widgetAskPhone: false,
    });
    await harness.createSite(owner, 'elsewhere', { name: 'Elsewhere', allowedDomain: '*.example.com' });
    await harness.createSite(owner, 'anywhere', { name: 'Anywhere', widgetAskName: false, widgetLabel: 'Help' });
  });

  afterAll(() => harness?.close());

  const open = (pathname: string, host: 'localhost' | '127.0.0.1' = 'localhost') => harness.open(pathname, { host });
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

  it('opens the panel with the name and phone fields; Start dispatches the start event with them', async () => {
    const { page, errors } = await open('/site/voice');
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

    const started = page.evaluate(
      () =>
        new Promise((resolve) => document.addEventListener('voice-agent-widget:start', (event) => resolve(event.detail), { once: true })),
    );
    await panel.locator('.start').click();
    await expect(started).resolves.toEqual({
      siteKey: expect.stringMatching(/^ws_/),
      mode: 'voice',
      name: 'Priya Sharma',
      phone: '+91 98765 43210',
    });
    await widget(page).end.waitFor(); // and the built-in conversation started (widget-chat.browser.ts follows it)

    await panel.locator('.close').click();
    await expect(panel.isVisible()).resolves.toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('says so when the site has no agent to talk to', async () => {
    const { page } = await open('/site/chat');
    await launcher(page).click();
    await widget(page).start.click();
    await expect(
      widget(page).status.filter({ hasText: 'This assistant is not available at the moment.' }).waitFor(),
    ).resolves.toBeUndefined();
    expect(await widget(page).input.count()).toBe(1);
    await expect(widget(page).input.isVisible()).resolves.toBe(false);
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
      await page
        .waitForEvent('console', { predicate: (message) => message.text().startsWith(NOT_SHOWN), timeout: 10_000 })
        .catch(() => undefined);
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

  it("leaves the host page's styles untouched, and is untouched by them", async () => {
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
