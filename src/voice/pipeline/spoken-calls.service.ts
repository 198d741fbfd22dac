import { GoneException, Inject, Injectable, Logger } from '@nestjs/common';
import { AgentVersionsService } from '../../agent-versions/agent-versions.service';
import { ReplyLanguage } from '../../agents/voices';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { ConversationEnds } from '../../conversations/conversation-ends.service';
import { ConversationReplies } from '../../conversations/conversation-replies.service';
import { ConversationTalk } from '../../conversations/conversation-talk.service';
import { CallRecordings } from '../recording/call-recorder';
import { SPEECH_TO_TEXT, TEXT_TO_SPEECH } from '../speech-providers';
import { SpeechToText } from '../stt/speech-to-text';
import { TextToSpeech } from '../tts/text-to-speech';
import { VoiceActivity } from '../vad/fvad';
import { TurnDetector } from '../vad/turn-detector';
import { CallTransport, VoiceCall, VoiceCallContext, VoiceCalls } from '../voice-call';
import { CallSetup, VoicePipeline, VoiceServices } from './voice-pipeline';
import { AudioWorkQueue } from './audio-work';
import { VoiceClock } from './voice-clock';

/**
 * Opens each socket's spoken call: reads the agent's voice and language, opens the call's recording and a VAD
 * handle, and says the greeting on a conversation's first socket. `input` is `speech` when a speech-to-text
 * provider is configured, `text` when the browser is to recognise speech itself.
 */
@Injectable()
export class SpokenCalls extends VoiceCalls {
  readonly input: 'speech' | 'text';
  /** The calls' audio, worked through a slice at a time: one queue for the instance. */
  readonly audioWork = new AudioWorkQueue();
  private readonly services: VoiceServices;
  private readonly endOfTurnMs: number;

  constructor(
    talk: ConversationTalk,
    replies: ConversationReplies,
    ends: ConversationEnds,
    private readonly versions: AgentVersionsService,
    private readonly recordings: CallRecordings,
    private readonly clock: VoiceClock,
    @Inject(TEXT_TO_SPEECH) tts: TextToSpeech | null,
    @Inject(SPEECH_TO_TEXT) stt: SpeechToText | null,
    @InjectConfig() config: AppConfig,
  ) {
    super();
    this.input = stt ? 'speech' : 'text';
    this.endOfTurnMs = config.voice.endOfTurnMs;
    this.services = { talk, replies, ends, tts, stt, audioWork: this.audioWork, logger: new Logger('Voice') };
  }

  async open(context: VoiceCallContext, transport: CallTransport): Promise<VoiceCall> {
    return new VoicePipeline(context, transport, this.services, await this.setUp(context), (tick) => this.clock.subscribe(tick));
  }

  private async setUp({ access, recordingSampleRate }: VoiceCallContext): Promise<CallSetup> {
    const [speaker, view] = await Promise.all([this.versions.speakerOf(access.accountId, access.id), this.services.talk.view(access)]);
    if (!speaker) throw new GoneException('The agent of this conversation was deleted');
    if (view.status === 'ended') throw new GoneException('This conversation has ended');
    const [recorder, vad] = await Promise.all([
      this.recordings.open({ accountId: access.accountId, conversationId: access.id }, recordingSampleRate),
      VoiceActivity.create(),
    ]);
    const [first] = view.messages;
    const greeting = recorder.seconds === 0 && view.messages.length === 1 && first.speaker === 'agent' ? first.text : null;
    return {
      speaker: { voice: speaker.voice, language: speaker.language as ReplyLanguage },
      greeting,
      recorder,
      detector: new TurnDetector(vad, { endOfTurnMs: this.endOfTurnMs }),
      release: () => vad.free(),
    };
  }
}
