/** The conversation kept for a reload of the page (this tab only, sessionStorage). */
import { loadConversation, Message, RequestError, Session, UNREACHABLE } from './service';

export interface Restored {
  session: Session;
  messages: Message[];
}

export class SavedSession {
  constructor(private readonly key: string) {}

  read(): Session | null {
    try {
      const saved = JSON.parse(window.sessionStorage.getItem(this.key) || 'null') as Partial<Session> | null;
      return saved && typeof saved.conversationId === 'string' && typeof saved.token === 'string'
        ? { conversationId: saved.conversationId, token: saved.token }
        : null;
    } catch {
      return null; // storage disabled or unreadable: nothing to restore
    }
  }

  save(session: Session): void {
    try {
      window.sessionStorage.setItem(this.key, JSON.stringify(session));
    } catch {
      // storage disabled: no restore after a reload
    }
  }

  forget(): void {
    try {
      window.sessionStorage.removeItem(this.key);
    } catch {
      // nothing stored
    }
  }

  /** The saved conversation if it is still going on; forgotten when it has ended, or is gone. */
  async restorable(base: string): Promise<Restored | null> {
    const session = this.read();
    if (!session) return null;
    try {
      const conversation = await loadConversation(base, session);
      if (conversation.status === 'active') return { session, messages: conversation.messages };
      this.forget();
    } catch (error) {
      // 404: gone. UNREACHABLE as well: to a page on another origin the browser hides a 404 (its preflight has no
      // CORS answer), so it cannot be told from a network failure. Other answers (429, 5xx) pass: keep it for later.
      const status = error instanceof RequestError ? error.status : UNREACHABLE;
      if (status === 404 || status === UNREACHABLE) this.forget();
    }
    return null;
  }
}
