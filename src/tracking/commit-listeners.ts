/**
 * Called once a track call's event has committed (not for an idempotent replay), before the call
 * answers. A listener that returns a promise holds the answer until it settles, and its failure
 * fails the call (the event stays committed): the test harness folds there, the service only wakes
 * its folding stage.
 */
export type CommitListener = () => void | Promise<void>;

/**
 * The listeners to the commits of one track batcher. Tracking derives nothing from its events;
 * whoever does (the folding stage) listens here, so tracking imports none of it.
 */
export class CommitListeners {
  private listeners: readonly CommitListener[] = [];

  /** Adds a listener; returns the function that removes it. */
  add(listener: CommitListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Calls every listener; a promise only when one of them returned one (the request path). */
  notify(): Promise<void> | undefined {
    let pending: Promise<void>[] | undefined;
    for (const listener of this.listeners) {
      const result = listener();
      if (result !== undefined) (pending ??= []).push(result);
    }
    return pending === undefined ? undefined : Promise.all(pending).then(() => undefined);
  }
}
