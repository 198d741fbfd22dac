import { HttpException, Logger } from '@nestjs/common';
import { ReplyLanguage } from '../../agents/voices';
import { APOLOGY } from '../../conversations/answering/answerer';
import { logProviderFailure } from '../../conversations/answering/failure-log';
import { ConversationEnds } from '../../conversations/conversation-ends.service';
import { ConversationReplies, Delivery } from '../../conversations/conversation-replies.service';
import { ConversationTalk } from '../../conversations/conversation-talk.service';
import { Resampler } from '../audio/resample';
import { CallRecorder } from '../recording/call-recorder';
import { SpeechToText } from '../stt/speech-to-text';
import { TextToSpeech } from '../tts/text-to-speech';
import { TurnDetector, TurnEvent } from '../vad/turn-detector';
import type { CallTransport, VoiceCall, VoiceCallContext } from '../voice-call';
import { FRAME_SAMPLES, VOICE_SAMPLE_RATE } from '../voice-format';
import { AgentVoice } from './agent-voice';
import { AudioIntake, AudioWorkQueue } from './audio-work';
import { SpokenReply } from './spoken-reply';
import { TurnTiming } from './turn-timing';
import { VisitorAudio } from './visitor-audio';

/** The agent's speech queued ahead of what plays, at most: synthesis waits beyond it. */
const MAX_QUEUED_FRAMES = (5 * VOICE_SAMPLE_RATE) / FRAME_SAMPLES;
/** Utterances waiting for the reply in progress, at most; one more is refused as a message would be (409). */
const MAX_WAITING_TURNS = 1;
const SILENCE = new Int16Array(FRAME_SAMPLES);

/** What every spoken call of the instance shares: the conversation's services and the providers. */
export interface VoiceServices {
  talk: ConversationTalk;
  replies: ConversationReplies;
  ends: ConversationEnds;
  tts: TextToSpeech | null;
  stt: SpeechToText | null;
  /** Where the calls' audio waits to be worked through, a slice at a time. */
  audioWork: AudioWorkQueue;
  logger: Logger;
}

/** What one call needs once it is set up (VoiceCalls.open reads the agent and opens the recording and the VAD). */
export interface CallSetup {
  speaker: { voice: string; language: ReplyLanguage };
  /** The greeting to say first: only on a conversation's first socket, before anything was said. */
  greeting: string | null;
  recorder: CallRecorder;
  detector: TurnDetector;
  /** Frees the VAD's handle. */
  release: () => void;
}

/**
 * Where the turn is: the visitor has the floor (`listening`), a reply is being produced (`answering`) or heard
 * (`speaking`), or the visitor cut it off (`interrupted`, until that reply is done).
 */
export type TurnState = 'listening' | 'answering' | 'speaking' | 'interrupted';

/**
 * One spoken conversation over one transport (contract sections 15 and 17: the browser's socket, a carrier's media
 * stream): the visitor's audio, queued as it arrives and worked through a slice at a time (AudioWorkQueue: a burst
 * never holds the event loop in one piece), is resampled and goes to the recording and the turn detector; an
 * utterance (or a text) becomes a message through the same path as section 10's, answered and spoken by
 * SpokenReply; the visitor's speech over the agent's interrupts it. The pipeline is the one owner of the turn's
 * state (TurnState): the reply and the agent's voice are told what happens, never asked. Each tick of the voice
 * clock moves the agent's voice on and writes 20 ms of both sides to the recording.
 */
export class VoicePipeline implements VoiceCall {
  private readonly voice: AgentVoice;
  private turn: TurnState = 'listening';
  /** The conversation ended elsewhere: nothing more is heard or answered (finish). */
  private finishing = false;
  private readonly visitor = new VisitorAudio();
  private readonly closing = new AbortController();
  /** The visitor's audio waiting to be resampled, recorded and heard. */
  private readonly intake: AudioIntake;
  private readonly resampler: Resampler;
  private droppedAudio = false;
  /** The visitor's audio not yet cut into 20 ms frames for the turn detector. */
  private readonly vadFrame = new Int16Array(FRAME_SAMPLES);
  private vadFill = 0;
  /** The reply being produced or spoken, if any. */
  private reply: SpokenReply | undefined;
  /** The turns, one after the other, the greeting first. */
  private turns: Promise<void> = Promise.resolve();
  private waitingTurns = 0;
  /** Of the utterance under way: whether the agent had the floor when it began, and whether it interrupted it. */
  private overAgent = false;
  private interruptedAgent = false;
  private utteranceStart: number | undefined;
  /** The visitor has said something on this socket (a greeting not yet said is then cut off at once). */
  private visitorSpoke = false;
  /**
   * The timing of the turn whose reply is being spoken, until its first frame is sent (then logged at debug level);
   * undefined for the greeting and the apology, which answer no turn.
   */
  private turnTiming: TurnTiming | undefined;
  private readonly stopTicking: () => void;

  constructor(
    private readonly context: VoiceCallContext,
    private readonly transport: CallTransport,
    private readonly services: VoiceServices,
    private readonly setup: CallSetup,
    subscribe: (tick: () => void) => () => void,
  ) {
    const sink = {
      playback: transport.playback,
      sendAudio: this.sendAudio,
      mark: (name: string) => transport.mark(name),
      clear: () => transport.clear(),
    };
    this.voice = new AgentVoice(sink, MAX_QUEUED_FRAMES);
    this.stopTicking = subscribe(this.tick);
    const rate = context.inputSampleRate ?? VOICE_SAMPLE_RATE;
    this.resampler = new Resampler(rate, VOICE_SAMPLE_RATE);
    this.intake = new AudioIntake(rate, services.audioWork, (pcm) => this.hearAudio(this.resampler.process(pcm)), this.broke);
  }

  begin(): void {
    const { greeting } = this.setup;
    // Said first, and cut off at once when the visitor has already said something (a text frame sent with `start`).
    if (greeting) this.queueTurn(() => this.sayGreeting(greeting));
  }

  audio(pcm: Int16Array): void {
    if (this.intake.push(pcm) || this.droppedAudio) return;
    // The instance is far behind: what comes is dropped until the audio waiting has been worked through. Said once.
    this.droppedAudio = true;
    this.services.logger.warn("The visitor's audio came faster than it was worked through: some was dropped");
  }

  /** The visitor's audio, at VOICE_SAMPLE_RATE: into the recording's timeline and, in 20 ms frames, the turn detector. */
  private hearAudio(pcm: Int16Array): void {
    this.visitor.push(pcm);
    let offset = 0;
    while (offset < pcm.length) {
      const take = Math.min(FRAME_SAMPLES - this.vadFill, pcm.length - offset);
      this.vadFrame.set(pcm.subarray(offset, offset + take), this.vadFill);
      this.vadFill += take;
      offset += take;
      if (this.vadFill === FRAME_SAMPLES) {
        this.vadFill = 0;
        for (const event of this.setup.detector.push(this.vadFrame)) this.onTurnEvent(event, pcm.length - offset);
      }
    }
  }

  text(text: string): void {
    // After the audio that came before it (where the VAD heard its speech begin).
    this.intake.after(() => this.takeText(text));
  }

  private takeText(text: string): void {
    if (this.finishing) return;
    this.visitorSpoke = true;
    this.interrupt();
    this.transport.send({ type: 'transcript', text, final: true });
    // Recognised in the browser, the utterance began where the VAD heard speech begin, before its text came.
    this.take(text, this.takeUtteranceStart());
  }

  async end(): Promise<void> {
    await new Promise<void>((resolve) => this.intake.after(resolve));
    this.interrupt();
    await this.turns;
    await this.services.ends.endNow(this.context.access.accountId, this.context.access.id);
    this.transport.send({ type: 'ended' });
    this.transport.close(1000, 'Conversation ended');
  }

  played(mark: string): void {
    this.voice.played(mark);
  }

  async finish(maxMs: number): Promise<void> {
    this.finishing = true;
    this.intake.cancel();
    const reply = this.reply;
    reply?.conclude();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      (reply?.spoken() ?? Promise.resolve()).then(() => this.voice.idle()),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs))),
    ]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    this.closing.abort();
    this.intake.cancel();
    this.reply?.interrupt();
    this.stopTicking();
    await this.turns;
    this.setup.release();
    await this.setup.recorder.close();
  }

  private readonly tick = (): void => {
    const agent = this.voice.tick() ?? SILENCE;
    if (this.reply) {
      this.reply.played(this.recordingSeconds());
      if (this.turn === 'answering' && this.voice.started) this.turn = 'speaking';
    }
    const visitor = this.visitor.take();
    this.setup.recorder.write(visitor, visitor.length === agent.length ? agent : padded(agent, visitor.length));
  };

  /** A frame of the agent's voice to the transport (false: backed up); the turn's first one logs its latency. */
  private readonly sendAudio = (frame: Int16Array): boolean => {
    if (!this.transport.sendAudio(frame)) return false;
    if (this.turnTiming) {
      this.services.logger.debug({ voiceTurn: this.turnTiming.firstAudio() }, 'Voice turn');
      this.turnTiming = undefined;
    }
    return true;
  };

  /** The visitor cut the agent off (or sent a text): the reply in progress, if any, stops and its audio is dropped. */
  private interrupt(): boolean {
    if (!this.reply || this.turn === 'listening' || this.turn === 'interrupted') return false;
    this.reply.interrupt();
    this.turn = 'interrupted';
    return true;
  }

  /** A turn event of the VAD frame that `samplesAfter` samples of the visitor's audio received since follow. */
  private onTurnEvent(event: TurnEvent, samplesAfter: number): void {
    switch (event.type) {
      case 'speech-start': {
        if (this.finishing) return;
        this.visitorSpoke = true;
        this.overAgent = this.turn !== 'listening';
        this.interruptedAgent = false;
        // Where the frame ends in the recording: what it holds, and the backlog not yet in it but for what follows.
        const frameEnd = this.recordingSeconds(this.visitor.backlog - samplesAfter);
        this.utteranceStart = Math.max(0, frameEnd - this.setup.detector.startDelayMs / 1000);
        break;
      }
      case 'barge-in':
        if (this.interrupt()) this.interruptedAgent = true;
        break;
      case 'utterance':
        // A short sound over the agent's voice ("mm", a cough) that did not interrupt it is not a turn.
        if (this.finishing || (this.overAgent && !this.interruptedAgent)) return;
        if (!this.services.stt) return;
        this.hear(event.audio, this.takeUtteranceStart(), TurnTiming.spoken(event.silenceMs));
        break;
    }
  }

  /** Transcribes an utterance and takes it as the visitor's message; a failed transcription gets the spoken apology. */
  private hear(audio: Int16Array, startSeconds: number | undefined, timing: TurnTiming): void {
    const language = this.setup.speaker.language;
    // Transcribed at once, answered in turn: the turn awaits it, which may be after it failed (hence the catch now).
    // Timed as it answers, not as the turn resumes (which may wait for the reply to an earlier turn).
    const heard = this.services.stt!.transcribe({ audio, language, signal: this.closing.signal });
    heard.then(() => timing.mark('heardMs')).catch(() => undefined);
    this.queueTurn(async () => {
      let text: string;
      try {
        text = (await heard).trim();
      } catch (error) {
        if (this.closing.signal.aborted) return;
        logProviderFailure(this.services.logger, error, 'The visitor was not heard; they got the apology');
        return void (await this.say(APOLOGY));
      }
      if (!text) return;
      this.transport.send({ type: 'transcript', text, final: true });
      await this.answer(text, startSeconds, timing);
    });
  }

  private take(text: string, startSeconds: number | undefined): void {
    const timing = TurnTiming.typed();
    this.queueTurn(() => this.answer(text, startSeconds, timing));
  }

  /** Runs turns one after the other (one reply at a time, as section 10); more than one waiting is refused. */
  private queueTurn(turn: () => Promise<void>): void {
    if (this.finishing) return;
    if (this.waitingTurns > MAX_WAITING_TURNS) {
      this.transport.send({ type: 'error', message: 'A reply to the previous message is still being produced.' });
      return;
    }
    this.waitingTurns++;
    this.turns = this.turns
      .then(() => (this.closing.signal.aborted || this.finishing ? undefined : turn()))
      .catch((error: unknown) => this.failed(error))
      .finally(() => this.waitingTurns--);
  }

  /** The visitor's message, accepted and answered aloud through ConversationReplies (one path with text messages). */
  private async answer(text: string, startSeconds: number | undefined, timing: TurnTiming): Promise<void> {
    const { access, authorization, address } = this.context;
    const turn = await this.services.talk.accept(access.id, authorization, text, address, () => undefined, startSeconds);
    timing.mark('acceptedMs');
    const reply = this.newReply(timing);
    // The reply is recorded with where its turn's time went, once its first frame was sent (contract section 19).
    const deliver = async (produced: string): Promise<Delivery> => ({ ...(await reply.deliver(produced)), latencyMs: timing.latency() });
    try {
      await this.services.replies.reply(turn, reply.piece, { signal: reply.signal, deliver, whileToolsRun: reply.interject });
    } finally {
      this.replied(reply);
    }
  }

  /** Says a text that is not a reply to a message (the greeting, the apology when the visitor was not heard). */
  private async say(text: string, interrupted = false): Promise<Delivery> {
    const reply = this.newReply();
    if (interrupted) this.interrupt();
    try {
      return await reply.say(text);
    } finally {
      this.replied(reply);
    }
  }

  /** The greeting, spoken: its transcript entry gets where it starts in the recording, and only what was heard of it if cut off. */
  private async sayGreeting(greeting: string): Promise<void> {
    const said = await this.say(greeting, this.visitorSpoke);
    const { accountId, id } = this.context.access;
    // Cut off before a frame of it played: where it was cut.
    await this.services.replies.recordGreeting(accountId, id, said, said.startSeconds ?? this.recordingSeconds());
  }

  /** A reply, timed when it answers a turn (`timing`). */
  private newReply(timing?: TurnTiming): SpokenReply {
    this.turnTiming = timing;
    this.reply = new SpokenReply({
      transport: this.transport,
      voice: this.voice,
      tts: this.services.tts,
      speaker: this.setup.speaker,
      mark: (stage) => timing?.mark(stage),
      logger: this.services.logger,
    });
    this.turn = 'answering';
    // A turn under way as the call closed (its message being accepted) says nothing: the clock that would play it has stopped.
    if (this.closing.signal.aborted) this.reply.interrupt();
    return this.reply;
  }

  /** A reply is done (heard, or cut off): the visitor has the floor. */
  private replied(reply: SpokenReply): void {
    if (this.reply !== reply) return;
    this.reply = undefined;
    this.turn = 'listening';
  }

  /** The visitor's audio could not be worked through (a fault of the service's): the socket closes with 1011. */
  private readonly broke = (error: unknown): void => {
    this.services.logger.error({ error: { name: (error as Error)?.name } }, "A spoken call's audio failed");
    this.transport.send({ type: 'error', message: 'The call failed; please reconnect.' });
    this.transport.close(1011, 'Internal error');
  };

  /** A refused message maps to the socket as section 15 says; anything else is logged without the visitor's data. */
  private failed(error: unknown): void {
    if (error instanceof HttpException) {
      const status = error.getStatus();
      if (status === 404) return this.transport.close(4404, 'Unknown conversation');
      if (status === 410) {
        this.transport.send({ type: 'ended' });
        return this.transport.close(1000, 'Conversation ended');
      }
      return this.transport.send({ type: 'error', message: error.message });
    }
    this.services.logger.error({ error: { name: (error as Error)?.name } }, 'A spoken turn failed');
    this.transport.send({ type: 'error', message: 'Something went wrong; please say that again.' });
  }

  /** Where the visitor's latest utterance began in the recording (now, if none was heard since the last), once. */
  private takeUtteranceStart(): number {
    const start = this.utteranceStart ?? this.recordingSeconds();
    this.utteranceStart = undefined;
    return start;
  }

  /** The recording's clock now, in seconds, or `aheadSamples` of the visitor's audio later. */
  private recordingSeconds(aheadSamples = 0): number {
    return Math.round((this.setup.recorder.seconds + aheadSamples / VOICE_SAMPLE_RATE) * 1000) / 1000;
  }
}

/** `pcm` followed by silence up to `length` samples (the agent's side of a stretch where the visitor's backlog was taken). */
function padded(pcm: Int16Array, length: number): Int16Array {
  const out = new Int16Array(length);
  out.set(pcm);
  return out;
}
