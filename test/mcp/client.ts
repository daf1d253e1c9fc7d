/** Talking to /mcp in tests: the SDK's own client for single calls, and raw JSON-RPC batches over fetch. */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Team } from '../helpers/common.js';
import { api, errorOf } from '../helpers/context.js';
export type ToolError = { error: { code: string; message: string; details?: { field: string; message: string }[]; requestId: string } };

export const ENDPOINT = 'https://api.example.com/v1/search';

export async function connect(url: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'spendscope-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }));
  return client;
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** A tool's answer: not an error, with the same JSON as text and as structured content. */
export function answer<T = Record<string, any>>(result: CallToolResult): T {
  expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
  const text = result.content.find((c) => c.type === 'text') as { text: string } | undefined;
  expect(JSON.parse(text!.text)).to.deep.equal(result.structuredContent);
  return result.structuredContent as T;
}

/** A tool error: the API's error shape, as structured content and as text. */
export function toolError(result: CallToolResult): ToolError['error'] {
  expect(result.isError, JSON.stringify(result.content)).to.equal(true);
  const text = (result.content.find((c) => c.type === 'text') as { text: string }).text;
  expect(JSON.parse(text)).to.deep.equal(result.structuredContent);
  return errorOf(result.structuredContent) as ToolError['error'];
}

export async function registerAgent(team: Team, id: string): Promise<void> {
  await api().post('/api/v1/agents').set(...team.auth).send({ external_id: id, name: id }).expect(201);
}

/** What one POST /mcp of a batch answered: its status and headers, and each call's result by JSON-RPC id. */
export interface BatchAnswer {
  status: number;
  headers: Headers;
  results: Map<number, CallToolResult>;
  /** The body of an answer other than 200 (an error shape). */
  body?: unknown;
}

/** Sends the calls as one JSON-RPC batch (ids 1, 2, ...) and reads every answer off the event stream. */
export async function sendBatch(url: string, apiKey: string, calls: { name: string; arguments: Record<string, unknown> }[]): Promise<BatchAnswer> {
  const body = calls.map((params, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params }));
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2025-06-18',
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const results = new Map<number, CallToolResult>();
  if (res.status === 200) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const message = JSON.parse(line.slice('data: '.length)) as { id: number; result?: CallToolResult; error?: unknown };
      expect(message.error, JSON.stringify(message)).to.equal(undefined);
      results.set(message.id, message.result!);
    }
  }
  return { status: res.status, headers: res.headers, results, ...(res.status === 200 ? {} : { body: JSON.parse(text) as unknown }) };
}
