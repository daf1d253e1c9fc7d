import { networkName } from '../networks';

/** A network by name, its CAIP-2 id beside it (muted) and in the tooltip; an unknown id as itself. */
export function Network({ id }: { id: string }) {
  const name = networkName(id);
  if (!name) return <span title={id}>{id || 'no network'}</span>;
  return (
    <span class="network" title={id} data-network={id}>
      {name} <span class="muted network-id">{id}</span>
    </span>
  );
}
