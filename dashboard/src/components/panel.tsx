/**
 * Every panel loads on its own (one request each, none waiting for another) and shows one of four
 * states: loading, error (with a retry), empty, or its content.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';

export type Load<T> =
  | { state: 'loading'; data?: T }
  | { state: 'error'; error: Error; data?: T }
  | { state: 'ready'; data: T };

/**
 * Runs `fetcher` now and whenever `deps` or `refresh` change. A refresh keeps the data on screen
 * while the new answer comes (no flicker every 10 s); a change of deps shows loading again.
 */
export function useLoad<T>(fetcher: (signal: AbortSignal) => Promise<T>, deps: unknown[], refresh = 0): Load<T> & { reload: () => void } {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [manual, setManual] = useState(0);
  const lastDeps = useRef<string>('');
  const key = JSON.stringify(deps);
  useEffect(() => {
    const controller = new AbortController();
    const depsChanged = lastDeps.current !== key;
    lastDeps.current = key;
    // New deps: show loading. A refresh keeps what is shown (an error keeps its last data too).
    setLoad((prev) => (depsChanged ? { state: 'loading' } : prev.state === 'error' ? { state: 'loading', data: prev.data } : prev));
    fetcher(controller.signal).then(
      (data) => !controller.signal.aborted && setLoad({ state: 'ready', data }),
      (error: Error) => !controller.signal.aborted && setLoad((prev) => ({ state: 'error', error, data: depsChanged ? undefined : prev.data })),
    );
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, refresh, manual]);
  const reload = useCallback(() => setManual((n) => n + 1), []);
  return { ...load, reload };
}

/**
 * Whether asking again can help: a network failure, a timeout, a busy or failing service. A
 * refusal (400, 401, 403, 404) answers the same way every time, so it offers no retry.
 */
export function mayRetry(error: Error): boolean {
  if (!(error instanceof ApiError)) return true;
  return error.status === 0 || error.status === 408 || error.status === 429 || error.status >= 500;
}

export function errorText(error: Error): string {
  if (error instanceof ApiError) return error.message;
  return 'Something went wrong while loading this.';
}

interface PanelProps<T> {
  title: string;
  load: Load<T> & { reload: () => void };
  /** True when the answer has nothing to show. */
  isEmpty?: (data: T) => boolean;
  empty?: string;
  children: (data: T) => ComponentChildren;
  actions?: ComponentChildren;
  class?: string;
  id?: string;
}

export function Panel<T>({ title, load, isEmpty, empty = 'Nothing in this range.', children, actions, class: className, id }: PanelProps<T>) {
  const headingId = `${id ?? title.toLowerCase().replace(/\W+/g, '-')}-title`;
  let body: ComponentChildren;
  if (load.state === 'loading' && load.data === undefined) {
    body = (
      <div class="state loading" role="status">
        Loading…
      </div>
    );
  } else if (load.state === 'error' && load.data === undefined) {
    body = (
      <div class="state error" role="alert">
        <p>{errorText(load.error)}</p>
        {mayRetry(load.error) && (
          <button type="button" onClick={load.reload}>
            Try again
          </button>
        )}
      </div>
    );
  } else {
    const data = load.data as T;
    body = isEmpty?.(data) ? <div class="state empty">{empty}</div> : children(data);
  }
  return (
    <section class={`panel ${className ?? ''}`} aria-labelledby={headingId} data-panel={id} data-state={load.state} aria-busy={load.state === 'loading'}>
      <header class="panel-head">
        <h2 id={headingId}>{title}</h2>
        {actions}
      </header>
      {load.state === 'error' && load.data !== undefined && (
        <p class="stale" role="alert">
          Could not refresh: {errorText(load.error)}
        </p>
      )}
      {body}
    </section>
  );
}
