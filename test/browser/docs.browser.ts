import { startWidgetHarness, VIEWPORT, WidgetHarness } from './harness';

/**
 * Swagger UI at /docs renders the OpenAPI 3.1 document in Chromium: its version, the operations, and the webhooks
 * (the requests the service sends), with no error from the UI or the page.
 */
describe('the API reference (Swagger UI at /docs) in Chromium', () => {
  let harness: WidgetHarness;

  beforeAll(async () => {
    harness = await startWidgetHarness();
  });
  afterAll(() => harness?.close());

  it('renders the 3.1 document: its operations and its webhooks, without an error', async () => {
    const page = await harness.browser.newPage({ viewport: VIEWPORT });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${harness.apiUrl}/docs`);
    await page.locator('.opblock').first().waitFor();
    expect(await page.locator('.info .title').innerText()).toMatch(/Voice Agent API/);
    expect(await page.locator('.info .version-stamp').allInnerTexts()).toContain('OAS 3.1');
    expect(await page.locator('.opblock-summary-path').filter({ hasText: '/telephony/twilio/stream' }).count()).toBe(1);
    for (const webhook of ['call.created', 'tool-call']) {
      expect(
        await page
          .locator('.opblock-summary-path')
          .filter({ hasText: new RegExp(`^${webhook.replace('.', '\\.')}$`) })
          .count(),
      ).toBe(1);
    }
    expect(await page.locator('.errors-wrapper').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});
