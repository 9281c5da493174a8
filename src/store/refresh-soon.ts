/**
 * Coalesced rebuilds of the store's cached /metrics text. Pollers call the returned function after every change;
 * however many changes arrive in one turn of the event loop, the text is rebuilt once, on the next turn (off the
 * poll's own stack). A failed rebuild is logged; the previous text stays served.
 */
import type { Logger } from '../log.js';

export function refreshSoon(store: { refresh(): Promise<void> }, log: Logger): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      store.refresh().catch((err: unknown) => log.error({ err }, 'rebuilding /metrics text failed'));
    });
  };
}
