/** What records are worth, by id: the dashboard flags the unvalued ones beside the SDK's records, which keep their shape. */
import { defineRoute } from '../http/routes.js';

interface ValueRow {
  id: string;
  value: string | null;
  currency: string;
  valuation: string;
}

export const recordValuesRoute = defineRoute<{ ids: string[] }>({
  method: 'post',
  path: '/records/values',
  operationId: 'recordValues',
  summary: 'The values of records, by id',
  description:
    "Each record's value in the team's currency as valued at its acknowledgement, and the rate used ([Rates](rates.md)); " +
    '`value` null: unvalued, counted in no total in value. The SDK routes under /audit give records exactly as sent; this ' +
    'answers what they are worth. Up to 500 ids; unknown ids are left out. Scope `read`.',
  tag: 'rates',
  scope: 'read',
  body: 'record-values-query.json',
  bodyExample: { ids: ['rec-1', 'rec-2'] },
  responses: {
    200: {
      description: 'The values of the records found',
      schema: 'record-values.json',
      example: {
        data: [
          {
            id: 'rec-1',
            value: '10.8',
            currency: 'USD',
            valuation: {
              rate: { asset: 'EURC', value: '1', currency: 'EUR', valid_from: '1970-01-01T00:00:00.000Z', source: 'built-in' },
              conversion: { asset: 'EUR', value: '1.08', currency: 'USD', valid_from: '2026-12-01T00:00:00.000Z', source: 'team' },
            },
          },
          { id: 'rec-2', value: null, currency: 'USD', valuation: null },
        ],
      },
    },
  },
  async handler({ body, team, deps }) {
    const events = await deps.readEvents(team.teamId);
    const rows = await events.query<ValueRow>(
      `SELECT id, toString(value) AS value, toString(currency) AS currency, valuation
         FROM events WHERE team_id = {team:String} AND id IN {ids:Array(String)}
        ORDER BY id LIMIT 1 BY id`,
      { team: team.teamId, ids: [...new Set(body.ids)] },
    );
    const data = rows.map((r) => ({ id: r.id, value: r.value, currency: r.currency, valuation: r.valuation ? (JSON.parse(r.valuation) as unknown) : null }));
    return { body: { data } };
  },
});
