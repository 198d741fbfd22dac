import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { FAKE_SPEECH_KEY, FakeSpeechProviders, startFakeSpeechProviders } from '../fake-speech-providers';
import { eventually, TestAccount } from '../helpers';
import { createShopAgent, fakeMicrophone, KNOWLEDGE, screenshotPath, startWidgetHarness, widget, WidgetHarness } from './harness';
import { countPlayedAudio, playedAudio, savedConversation } from './page-scripts';

/**
 * A spoken call in Chromium (contract section 15) against the real service: Chromium's fake microphone plays a
 * recorded question once, the widget streams it over the voice socket, the service hears it (speech-to-text from a
 * local fake that answers the question asked), answers from the knowledge base and speaks with the built-in voice;
 * the page plays the agent's audio frames and shows the reply; End; the call then has a stereo recording.
 */
const QUESTION_WAV = path.join(__dirname, '..', 'fixtures', 'voice', 'en-question.wav');
/** The README's screenshot (screenshotPath). */
const SCREENSHOT = screenshotPath('widget-voice-screenshot.png');
const GREETING = 'Namaste! Ask me about delivery or returns.';
const QUESTION = 'How long does delivery take?';

describe("the widget's spoken call over the voice socket, in Chromium", () => {
  let providers: FakeSpeechProviders;
  let harness: WidgetHarness;
  let owner: TestAccount;
  let siteKey: string;

  beforeAll(async () => {
    providers = await startFakeSpeechProviders();
    providers.setTranscript(QUESTION);
    const voice = {
      ...loadConfig({}).voice,
      sttProvider: 'openai' as const,
      openAiStt: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'whisper-1' },
    };
    harness = await startWidgetHarness({ voice }, fakeMicrophone(QUESTION_WAV));
    owner = await harness.context.createAccount({ name: 'Acme Saree House' });
    const agent = await createShopAgent(harness.context, owner);
    ({ siteKey } = await harness.createSite(owner, 'call', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `localhost:${harness.hostPort}`,
      widgetLabel: 'Talk to Asha',
      widgetGreeting: GREETING,
      widgetMode: 'voice',
      widgetAskName: false,
      widgetAskPhone: false,
    }));
  });

  afterAll(async () => {
    await harness?.close();
    await providers?.close();
  });

  it('streams the microphone, shows what was heard and the reply, plays the agent, ends; the call has its recording', async () => {
    const { page, errors } = await harness.open('/site/call', { init: { script: countPlayedAudio } });
    const parts = widget(page);
    await parts.launcher.click();
    await parts.start.click();
    await parts.listening.waitFor();
    await parts.announcer.filter({ hasText: KNOWLEDGE.delivery }).waitFor({ state: 'attached', timeout: 30_000 });
    expect(await page.locator('voice-agent-widget .messages .message .text').allTextContents()).toEqual([
      GREETING,
      QUESTION,
      KNOWLEDGE.delivery,
    ]);
    const { conversationId } = (await savedConversation(page, siteKey))!;
    // The call just answered: the visitor's words and the reply in the transcript, Mute and End below.
    expect(await parts.mute.isVisible()).toBe(true);
    expect(await parts.end.isVisible()).toBe(true);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: SCREENSHOT });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    const played = await playedAudio(page);
    expect(played.frames).toBeGreaterThan(50); // 20 ms frames: the greeting and a part of the reply, at least
    expect(played.seconds).toBeGreaterThan(1);

    await parts.end.click();
    await parts.ended.filter({ hasText: 'The call has ended. Thank you!' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();

    const call = await eventually(async () => {
      const found = (await harness.context.as(owner).get(`/calls/${conversationId}`).expect(200)).body;
      return found.hasRecording ? found : undefined;
    }, 30_000);
    const [greeting, ...turns] = call.transcript.map((entry: { text: string }) => entry.text);
    // The fake microphone's question starts 0.3 s into the capture, over the greeting, which it cuts off: the entry
    // keeps the words of it that had played (all of it when not one word had, ConversationReplies.recordGreeting),
    // however far the greeting had got on this machine when the visitor was heard.
    expect(greeting).toBeTruthy();
    const words = greeting.split(' ');
    expect(GREETING.split(' ').slice(0, words.length)).toEqual(words);
    expect(turns).toEqual([QUESTION, KNOWLEDGE.delivery]);
  });
});
