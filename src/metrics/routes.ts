import type { RequestHandler } from 'express';
import { definePublicRoute } from '../http/routes.js';
import type { Metrics } from './metrics.js';

/** Counts every answer by route pattern (not path: ids would make a series per resource). */
export function countRequests(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      metrics.httpRequests.inc({ route, method: req.method, status: String(res.statusCode) });
    });
    next();
  };
}

export const metricsRoute = definePublicRoute({
  method: 'get',
  path: '/metrics',
  public: true,
  prefixes: [''],
  operationId: 'metrics',
  summary: 'Prometheus metrics (text exposition format)',
  description:
    'Requests, ingest records and acknowledgement latency, the ingest backlog, the loader\'s blocks and failures, ' +
    'process figures. No key, like /healthz: it carries no team data. docs/operations.md lists every series.',
  tag: 'operations',
  responses: { 200: { description: 'The series, in the Prometheus text format' } },
  async handler({ deps }) {
    const content = await deps.metrics.registry.metrics();
    return { body: undefined, text: { contentType: deps.metrics.registry.contentType, content } };
  },
});
