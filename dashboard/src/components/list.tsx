/**
 * A cursor-paginated list: the first page, then "Load more" appends the next. Refreshing (every
 * 10 s) reloads only the first page, so new items appear at the top without losing one's place.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Page, type Query } from '../api';
import { Panel, useLoad, errorText } from './panel';

export function PagedList<T>({
  id,
  title,
  path,
  query,
  tick,
  empty,
  children,
  actions,
  version = 0,
}: {
  /** Bumped after a change made here: reloads from the first page. */
  version?: number;
  id: string;
  title: string;
  path: string;
  query: Query;
  tick: number;
  empty: string;
  children: (items: T[]) => ComponentChildren;
  actions?: ComponentChildren;
}) {
  const first = useLoad((signal) => api<Page<T>>('GET', path, { query: { ...query, limit: 50 }, signal }), [path, query, version], tick);
  const [more, setMore] = useState<{ items: T[]; cursor: string | null; error?: string; busy?: boolean }>({ items: [], cursor: null });
  const key = JSON.stringify([path, query, version]);
  useEffect(() => setMore({ items: [], cursor: null }), [key]);
  const cursor = more.items.length ? more.cursor : (first.data?.next_cursor ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    setMore((m) => ({ ...m, busy: true, error: undefined }));
    try {
      const page = await api<Page<T>>('GET', path, { query: { ...query, limit: 50, cursor } });
      setMore((m) => ({ items: [...m.items, ...page.data], cursor: page.next_cursor }));
    } catch (err) {
      setMore((m) => ({ ...m, busy: false, error: errorText(err as Error) }));
    }
  };
  return (
    <Panel id={id} title={title} load={first} isEmpty={(page) => page.data.length === 0} empty={empty} actions={actions}>
      {(page) => (
        <>
          {children([...page.data, ...more.items])}
          {cursor && <LoadMore onClick={loadMore} busy={more.busy} error={more.error} />}
        </>
      )}
    </Panel>
  );
}

/** The button under a list that asks for its next page, with that request's error beside it. */
export function LoadMore({ onClick, busy, error }: { onClick: () => void; busy?: boolean | undefined; error?: string | undefined }) {
  return (
    <p class="more">
      <button type="button" onClick={onClick} disabled={busy}>
        {busy ? 'Loading…' : 'Load more'}
      </button>
      {error && (
        <span class="field-error" role="alert">
          {' '}
          {error}
        </span>
      )}
    </p>
  );
}
