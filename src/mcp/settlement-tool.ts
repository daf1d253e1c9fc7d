/**
 * get_settlement: the chain's verdict on one record, or on one transaction, for an agent that
 * paid. The HTTP API lists settlements by filters (GET /settlements) or by record ids (POST
 * /records/settlements); a model asks about one payment it made, so this tool's route is its own,
 * reached only over MCP, and answers the same entries (settlementBody) with a sentence when none.
 */
import { ApiError } from '../http/errors.js';
import { defineRoute, type RouteDeps } from '../http/routes.js';
import { settlementBody } from '../settlements/routes.js';
import { settlementsOfRecords, settlementsOfTx } from '../settlements/repository.js';

export interface SettlementLookup {
  record_id?: string;
  tx_hash?: string;
}

type LookupDeps = Pick<RouteDeps, 'readEvents' | 'config'>;

const POLL = 'records are taken in within a poll (SETTLEMENT_POLL_MS) of reaching the event store';

/** Exactly one of record_id and tx_hash, or a validation error naming the argument. */
function oneOf(query: SettlementLookup): { recordId: string } | { txHash: string } {
  const { record_id: recordId, tx_hash: txHash } = query;
  if (recordId !== undefined && txHash !== undefined) {
    throw new ApiError('validation_failed', 'Query string is invalid: tx_hash cannot be given with record_id', [{ field: 'tx_hash', message: 'cannot be given with record_id: give one of them' }]);
  }
  if (recordId !== undefined) return { recordId };
  if (txHash !== undefined) return { txHash };
  throw new ApiError('validation_failed', 'Query string is invalid: record_id or tx_hash is required', [{ field: 'record_id', message: 'or tx_hash is required: give one of them' }]);
}

/** Why a record has no settlement: one look at the record itself (by id: the events' by_id projection). */
async function whyNoneForRecord(deps: LookupDeps, teamId: string, recordId: string): Promise<string> {
  const events = await deps.readEvents(teamId);
  const [row] = await events.query<{ tx_hash: string | null }>('SELECT tx_hash FROM events WHERE team_id = {team:String} AND id = {id:String} LIMIT 1', { team: teamId, id: recordId });
  if (!row) return `This team has no record "${recordId}".`;
  if (!row.tx_hash) return `Record "${recordId}" carries no transaction hash: there is nothing to check on chain.`;
  if (!deps.config.chains) return `Record "${recordId}" carries transaction hash ${row.tx_hash}, but no chain is configured (CHAIN_RPC_URLS): records are not checked.`;
  return `Record "${recordId}" carries transaction hash ${row.tx_hash} and is not taken in yet: ${POLL}. Ask again shortly.`;
}

function whyNoneForTx(deps: LookupDeps, txHash: string): string {
  if (!deps.config.chains) return `No settlement has transaction hash ${txHash}: no chain is configured (CHAIN_RPC_URLS), so records are not checked.`;
  return `No settlement of this team has transaction hash ${txHash}: no record of the team names it, or the records that do are not taken in yet (${POLL}).`;
}

/** The tool's route: not mounted over HTTP (a tool-only operation), but checked, scoped and answered as every route. */
export const getSettlementRoute = defineRoute<unknown, SettlementLookup>({
  method: 'post',
  path: '/mcp',
  operationId: 'mcpGetSettlement',
  summary: 'The settlement of a record, or the settlements of a transaction',
  tag: 'mcp',
  scope: 'read',
  query: 'settlement-lookup-query.json',
  responses: { 200: { description: 'The settlements found, and why there is none', schema: 'settlement-lookup.json' } },
  async handler({ query, team, deps }) {
    const which = oneOf(query);
    const rows = 'recordId' in which ? await settlementsOfRecords(deps.db, team.teamId, [which.recordId]) : await settlementsOfTx(deps.db, team.teamId, which.txHash);
    if (rows.length > 0) return { body: { data: rows.map(settlementBody), message: null } };
    const message = 'recordId' in which ? await whyNoneForRecord(deps, team.teamId, which.recordId) : whyNoneForTx(deps, which.txHash);
    return { body: { data: [], message } };
  },
});
